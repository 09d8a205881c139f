/*
 * pbx_capabi_usage.c: the USAGE query that slot 4 takes besides
 * ROUTE_ATTACH, and the report that answers it (encode and untrusted
 * decode of both). Pure: the counts are the runtime's; nothing here keeps
 * state or touches a slot.
 */
#include "capabi/pbx_capabi.h"

/* The report's fixed offsets: the head, the pool pairs, the tail. */
#define PBX_CAPABI_USAGE_POOLS_AT 16U
#define PBX_CAPABI_USAGE_FDS_AT                                                \
    (PBX_CAPABI_USAGE_POOLS_AT + 8U * PBX_CAPABI_USAGE_POOLS)
#define PBX_CAPABI_USAGE_DROPPED_AT (PBX_CAPABI_USAGE_FDS_AT + 4U)

_Static_assert(PBX_CAPABI_USAGE_QUERY_BYTES == 16U,
               "the query is four u32 words");
_Static_assert(PBX_CAPABI_USAGE_REPORT_BYTES == 104U &&
                   PBX_CAPABI_USAGE_DROPPED_AT + 4U ==
                       PBX_CAPABI_USAGE_REPORT_BYTES,
               "the report is a 16-byte head, ten pool pairs and two u32");

/* The names a usage line gives the pools, in PBX1 pool order. */
static const char *const pbx_capabi_usage_names[] = {
    "requests",  "selector_chunks", "grants",      "prompts",       "policies",
    "decisions", "tslots",          "resolutions", "notifications", "calls"};

_Static_assert(PBX_ARRAY_LEN(pbx_capabi_usage_names) ==
                   (size_t)PBX_CAPABI_USAGE_POOLS,
               "one name per pool");

/* The offset of pool i's pair of counts in a report. */
static size_t pbx_capabi_usage_pool_at(uint32_t i)
{
    return (size_t)PBX_CAPABI_USAGE_POOLS_AT + (size_t)8U * (size_t)i;
}

bool pbx_capabi_usage_is_query(const uint8_t *buf, size_t len)
{
    PBX_ASSERT(buf != NULL || len == 0U);
    return len >= 4U && pbx_le_get32(buf) == PBX_CAPABI_USAGE_MAGIC;
}

pbx_err pbx_capabi_usage_query_encode(uint32_t nonce, uint8_t *buf, size_t cap)
{
    PBX_ASSERT(buf != NULL);
    if (cap < PBX_CAPABI_USAGE_QUERY_BYTES) {
        return PBX_E_CAPABI_USAGE_LENGTH;
    }
    pbx_le_put32(buf, PBX_CAPABI_USAGE_MAGIC);
    pbx_le_put16(buf + 4, (uint16_t)PBX_CAPABI_USAGE_VERSION);
    pbx_le_put16(buf + 6, 0U);
    pbx_le_put32(buf + 8, nonce);
    pbx_le_put32(buf + 12, 0U);
    return PBX_OK;
}

pbx_err pbx_capabi_usage_query_decode(const uint8_t *buf, size_t len,
                                      uint32_t receipts, uint32_t *nonce)
{
    PBX_ASSERT(nonce != NULL && (buf != NULL || len == 0U));
    /* The nonce is kept for the report's echo even when the query is
     * refused, but only when its bytes are there. */
    *nonce = len >= 12U ? pbx_le_get32(buf + 8) : 0U;
    if (len != PBX_CAPABI_USAGE_QUERY_BYTES) {
        return PBX_E_CAPABI_USAGE_LENGTH;
    }
    if (pbx_le_get32(buf) != PBX_CAPABI_USAGE_MAGIC) {
        return PBX_E_CAPABI_USAGE_MAGIC;
    }
    if (pbx_le_get16(buf + 4) != PBX_CAPABI_USAGE_VERSION) {
        return PBX_E_CAPABI_USAGE_VERSION;
    }
    if (pbx_le_get16(buf + 6) != 0U || pbx_le_get32(buf + 12) != 0U) {
        return PBX_E_CAPABI_USAGE_RESERVED;
    }
    return receipts == 0U ? PBX_OK : PBX_E_CAPABI_USAGE_COUNT;
}

