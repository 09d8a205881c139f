/*
 * portcheck.c: the port smoke executable, built as the same freestanding
 * ELF as powerboxd but with this small driver in place of the runtime. It
 * exercises every port effect for real so that tests/port can check the
 * port from outside, through real sockets and /proc, before the runtime
 * exists.
 *
 * Startup slots: 3 PBX1 memfd, 4 supervisor (SOCK_SEQPACKET), 5 notify
 * route (SOCK_DGRAM), 6 peer route (SOCK_SEQPACKET). argv[1] names the
 * public endpoint. Reserved destinations: PC_RESV_FIRST.. (four slots).
 * Requests are one opcode byte and one argument byte; every reply is
 * PC_REPLY_BYTES of little-endian u32 words, the first being a pbx_err.
 */
#include "powerboxd/port/pbx_port.h"

/** Startup slot numbers handed over by the creator. */
#define PC_SLOT_PBX1 3
/** The supervisor: readiness and asynchronous reports go here. */
#define PC_SLOT_SUPERVISOR 4
/** The authority-free notify route. */
#define PC_SLOT_NOTIFY 5
/** The peer route used for synchronous calls. */
#define PC_SLOT_PEER 6
/** The reservable range and the reservations made at startup. */
#define PC_SLOT_MIN 200
/** Last reservable slot. */
#define PC_SLOT_MAX 263
/** First of the startup reservations. */
#define PC_RESV_FIRST 200
/** Number of startup reservations. */
#define PC_RESV_COUNT 4U
/** PBX1 smoke layout: magic, version u32, arena bytes u64. */
#define PC_PBX1_BYTES 16U
/** Reply length: eight u32 words. */
#define PC_REPLY_BYTES 32U
/** Receive buffer; longer messages are truncated and refused. */
#define PC_MSG_BYTES 64U
/** Bound on the events one run handles before it stops. */
#define PC_EVENTS_MAX 4000000U

/** Distinct exit statuses, one per refused startup step. */
enum pc_status {
    PC_EXIT_OK = 0,
    PC_EXIT_PBX1_MISSING = 10,
    PC_EXIT_PBX1_UNSEALED = 11,
    PC_EXIT_PBX1_KIND = 12,
    PC_EXIT_PBX1_MALFORMED = 13,
    PC_EXIT_ARENA = 14,
    PC_EXIT_ENDPOINT = 15,
    PC_EXIT_RESERVE = 16,
    PC_EXIT_READY = 17,
    PC_EXIT_EVENTS = 18,
    PC_EXIT_WAIT = 19,
    PC_EXIT_INIT = 20,
    /** The hard RLIMIT_NOFILE is below PC_SLOT_MAX + 1. */
    PC_EXIT_NOFILE = 21
};

/** The driver's whole state, in static storage (no allocation). */
struct pc_state {
    /** The port context. */
    pbx_port_ctx port;
    /** A wake held back by notify backpressure. */
    uint32_t wake_pending;
    /** Receive buffer. */
    uint8_t msg[PC_MSG_BYTES];
    /** Reply buffer. */
    uint8_t reply[PC_REPLY_BYTES];
};

static struct pc_state pc;

/* Writes the reply words and sends them, optionally with a capability. */
static void pc_reply(int32_t to, const uint32_t *words, uint32_t n, int32_t cap)
{
    pbx_mem_set(pc.reply, 0, sizeof(pc.reply));
    for (uint32_t i = 0; i < n && i < PC_REPLY_BYTES / 4U; i++) {
        pbx_le_put32(pc.reply + (size_t)4U * i, words[i]);
    }
    (void)pbx_port_send(&pc.port, to, pc.reply, PC_REPLY_BYTES, cap);
}

/* Maps a PBX1 refusal to its exit status. */
static uint8_t pc_pbx1_status(pbx_err err)
{
    switch (err) {
    case PBX_E_PORT_PBX1_MISSING:
        return PC_EXIT_PBX1_MISSING;
    case PBX_E_PORT_PBX1_UNSEALED:
        return PC_EXIT_PBX1_UNSEALED;
    case PBX_E_PORT_PBX1_KIND:
        return PC_EXIT_PBX1_KIND;
    default:
        return PC_EXIT_PBX1_MALFORMED;
    }
}

/* Reads and checks the PBX1 smoke record, then maps and touches the
 * arena it describes. Returns 0 or the exit status of the refusal. */
