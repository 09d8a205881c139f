/*
 * pbx_peer_tty_keys.c: terminal input read as a terminal's own parser
 * reads it, so that only a lone key answers a prompt
 * (pbx_peer_tty_keys.h). The states follow ECMA-48's structure: ground,
 * after ESC, ESC with intermediates, CSI, SS3, a control string (OSC,
 * DCS, SOS, PM, APC) and ESC inside it, and the bytes of a legacy mouse
 * report, which carry raw coordinates and no final byte of their own.
 */
#include "peers/lib/pbx_peer_tty_keys.h"

#include "ipc/pbx_ipc.h"

#include <stdbool.h>

enum {
    TK_GROUND = 0,
    TK_ESC,
    TK_ESC_INT,
    TK_CSI,
    TK_SS3,
    TK_STR,
    TK_STR_ESC,
    TK_MOUSE,
    TK_PASTE,
};

#define TK_ESC_BYTE 0x1BU
#define TK_CAN      0x18U
#define TK_SUB      0x1AU
#define TK_BEL      0x07U

void pbx_peer_tty_keys_reset(pbx_peer_tty_keys *k)
{
    k->state = TK_GROUND;
    k->left = 0U;
    k->utf8 = 0U;
    k->lead = 0U;
    k->csi_any = 0U;
    k->num = 0U;
}

/* A C1 control (0x80-0x9F, raw or UTF-8 encoded) in the ground state:
 * the introducers start their sequence, every other one is dropped. */
static void tk_c1(pbx_peer_tty_keys *k, uint8_t c)
{
    if (c == 0x9BU) {
        k->state = TK_CSI;
        k->csi_any = 0U;
        k->num = 0U;
    } else if (c == 0x8FU) {
        k->state = TK_SS3;
    } else if (c == 0x90U || c == 0x9DU || c == 0x98U || c == 0x9EU ||
               c == 0x9FU) {
        k->state = TK_STR;
    }
}

/* The byte after ESC: an introducer starts its sequence, an intermediate
 * waits for a final byte, anything else ends the (dropped) sequence. */
static void tk_esc(pbx_peer_tty_keys *k, uint8_t c)
{
    if (c == TK_ESC_BYTE) {
        return; /* ESC ESC: still one escape pending */
    }
    if (c < 0x20U && c != TK_CAN && c != TK_SUB) {
        return; /* a C0 control inside a sequence is executed, not data */
    }
    if (c == (uint8_t)'[') {
        k->state = TK_CSI;
        k->csi_any = 0U;
        k->num = 0U;
    } else if (c == (uint8_t)'O') {
        k->state = TK_SS3;
    } else if (c == (uint8_t)']' || c == (uint8_t)'P' || c == (uint8_t)'X' ||
               c == (uint8_t)'^' || c == (uint8_t)'_') {
        k->state = TK_STR;
    } else if (c >= 0x20U && c <= 0x2FU) {
        k->state = TK_ESC_INT;
    } else {
        k->state = TK_GROUND;
    }
}

/* A CSI's parameter, intermediate or final byte. A final M, t or T with
 * nothing before it is a legacy mouse report whose raw bytes follow. */
static void tk_csi(pbx_peer_tty_keys *k, uint8_t c)
{
    if (c >= 0x20U && c <= 0x3FU) {
        bool digit = c >= (uint8_t)'0' && c <= (uint8_t)'9';
        k->csi_any |= digit ? 1U : 3U;
        if (digit && k->num < 1000U) {
            k->num = (uint16_t)(k->num * 10U + (uint16_t)(c - (uint8_t)'0'));
        }
        return;
    }
    if (c < 0x40U || c > 0x7EU) {
        return; /* controls and bytes above 0x7E are ignored inside */
    }
    k->state = TK_GROUND;
    if (c == (uint8_t)'~' && k->csi_any == 1U && k->num == 200U) {
        k->state = TK_PASTE; /* bracketed paste: dropped to its end */
        k->left = 0U;
        return;
    }
    if (k->csi_any != 0U) {
        return;
    }
    if (c == (uint8_t)'M') {
        k->left = 3U;
    } else if (c == (uint8_t)'t') {
        k->left = 2U;
    } else if (c == (uint8_t)'T') {
        k->left = 6U;
    }
    if (k->left != 0U) {
        k->state = TK_MOUSE;
        k->utf8 = 0U;
    }
}

/* One byte of a mouse report: its characters are counted, a two-byte
 * UTF-8 coordinate (mode 1005) as one. Returns true when the byte does
 * not belong to the report (a lead byte's expected continuation never
 * came) and is to be read again in the ground state. */
