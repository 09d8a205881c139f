/*
 * pbx_capabi_attach.c: the ROUTE_ATTACH frame and its answer (encode and
 * untrusted decode), and the judge of the one capability an attach
 * carries: the startup expectation of the slot it replaces, then its
 * peer's credentials. Pure: nothing here keeps state or touches a slot.
 */
#include "capabi/pbx_capabi.h"

/* The highest valid process id: the port reports pids as int32_t. */
#define PBX_CAPABI_PID_MAX ((uint32_t)INT32_MAX)

/* The route numbers map to their startup entries one to one. */
static const pbx_capabi_entry pbx_capabi_route_entry[] = {
    PBX_CAPABI_ENTRY_VFSD, PBX_CAPABI_ENTRY_TTYD, PBX_CAPABI_ENTRY_PROCD,
    PBX_CAPABI_ENTRY_LAUNCHD, PBX_CAPABI_ENTRY_BROKER};

_Static_assert(PBX_ARRAY_LEN(pbx_capabi_route_entry) ==
                   (size_t)PBX_CAPABI_ROUTE_BROKER,
               "one entry per route, numbered from 1");
_Static_assert(PBX_CAPABI_ATTACH_BYTES == 16U && PBX_CAPABI_ANSWER_BYTES == 16U,
               "the frames are four u32 words");

/* Whether route is a pbx_capabi_route value. */
static bool pbx_capabi_route_known(uint32_t route)
{
    return route >= (uint32_t)PBX_CAPABI_ROUTE_VFSD &&
           route <= (uint32_t)PBX_CAPABI_ROUTE_BROKER;
}

pbx_err pbx_capabi_attach_encode(const pbx_capabi_attach *a, uint8_t *buf,
                                 size_t cap)
{
    PBX_ASSERT(a != NULL && buf != NULL);
    if (cap < PBX_CAPABI_ATTACH_BYTES) {
        return PBX_E_CAPABI_ATTACH_LENGTH;
    }
    if (!pbx_capabi_route_known(a->route)) {
        return PBX_E_CAPABI_ATTACH_ROUTE;
    }
    if (a->peer_pid == 0U || a->peer_pid > PBX_CAPABI_PID_MAX) {
        return PBX_E_CAPABI_ATTACH_PID;
    }
    pbx_le_put32(buf, PBX_CAPABI_ATTACH_MAGIC);
    pbx_le_put16(buf + 4, (uint16_t)PBX_CAPABI_ATTACH_VERSION);
    pbx_le_put16(buf + 6, (uint16_t)a->route);
    pbx_le_put32(buf + 8, a->peer_pid);
    pbx_le_put32(buf + 12, 0U);
    return PBX_OK;
}

pbx_err pbx_capabi_attach_decode(const uint8_t *buf, size_t len,
                                 uint32_t receipts, pbx_capabi_attach *out)
{
    PBX_ASSERT(out != NULL && (buf != NULL || len == 0U));
    out->route = 0U;
    out->peer_pid = 0U;
    /* What can be read is kept for the answer's echo even when the frame
     * is refused; each field only when its bytes are there. */
    if (len >= 8U) {
        out->route = pbx_le_get16(buf + 6);
    }
    if (len >= 12U) {
        out->peer_pid = pbx_le_get32(buf + 8);
    }
    if (len != PBX_CAPABI_ATTACH_BYTES) {
        return PBX_E_CAPABI_ATTACH_LENGTH;
    }
    if (pbx_le_get32(buf) != PBX_CAPABI_ATTACH_MAGIC) {
        return PBX_E_CAPABI_ATTACH_MAGIC;
    }
    if (pbx_le_get16(buf + 4) != PBX_CAPABI_ATTACH_VERSION) {
        return PBX_E_CAPABI_ATTACH_VERSION;
    }
    if (!pbx_capabi_route_known(out->route)) {
        return PBX_E_CAPABI_ATTACH_ROUTE;
    }
    if (out->peer_pid == 0U || out->peer_pid > PBX_CAPABI_PID_MAX) {
        return PBX_E_CAPABI_ATTACH_PID;
    }
    if (pbx_le_get32(buf + 12) != 0U) {
        return PBX_E_CAPABI_ATTACH_RESERVED;
    }
    return receipts == 1U ? PBX_OK : PBX_E_CAPABI_ATTACH_COUNT;
}

pbx_capabi_entry pbx_capabi_attach_entry(uint32_t route)
{
    PBX_ASSERT(pbx_capabi_route_known(route));
    return pbx_capabi_route_entry[route - 1U];
}

pbx_err pbx_capabi_check_attach(const pbx_capabi_attach *a,
                                const pbx_capabi_observed *obs,
                                const pbx_capabi_peer *peer)
{
    PBX_ASSERT(a != NULL && obs != NULL && peer != NULL);
    const pbx_capabi_expect *want =
        pbx_capabi_expected(pbx_capabi_attach_entry(a->route));
    /* Judged as the startup check judges the slot it replaces: the
     * observation is moved to that slot's number, everything else as
     * observed. */
    pbx_capabi_observed at = *obs;
    at.slot = want->slot;
    pbx_err err = pbx_capabi_check_entry(&at);
    if (err != PBX_OK) {
        return err;
    }
    if (peer->present == 0U) {
        return PBX_E_CAPABI_PEER_NONE;
    }
    if (peer->uid != peer->self_uid) {
        return PBX_E_CAPABI_PEER_USER;
    }
    return peer->pid == a->peer_pid ? PBX_OK : PBX_E_CAPABI_PEER_PID;
}

pbx_err pbx_capabi_answer_encode(const pbx_capabi_answer *ans, uint8_t *buf,
                                 size_t cap)
{
    PBX_ASSERT(ans != NULL && buf != NULL);
    if (cap < PBX_CAPABI_ANSWER_BYTES) {
        return PBX_E_CAPABI_ATTACH_LENGTH;
    }
    pbx_le_put32(buf, PBX_CAPABI_ANSWER_MAGIC);
    pbx_le_put16(buf + 4, (uint16_t)PBX_CAPABI_ATTACH_VERSION);
    /* A route that is no route (a refused frame's echo) fits 16 bits by
     * construction: decode read it from 16 bits. */
    pbx_le_put16(buf + 6, (uint16_t)(ans->route & 0xFFFFU));
    pbx_le_put32(buf + 8, ans->peer_pid);
    pbx_le_put32(buf + 12, ans->status);
    return PBX_OK;
}

pbx_err pbx_capabi_answer_decode(const uint8_t *buf, size_t len,
                                 pbx_capabi_answer *out)
{
    PBX_ASSERT(out != NULL && (buf != NULL || len == 0U));
    if (len != PBX_CAPABI_ANSWER_BYTES) {
        return PBX_E_CAPABI_ATTACH_LENGTH;
    }
    if (pbx_le_get32(buf) != PBX_CAPABI_ANSWER_MAGIC) {
        return PBX_E_CAPABI_ATTACH_MAGIC;
    }
    if (pbx_le_get16(buf + 4) != PBX_CAPABI_ATTACH_VERSION) {
        return PBX_E_CAPABI_ATTACH_VERSION;
    }
    out->route = pbx_le_get16(buf + 6);
    out->peer_pid = pbx_le_get32(buf + 8);
    out->status = pbx_le_get32(buf + 12);
    return PBX_OK;
}
