/*
 * fuzz_usage.c: libFuzzer harness for the USAGE codec on slot 4
 * (capabi/pbx_capabi_usage.c): the query and the report.
 *
 * Input layout: byte 0 is the receipt count the query arrived with (its
 * low two bits), the rest is the frame. The frame is judged as a query
 * and as a report. An accepted query re-encodes (from its nonce) to the
 * same bytes, a rejected one still reports the nonce its bytes held; an
 * accepted report re-encodes to the same bytes with every used count
 * within its capacity; pbx_capabi_usage_is_query must agree with the
 * magic. Any difference aborts.
 */
#include "capabi/pbx_capabi.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Judges buf as a query that arrived with receipts capabilities. */
static void fuzz_usage_query(const uint8_t *buf, size_t len, uint32_t receipts)
{
    uint8_t again[PBX_CAPABI_USAGE_QUERY_BYTES];
    uint32_t nonce = 0xFFFFFFFFU;
    pbx_err e = pbx_capabi_usage_query_decode(buf, len, receipts, &nonce);
    bool magic = len >= 4U && pbx_le_get32(buf) == PBX_CAPABI_USAGE_MAGIC;
    if (pbx_capabi_usage_is_query(buf, len) != magic) {
        abort();
    }
    if (e != PBX_OK) {
        /* The nonce is echoed whenever its bytes were there. */
        if (len < 12U ? nonce != 0U : nonce != pbx_le_get32(buf + 8)) {
            abort();
        }
        return;
    }
    if (!magic || receipts != 0U ||
        pbx_capabi_usage_query_encode(nonce, again, sizeof(again)) != PBX_OK ||
        len != sizeof(again) || memcmp(again, buf, len) != 0) {
        abort();
    }
}

/* Judges buf as a report. */
static void fuzz_usage_report(const uint8_t *buf, size_t len)
{
    uint8_t again[PBX_CAPABI_USAGE_REPORT_BYTES];
    pbx_capabi_usage u;
    if (pbx_capabi_usage_decode(buf, len, &u) != PBX_OK) {
        return;
    }
    for (size_t i = 0; i < (size_t)PBX_CAPABI_USAGE_POOLS; i++) {
        if (u.used[i] > u.capacity[i]) {
            abort();
        }
    }
    if (pbx_capabi_usage_encode(&u, again, sizeof(again)) != PBX_OK ||
        len != sizeof(again) || memcmp(again, buf, len) != 0) {
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0U) {
        return 0;
    }
    const uint8_t *buf = size > 1U ? data + 1 : NULL;
    size_t len = size - 1U;
    fuzz_usage_query(buf, len, data[0] & 3U);
    fuzz_usage_report(buf, len);
    return 0;
}