static uint8_t pc_startup_storage(void)
{
    static const uint8_t magic[4] = {'P', 'B', 'X', '1'};
    uint8_t pbx1[PC_PBX1_BYTES + 1U];
    uint32_t len = 0;
    uint64_t arena_bytes;
    void *arena = NULL;
    pbx_err err =
        pbx_port_pbx1_read(&pc.port, PC_SLOT_PBX1, pbx1, sizeof(pbx1), &len);
    if (err != PBX_OK) {
        return pc_pbx1_status(err);
    }
    if (len != PC_PBX1_BYTES || !pbx_mem_equal(pbx1, magic, 4U) ||
        pbx_le_get32(pbx1 + 4U) != 1U) {
        return PC_EXIT_PBX1_MALFORMED;
    }
    arena_bytes = pbx_le_get64(pbx1 + 8U);
    if (pbx_port_arena_map(&pc.port, arena_bytes, &arena) != PBX_OK) {
        return PC_EXIT_ARENA;
    }
    /* Touch both ends so the mapping is proven usable, not just reserved. */
    ((volatile uint8_t *)arena)[0] = 1U;
    ((volatile uint8_t *)arena)[arena_bytes - 1U] = 1U;
    return 0;
}

/* Counts the bytes of a NUL-terminated argument, bounded. */
static uint32_t pc_strlen(const char *s)
{
    uint32_t n = 0;
    while (n < 256U && s[n] != '\0') {
        n++;
    }
    return n;
}

/* Runs every startup step in order; returns 0 or the refusal status. */
static uint8_t pc_startup(const pbx_port_start *start)
{
    static const uint8_t ready[5] = {'R', 'E', 'A', 'D', 'Y'};
    uint8_t st;
    pbx_err err = pbx_port_init(&pc.port, PC_SLOT_MIN, PC_SLOT_MAX);
    if (err == PBX_E_PORT_NOFILE) {
        return PC_EXIT_NOFILE;
    }
    if (err != PBX_OK) {
        return PC_EXIT_INIT;
    }
    st = pc_startup_storage();
    if (st != 0U) {
        return st;
    }
    if (start->argc < 2U ||
        pbx_port_public_open(&pc.port, PBX_PORT_SLOT_NONE,
                             (const uint8_t *)start->argv[1],
                             pc_strlen(start->argv[1])) != PBX_OK) {
        return PC_EXIT_ENDPOINT;
    }
    for (uint32_t i = 0; i < PC_RESV_COUNT; i++) {
        if (pbx_port_reserve(&pc.port, PC_RESV_FIRST + (int32_t)i) != PBX_OK) {
            return PC_EXIT_RESERVE;
        }
    }
    if (pbx_port_send(&pc.port, PC_SLOT_SUPERVISOR, ready, sizeof(ready),
                      PBX_PORT_SLOT_NONE) != PBX_OK) {
        return PC_EXIT_READY;
    }
    return 0;
}

/* Moves receipt 0 (if any) into reservation arg, deletes the rest, and
 * reports: status, receipts seen, receipts deleted, destination slot. */
static void pc_hold(int32_t from, uint32_t receipts, uint8_t arg)
{
    int32_t dest = PC_RESV_FIRST + (int32_t)(arg % PC_RESV_COUNT);
    uint32_t deleted = 0;
    pbx_err err = receipts > 0U ? pbx_port_receipt_move(&pc.port, 0, dest)
                                : PBX_E_PORT_RECEIPT_INDEX;
    pbx_err del = pbx_port_receipts_delete(&pc.port, &deleted);
    uint32_t w[4] = {(uint32_t)(del != PBX_OK ? del : err), receipts, deleted,
                     (uint32_t)dest};
    pc_reply(from, w, 4U, PBX_PORT_SLOT_NONE);
}

/* Answers a slot query for the i32 slot number in msg[1..4]. */
static void pc_query(int32_t from)
{
    pbx_port_slot_info info;
    int32_t slot = (int32_t)pbx_le_get32(pc.msg + 1U);
    pbx_err err = pbx_port_slot_query(&pc.port, slot, &info);
    uint32_t w[8] = {(uint32_t)err,
                     info.kind,
                     info.flags,
                     (uint32_t)(info.object_id & 0xFFFFFFFFU),
                     (uint32_t)(info.object_id >> 32),
                     (uint32_t)info.peer_pid,
                     info.peer_uid,
                     info.peer_gid};
    pc_reply(from, w, 8U, PBX_PORT_SLOT_NONE);
}

