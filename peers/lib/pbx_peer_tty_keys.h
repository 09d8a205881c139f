/*
 * pbx_peer_tty_keys.h: ttyd's reading of terminal input toward a showing
 * prompt, as a terminal's own parser would read it (docs/HOST.md, "The
 * job's terminal"; docs/SECURITY.md section 6).
 *
 * A terminal's input carries more than keys: mouse reports, focus
 * reports, replies to queries (DECRQM, device attributes), pasted text
 * and function keys arrive as escape sequences whose bytes may be 'y' or
 * 'n'. A program can turn those on before it asks, so only a key that is
 * alone in the ground state answers; every byte of every sequence is
 * dropped whole. Pure logic, no I/O.
 */
#ifndef PBX_PEER_TTY_KEYS_H
#define PBX_PEER_TTY_KEYS_H

#include <stddef.h>
#include <stdint.h>

/**
 * pbx_peer_tty_keys is the parser's state, caller-allocated. Zeroed (or
 * pbx_peer_tty_keys_reset) it is in the ground state. Every field is
 * private to pbx_peer_tty_keys.c.
 */
typedef struct {
    uint8_t state;   /* one of the parser's states (pbx_peer_tty_keys.c) */
    uint8_t left;    /* mouse report bytes still to drop */
    uint8_t utf8;    /* UTF-8 continuation bytes still expected */
    uint8_t lead;    /* the UTF-8 lead byte being continued */
    uint8_t csi_any; /* CSI had a byte before its final: 1 digits, 3 other */
    uint16_t num;    /* CSI's digits as a number, saturated at 1000 */
} pbx_peer_tty_keys;

/**
 * pbx_peer_tty_keys_reset puts *k in the ground state (before a prompt is
 * drawn: nothing read before it continues into it).
 */
void pbx_peer_tty_keys_reset(pbx_peer_tty_keys *k);

/**
 * pbx_peer_tty_keys_feed reads one input byte ch. It returns
 * PBX_IPC_ANSWER_APPROVE for 'y' or 'Y' and PBX_IPC_ANSWER_DENY for 'n' or
 * 'N' only when that byte is a lone key in the ground state; 0 for every
 * other byte and for every byte of an escape sequence (ESC x, CSI with
 * parameters and intermediates to a final byte 0x40-0x7E, SS3, OSC, DCS,
 * SOS, PM and APC strings to ST or BEL, a bracketed paste
 * (CSI 200 ~ to CSI 201 ~) whole, X10 mouse reports CSI M and three
 * bytes, highlight reports CSI t and CSI T, their 8-bit C1 forms raw or
 * UTF-8 encoded). CAN and SUB end any sequence but a paste or a mouse
 * report; ESC then a key leaves any control string, so a person can
 * always reach the ground state.
 */
uint8_t pbx_peer_tty_keys_feed(pbx_peer_tty_keys *k, uint8_t ch);

/**
 * pbx_peer_tty_keys_scan feeds buf[0..len) to *k up to the first answer,
 * which it returns (0: none); *used is set to the bytes read (the answer
 * byte included). The state carries over to the next call, so a sequence
 * split between two reads is still dropped whole.
 */
uint8_t pbx_peer_tty_keys_scan(pbx_peer_tty_keys *k, const uint8_t *buf,
                               size_t len, size_t *used);

#endif
