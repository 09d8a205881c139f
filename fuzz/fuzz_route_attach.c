/*
 * fuzz_route_attach.c: libFuzzer harness for powerboxd's slot-4
 * ROUTE_ATTACH codec (capabi/pbx_capabi_attach.c): the frame's decoder
 * (reached from powerboxd/runtime/rt_attach.c), the judge of the
 * capability it carries, and the answer's decoder (used by pbx up).
 *
 * Input layout: byte 0 is the control byte (its low two bits: the receipt
 * count the frame arrived with; its other six bits, modulo 5, pick the
 * route judged when the frame itself is refused); bytes 1..16 are an
 * observation (slot, kind, rights, provenance, each a little-endian u32);
 * bytes 17..32 the peer's credentials (present, pid, uid, self_uid); the rest,
 * of any length, is the frame. A short input reads as zeros where its bytes
 * end.
 *
 * The oracles are written from capabi/pbx_capabi.h's text, not from the
 * code: the frame is refused with exactly the first failure in the
 * documented order and echoes exactly the fields whose bytes were there;
 * an accepted frame re-encodes to the same bytes; the encoder refuses
 * what the decoder would and writes nothing then; the judge returns the
 * first failure in its documented order against the header's slot table
 * (the observation's own slot is ignored); the frame judged as an answer
 * is refused in order with its output untouched, and an accepted one
 * re-encodes to the same bytes. Any difference aborts.
 */
#include "capabi/pbx_capabi.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The bytes before the frame: the control byte, observation and peer. */
#define FUZZ_RA_HEAD 33U
/* The highest process id a frame may name (the header: 1..INT32_MAX). */
#define FUZZ_RA_PID_MAX 0x7FFFFFFFU
/* A value no decoder writes, to see what it left untouched. */
#define FUZZ_RA_POISON 0xA5A5A5A5U

/* fuzz_ra_want is one route's expectation, copied from the slot table at
 * the top of capabi/pbx_capabi.h: every route is root-transferred. */
typedef struct fuzz_ra_want {
    uint32_t slot;
    uint32_t kind;
    uint32_t rights;
} fuzz_ra_want;

/* Indexed by route - 1: vfsd, ttyd, procd, launchd's wake, its broker. */
static const fuzz_ra_want fuzz_ra_table[] = {
    {5U, PBX_CAPABI_KIND_ENDPOINT, PBX_CAPABI_RIGHT_SEND},
    {6U, PBX_CAPABI_KIND_ENDPOINT, PBX_CAPABI_RIGHT_SEND},
    {7U, PBX_CAPABI_KIND_ENDPOINT, PBX_CAPABI_RIGHT_SEND},
    {8U, PBX_CAPABI_KIND_NOTIFY, PBX_CAPABI_RIGHT_SEND},
    {10U, PBX_CAPABI_KIND_ENDPOINT, PBX_CAPABI_RIGHT_RECEIVE},
};

/* Reads the little-endian u32 at off of head (FUZZ_RA_HEAD bytes). */
static uint32_t fuzz_ra_word(const uint8_t *head, size_t off)
{
    return pbx_le_get32(head + off);
}

/* The decoder's verdict as the header orders it, for len bytes of buf. */
static pbx_err fuzz_ra_attach_expect(const uint8_t *buf, size_t len,
                                     uint32_t receipts)
{
    if (len != PBX_CAPABI_ATTACH_BYTES) {
        return PBX_E_CAPABI_ATTACH_LENGTH;
    }
    uint32_t route = pbx_le_get16(buf + 6);
    uint32_t pid = pbx_le_get32(buf + 8);
    if (pbx_le_get32(buf) != PBX_CAPABI_ATTACH_MAGIC) {
        return PBX_E_CAPABI_ATTACH_MAGIC;
    }
    if (pbx_le_get16(buf + 4) != PBX_CAPABI_ATTACH_VERSION) {
        return PBX_E_CAPABI_ATTACH_VERSION;
    }
    if (route < 1U || route > PBX_ARRAY_LEN(fuzz_ra_table)) {
        return PBX_E_CAPABI_ATTACH_ROUTE;
    }
    if (pid == 0U || pid > FUZZ_RA_PID_MAX) {
        return PBX_E_CAPABI_ATTACH_PID;
    }
    if (pbx_le_get32(buf + 12) != 0U) {
        return PBX_E_CAPABI_ATTACH_RESERVED;
    }
    return receipts == 1U ? PBX_OK : PBX_E_CAPABI_ATTACH_COUNT;
}