/* Answers an identity query for the i32 slot number in msg[1..4]:
 * status, then the identity's low and high words. */
static void pc_identity(int32_t from)
{
    uint64_t id = 0;
    int32_t slot = (int32_t)pbx_le_get32(pc.msg + 1U);
    pbx_err err = pbx_port_slot_identity(&pc.port, slot, &id);
    uint32_t w[3] = {(uint32_t)err, (uint32_t)(id & 0xFFFFFFFFU),
                     (uint32_t)(id >> 32)};
    pc_reply(from, w, 3U, PBX_PORT_SLOT_NONE);
}

/* Sends one wake; on backpressure keeps it and watches for writability. */
static pbx_err pc_notify(void)
{
    static const uint8_t wake[4] = {'W', 'A', 'K', 'E'};
    pbx_err err = pbx_port_notify(&pc.port, PC_SLOT_NOTIFY, wake, sizeof(wake));
    if (err == PBX_E_PORT_BACKPRESSURE) {
        pc.wake_pending = 1U;
        return pbx_port_watch(&pc.port, PC_SLOT_NOTIFY, PBX_PORT_WANT_WRITE);
    }
    pc.wake_pending = 0U;
    return err;
}

/* Retries a held wake once the route is writable, then tells the
 * supervisor it went out. */
static void pc_notify_retry(void)
{
    static const uint8_t woke[4] = {'W', 'O', 'K', 'E'};
    if (pc.wake_pending == 0U || pc_notify() != PBX_OK ||
        pc.wake_pending != 0U) {
        return;
    }
    (void)pbx_port_watch(&pc.port, PC_SLOT_NOTIFY, 0U);
    (void)pbx_port_send(&pc.port, PC_SLOT_SUPERVISOR, woke, sizeof(woke),
                        PBX_PORT_SLOT_NONE);
}

/* Makes a synchronous call on the peer route and holds its first receipt
 * in reservation arg; reports status, receipts, deleted, reply length. */
static void pc_peer_call(int32_t from, uint8_t arg)
{
    static const uint8_t req[4] = {'C', 'A', 'L', 'L'};
    uint8_t resp[PC_MSG_BYTES];
    pbx_port_msg m;
    uint32_t deleted = 0;
    int32_t dest = PC_RESV_FIRST + (int32_t)(arg % PC_RESV_COUNT);
    pbx_err err =
        pbx_port_call(&pc.port, PC_SLOT_PEER, req, sizeof(req),
                      PBX_PORT_SLOT_NONE, resp, sizeof(resp), &m, 5000U);
    pbx_err del;
    if (err == PBX_OK && m.receipts > 0U) {
        err = pbx_port_receipt_move(&pc.port, 0, dest);
    }
    del = pbx_port_receipts_delete(&pc.port, &deleted);
    uint32_t w[4] = {(uint32_t)(del != PBX_OK ? del : err), m.receipts, deleted,
                     m.len_bytes};
    pc_reply(from, w, 4U, PBX_PORT_SLOT_NONE);
}

/* Deletes the content of reservation arg (Delete: the slot itself, then
 * reserve again; Unreserve: only a placeholder) and reports both steps. */
static void pc_release(int32_t from, uint8_t op, uint8_t arg)
{
    int32_t slot = PC_RESV_FIRST + (int32_t)(arg % PC_RESV_COUNT);
    pbx_err first = op == (uint8_t)'D' ? pbx_port_slot_delete(&pc.port, slot)
                                       : pbx_port_unreserve(&pc.port, slot);
    pbx_err again = pbx_port_reserve(&pc.port, slot);
    uint32_t w[2] = {(uint32_t)first, (uint32_t)again};
    pc_reply(from, w, 2U, PBX_PORT_SLOT_NONE);
}

/* Writes one diagnostic line of (arg + 1) * 16 bytes, letters then a
 * newline, and reports status and whether it was written whole. */
static void pc_log(int32_t from, uint8_t arg)
{
    static uint8_t line[256U * 16U];
    uint32_t len = ((uint32_t)arg + 1U) * 16U;
    for (uint32_t i = 0; i + 1U < len; i++) {
        line[i] = (uint8_t)('a' + (i % 26U));
    }
    line[len - 1U] = (uint8_t)'\n';
    uint32_t w[2] = {(uint32_t)PBX_OK, pbx_port_log(line, len) ? 1U : 0U};
    pc_reply(from, w, 2U, PBX_PORT_SLOT_NONE);
}