pbx_err pbx_capabi_usage_encode(const pbx_capabi_usage *u, uint8_t *buf,
                                size_t cap)
{
    PBX_ASSERT(u != NULL && buf != NULL);
    if (cap < PBX_CAPABI_USAGE_REPORT_BYTES) {
        return PBX_E_CAPABI_USAGE_LENGTH;
    }
    /* Checked whole before the first byte is written. */
    for (uint32_t i = 0; i < PBX_CAPABI_USAGE_POOLS; i++) {
        if (u->used[i] > u->capacity[i]) {
            return PBX_E_CAPABI_USAGE_RANGE;
        }
    }
    pbx_le_put32(buf, PBX_CAPABI_REPORT_MAGIC);
    pbx_le_put16(buf + 4, (uint16_t)PBX_CAPABI_USAGE_VERSION);
    pbx_le_put16(buf + 6, 0U);
    pbx_le_put32(buf + 8, u->nonce);
    pbx_le_put32(buf + 12, u->status);
    for (uint32_t i = 0; i < PBX_CAPABI_USAGE_POOLS; i++) {
        uint8_t *p = buf + pbx_capabi_usage_pool_at(i);
        pbx_le_put32(p, u->used[i]);
        pbx_le_put32(p + 4, u->capacity[i]);
    }
    pbx_le_put32(buf + PBX_CAPABI_USAGE_FDS_AT, u->fds);
    pbx_le_put32(buf + PBX_CAPABI_USAGE_DROPPED_AT, u->log_dropped);
    return PBX_OK;
}

pbx_err pbx_capabi_usage_decode(const uint8_t *buf, size_t len,
                                pbx_capabi_usage *out)
{
    PBX_ASSERT(out != NULL && (buf != NULL || len == 0U));
    if (len != PBX_CAPABI_USAGE_REPORT_BYTES) {
        return PBX_E_CAPABI_USAGE_LENGTH;
    }
    if (pbx_le_get32(buf) != PBX_CAPABI_REPORT_MAGIC) {
        return PBX_E_CAPABI_USAGE_MAGIC;
    }
    if (pbx_le_get16(buf + 4) != PBX_CAPABI_USAGE_VERSION) {
        return PBX_E_CAPABI_USAGE_VERSION;
    }
    if (pbx_le_get16(buf + 6) != 0U) {
        return PBX_E_CAPABI_USAGE_RESERVED;
    }
    for (uint32_t i = 0; i < PBX_CAPABI_USAGE_POOLS; i++) {
        const uint8_t *p = buf + pbx_capabi_usage_pool_at(i);
        if (pbx_le_get32(p) > pbx_le_get32(p + 4)) {
            return PBX_E_CAPABI_USAGE_RANGE;
        }
    }
    out->nonce = pbx_le_get32(buf + 8);
    out->status = pbx_le_get32(buf + 12);
    for (uint32_t i = 0; i < PBX_CAPABI_USAGE_POOLS; i++) {
        const uint8_t *p = buf + pbx_capabi_usage_pool_at(i);
        out->used[i] = pbx_le_get32(p);
        out->capacity[i] = pbx_le_get32(p + 4);
    }
    out->fds = pbx_le_get32(buf + PBX_CAPABI_USAGE_FDS_AT);
    out->log_dropped = pbx_le_get32(buf + PBX_CAPABI_USAGE_DROPPED_AT);
    return PBX_OK;
}

const char *pbx_capabi_usage_pool_name(uint32_t pool)
{
    PBX_ASSERT(pool < PBX_CAPABI_USAGE_POOLS);
    return pbx_capabi_usage_names[pool];
}