static bool tk_mouse(pbx_peer_tty_keys *k, uint8_t c)
{
    if (k->utf8 != 0U) {
        k->utf8 = 0U;
        if (c >= 0x80U && c <= 0xBFU) {
            k->state = k->left == 0U ? TK_GROUND : TK_MOUSE;
            return false;
        }
        if (k->left == 0U) {
            k->state = TK_GROUND;
            return true;
        }
    }
    k->left--;
    if (c >= 0xC2U && c <= 0xDFU) {
        k->utf8 = 1U;
    } else if (k->left == 0U) {
        k->state = TK_GROUND;
    }
    return false;
}

/* A pasted byte: dropped, and the end marker ESC [ 2 0 1 ~ is matched
 * byte by byte (left counts the bytes matched so far). */
static void tk_paste(pbx_peer_tty_keys *k, uint8_t c)
{
    static const uint8_t end[] = {0x1BU, '[', '2', '0', '1', '~'};
    if (c == end[k->left]) {
        k->left++;
    } else {
        k->left = c == end[0] ? 1U : 0U;
    }
    if (k->left == (uint8_t)sizeof(end)) {
        k->left = 0U;
        k->state = TK_GROUND;
    }
}

/* A control string's byte: BEL or ESC \ ends it; ESC and another byte
 * abandons it and starts that escape sequence. */
static void tk_str(pbx_peer_tty_keys *k, uint8_t c)
{
    if (k->state == TK_STR) {
        if (c == TK_BEL) {
            k->state = TK_GROUND;
        } else if (c == TK_ESC_BYTE) {
            k->state = TK_STR_ESC;
        }
        return;
    }
    if (c == (uint8_t)'\\') {
        k->state = TK_GROUND;
        return;
    }
    k->state = TK_ESC;
    tk_esc(k, c);
}

/* The ground state: UTF-8 is followed so that a continuation byte is
 * never taken for a C1 control, and a lone y/Y/n/N answers. */
static uint8_t tk_ground(pbx_peer_tty_keys *k, uint8_t c)
{
    if (k->utf8 != 0U && c >= 0x80U && c <= 0xBFU) {
        bool c1 = k->lead == 0xC2U && c <= 0x9FU;
        k->utf8--;
        k->lead = 0U;
        if (c1) {
            tk_c1(k, c);
        }
        return 0U;
    }
    k->utf8 = 0U;
    k->lead = 0U;
    if (c == TK_ESC_BYTE) {
        k->state = TK_ESC;
    } else if (c >= 0x80U && c <= 0x9FU) {
        tk_c1(k, c);
    } else if (c >= 0xC2U && c <= 0xF4U) {
        k->utf8 = c <= 0xDFU ? 1U : (c <= 0xEFU ? 2U : 3U);
        k->lead = c;
    } else if (c == (uint8_t)'y' || c == (uint8_t)'Y') {
        return PBX_IPC_ANSWER_APPROVE;
    } else if (c == (uint8_t)'n' || c == (uint8_t)'N') {
        return PBX_IPC_ANSWER_DENY;
    }
    return 0U;
}

uint8_t pbx_peer_tty_keys_scan(pbx_peer_tty_keys *k, const uint8_t *buf,
                               size_t len, size_t *used)
{
    for (size_t i = 0; i < len; i++) {
        uint8_t a = pbx_peer_tty_keys_feed(k, buf[i]);
        if (a != 0U) {
            *used = i + 1U;
            return a;
        }
    }
    *used = len;
    return 0U;
}

uint8_t pbx_peer_tty_keys_feed(pbx_peer_tty_keys *k, uint8_t c)
{
    if ((c == TK_CAN || c == TK_SUB) && k->state != TK_MOUSE &&
        k->state != TK_PASTE) {
        pbx_peer_tty_keys_reset(k); /* CAN and SUB end any sequence */
        return 0U;
    }
    switch (k->state) {
    case TK_ESC:
        tk_esc(k, c);
        return 0U;
    case TK_ESC_INT:
        if (c == TK_ESC_BYTE) {
            k->state = TK_ESC;
        } else if (c >= 0x30U && c <= 0x7EU) {
            k->state = TK_GROUND;
        }
        return 0U;
    case TK_CSI:
        if (c == TK_ESC_BYTE) {
            k->state = TK_ESC;
            return 0U;
        }
        tk_csi(k, c);
        return 0U;
    case TK_SS3:
        if (c == TK_ESC_BYTE) {
            k->state = TK_ESC;
        } else if (c >= 0x40U && c <= 0x7EU) {
            k->state = TK_GROUND; /* parameters (0x20-0x3F) may precede */
        }
        return 0U;
    case TK_STR:
    case TK_STR_ESC:
        tk_str(k, c);
        return 0U;
    case TK_PASTE:
        tk_paste(k, c);
        return 0U;
    case TK_MOUSE:
        return tk_mouse(k, c) ? tk_ground(k, c) : 0U;
    default:
        return tk_ground(k, c);
    }
}