/* Handles one well-received message from public connection from. Returns
 * an exit status + 1 when the message asks the process to stop, else 0. */
static uint32_t pc_dispatch(int32_t from, const pbx_port_msg *m)
{
    uint8_t op = m->len_bytes > 0U ? pc.msg[0] : 0U;
    uint8_t arg = m->len_bytes > 1U ? pc.msg[1] : 0U;
    int32_t slot = PC_RESV_FIRST + (int32_t)(arg % PC_RESV_COUNT);
    uint32_t w[4] = {0, m->receipts, 0, 0};
    if (op == (uint8_t)'H') {
        pc_hold(from, m->receipts, arg);
        return 0;
    }
    (void)pbx_port_receipts_delete(&pc.port, &w[2]);
    if (op == (uint8_t)'X') {
        return (uint32_t)arg + 1U;
    }
    if (op == (uint8_t)'Q' && m->len_bytes >= 5U) {
        pc_query(from);
    } else if (op == (uint8_t)'I' && m->len_bytes >= 5U) {
        pc_identity(from);
    } else if (op == (uint8_t)'P') {
        pc_peer_call(from, arg);
    } else if (op == (uint8_t)'D' || op == (uint8_t)'U') {
        pc_release(from, op, arg);
    } else if (op == (uint8_t)'R') {
        w[0] = (uint32_t)pbx_port_slot_restore(&pc.port, slot);
        pc_reply(from, w, 1U, PBX_PORT_SLOT_NONE);
    } else if (op == (uint8_t)'E') {
        pc_reply(from, w, 4U, slot);
    } else if (op == (uint8_t)'V') {
        w[0] = (uint32_t)pbx_port_reserve(&pc.port, PC_SLOT_MIN + (int32_t)arg);
        pc_reply(from, w, 1U, PBX_PORT_SLOT_NONE);
    } else if (op == (uint8_t)'K') {
        w[0] = (uint32_t)pbx_port_slot_delete(&pc.port,
                                              PC_SLOT_MIN + (int32_t)arg);
        pc_reply(from, w, 1U, PBX_PORT_SLOT_NONE);
    } else if (op == (uint8_t)'L') {
        pc_log(from, arg);
    } else if (op == (uint8_t)'N') {
        w[0] = (uint32_t)pc_notify();
        w[3] = pc.wake_pending;
        pc_reply(from, w, 4U, PBX_PORT_SLOT_NONE);
    } else {
        w[0] = (uint32_t)(op == (uint8_t)'F' ? PBX_OK : PBX_E_PORT_STATE);
        pc_reply(from, w, 4U, PBX_PORT_SLOT_NONE);
    }
    return 0;
}

/* Receives and handles one public message; a refused receive is reported
 * to its sender (everything it carried is already deleted). */
static uint32_t pc_public(int32_t from)
{
    pbx_port_msg m;
    pbx_err err =
        pbx_port_public_recv(&pc.port, from, pc.msg, sizeof(pc.msg), &m);
    if (err == PBX_E_PORT_PEER_CLOSED) {
        (void)pbx_port_client_close(&pc.port, from);
        return 0;
    }
    if (err == PBX_E_PORT_AGAIN) {
        return 0;
    }
    if (err != PBX_OK) {
        uint32_t w[1] = {(uint32_t)err};
        pc_reply(from, w, 1U, PBX_PORT_SLOT_NONE);
        return 0;
    }
    return pc_dispatch(from, &m);
}

uint8_t pbx_port_main(const pbx_port_start *start)
{
    uint8_t st = pc_startup(start);
    if (st != 0U) {
        return st;
    }
    for (uint32_t i = 0; i < PC_EVENTS_MAX; i++) {
        pbx_port_event ev;
        uint32_t stop = 0;
        pbx_err err = pbx_port_wait(&pc.port, &ev);
        if (err == PBX_E_PORT_AGAIN || err == PBX_E_PORT_CLIENTS_FULL) {
            continue;
        }
        if (err != PBX_OK) {
            return PC_EXIT_WAIT;
        }
        if (ev.kind == PBX_PORT_EV_PUBLIC_READABLE) {
            stop = pc_public(ev.slot);
        } else if (ev.kind == PBX_PORT_EV_ROUTE_WRITABLE) {
            pc_notify_retry();
        }
        if (stop != 0U) {
            return (uint8_t)(stop - 1U);
        }
    }
    return PC_EXIT_EVENTS;
}