/* Encodes a and checks the encoder's documented refusals: nothing is
 * written on error, and what it writes decodes back to a. */
static void fuzz_ra_encode(const pbx_capabi_attach *a)
{
    uint8_t buf[PBX_CAPABI_ATTACH_BYTES + 1U];
    uint8_t was[sizeof(buf)];
    memset(buf, 0x5A, sizeof(buf));
    memcpy(was, buf, sizeof(buf));
    pbx_err want = PBX_OK;
    if (a->route < 1U || a->route > PBX_ARRAY_LEN(fuzz_ra_table)) {
        want = PBX_E_CAPABI_ATTACH_ROUTE;
    } else if (a->peer_pid == 0U || a->peer_pid > FUZZ_RA_PID_MAX) {
        want = PBX_E_CAPABI_ATTACH_PID;
    }
    if (pbx_capabi_attach_encode(a, buf, PBX_CAPABI_ATTACH_BYTES - 1U) !=
            PBX_E_CAPABI_ATTACH_LENGTH ||
        memcmp(buf, was, sizeof(buf)) != 0) {
        abort();
    }
    if (pbx_capabi_attach_encode(a, buf, sizeof(buf)) != want) {
        abort();
    }
    if (want != PBX_OK) {
        if (memcmp(buf, was, sizeof(buf)) != 0) {
            abort();
        }
        return;
    }
    pbx_capabi_attach back;
    if (buf[PBX_CAPABI_ATTACH_BYTES] != 0x5AU ||
        pbx_capabi_attach_decode(buf, PBX_CAPABI_ATTACH_BYTES, 1U, &back) !=
            PBX_OK ||
        back.route != a->route || back.peer_pid != a->peer_pid) {
        abort();
    }
}

/* Decodes the frame and checks the verdict, the echo and, when accepted,
 * the re-encoding; returns the verdict with the decoded attach in *out. */
static pbx_err fuzz_ra_attach(const uint8_t *buf, size_t len, uint32_t receipts,
                              pbx_capabi_attach *out)
{
    uint8_t again[PBX_CAPABI_ATTACH_BYTES];
    out->route = FUZZ_RA_POISON;
    out->peer_pid = FUZZ_RA_POISON;
    pbx_err e = pbx_capabi_attach_decode(buf, len, receipts, out);
    if (e != fuzz_ra_attach_expect(buf, len, receipts)) {
        abort();
    }
    /* Each echoed field is 0 unless its bytes were present. */
    if (out->route != (len >= 8U ? pbx_le_get16(buf + 6) : 0U) ||
        out->peer_pid != (len >= 12U ? pbx_le_get32(buf + 8) : 0U)) {
        abort();
    }
    fuzz_ra_encode(out);
    if (e == PBX_OK &&
        (pbx_capabi_attach_encode(out, again, sizeof(again)) != PBX_OK ||
         memcmp(again, buf, sizeof(again)) != 0)) {
        abort();
    }
    return e;
}

/* The judge's verdict as the header orders it: the capability as the
 * startup check judges the slot it replaces, then the credentials. */
static pbx_err fuzz_ra_check_expect(const pbx_capabi_attach *a,
                                    const pbx_capabi_observed *obs,
                                    const pbx_capabi_peer *peer)
{
    const fuzz_ra_want *w = &fuzz_ra_table[a->route - 1U];
    if (obs->kind == (uint32_t)PBX_CAPABI_KIND_EMPTY) {
        return PBX_E_CAPABI_ENTRY_MISSING;
    }
    if (obs->kind != w->kind) {
        return PBX_E_CAPABI_KIND;
    }
    if (obs->provenance != (uint32_t)PBX_CAPABI_PROV_ROOT_TRANSFERRED) {
        return PBX_E_CAPABI_PROVENANCE;
    }
    if ((w->rights & ~obs->rights) != 0U) {
        return PBX_E_CAPABI_RIGHTS_MISSING;
    }
    if ((obs->rights & ~w->rights) != 0U) {
        return PBX_E_CAPABI_RIGHTS_EXTRA;
    }
    if (peer->present == 0U) {
        return PBX_E_CAPABI_PEER_NONE;
    }
    if (peer->uid != peer->self_uid) {
        return PBX_E_CAPABI_PEER_USER;
    }
    return peer->pid == a->peer_pid ? PBX_OK : PBX_E_CAPABI_PEER_PID;
}

/* Judges obs and peer for the decoded attach a; the observation's own
 * slot must not matter, and the route's entry is the table's slot. */
static void fuzz_ra_check(const pbx_capabi_attach *a,
                          const pbx_capabi_observed *obs,
                          const pbx_capabi_peer *peer)
{
    const pbx_capabi_expect *e =
        pbx_capabi_expected(pbx_capabi_attach_entry(a->route));
    if (e->slot != fuzz_ra_table[a->route - 1U].slot) {
        abort();
    }
    pbx_err want = fuzz_ra_check_expect(a, obs, peer);
    if (pbx_capabi_check_attach(a, obs, peer) != want) {
        abort();
    }
    pbx_capabi_observed moved = *obs;
    moved.slot = ~obs->slot;
    if (pbx_capabi_check_attach(a, &moved, peer) != want) {
        abort();
    }
}

/* Judges the frame as an answer: refusals in order with *out untouched;
 * an accepted answer re-encodes to the same bytes. */
static void fuzz_ra_answer(const uint8_t *buf, size_t len)
{
    uint8_t again[PBX_CAPABI_ANSWER_BYTES];
    pbx_capabi_answer ans = {FUZZ_RA_POISON, FUZZ_RA_POISON, FUZZ_RA_POISON};
    pbx_err want = PBX_OK;
    if (len != PBX_CAPABI_ANSWER_BYTES) {
        want = PBX_E_CAPABI_ATTACH_LENGTH;
    } else if (pbx_le_get32(buf) != PBX_CAPABI_ANSWER_MAGIC) {
        want = PBX_E_CAPABI_ATTACH_MAGIC;
    } else if (pbx_le_get16(buf + 4) != PBX_CAPABI_ATTACH_VERSION) {
        want = PBX_E_CAPABI_ATTACH_VERSION;
    }
    if (pbx_capabi_answer_decode(buf, len, &ans) != want) {
        abort();
    }
    if (want != PBX_OK) {
        if (ans.route != FUZZ_RA_POISON || ans.peer_pid != FUZZ_RA_POISON ||
            ans.status != FUZZ_RA_POISON) {
            abort();
        }
        return;
    }
    if (ans.route > 0xFFFFU ||
        pbx_capabi_answer_encode(&ans, again, sizeof(again)) != PBX_OK ||
        memcmp(again, buf, sizeof(again)) != 0) {
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t head[FUZZ_RA_HEAD];
    memset(head, 0, sizeof(head));
    memcpy(head, data, size < sizeof(head) ? size : sizeof(head));
    const uint8_t *frame = size > sizeof(head) ? data + sizeof(head) : NULL;
    size_t len = size > sizeof(head) ? size - sizeof(head) : 0U;
    pbx_capabi_observed obs = {fuzz_ra_word(head, 1), fuzz_ra_word(head, 5),
                               fuzz_ra_word(head, 9), fuzz_ra_word(head, 13)};
    pbx_capabi_peer peer = {fuzz_ra_word(head, 17), fuzz_ra_word(head, 21),
                            fuzz_ra_word(head, 25), fuzz_ra_word(head, 29)};
    pbx_capabi_attach a;
    if (fuzz_ra_attach(frame, len, head[0] & 3U, &a) != PBX_OK) {
        /* A refused frame still has its credentials judged, for a route
         * the control byte picks and the pid the frame echoed (or 1). */
        a.route = 1U + ((uint32_t)head[0] >> 2U) % 5U;
        if (a.peer_pid == 0U || a.peer_pid > FUZZ_RA_PID_MAX) {
            a.peer_pid = 1U;
        }
    }
    fuzz_ra_check(&a, &obs, &peer);
    fuzz_ra_answer(frame, len);
    return 0;
}
