/*
 * fuzz_capabi.c: libFuzzer harness for capabi's inventory and receipt
 * judges, which see untrusted slot observations at startup and per request.
 *
 * The input's first byte picks the phase and the rest is cut into 16-byte
 * observations. Whatever the judges answer, they must not crash, and an
 * accepted inventory must satisfy the documented rules when checked again
 * entry by entry: a violation traps so the fuzzer reports it.
 */
#include "capabi/pbx_capabi.h"

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* At most this many observations are judged per input; more add nothing. */
#define FUZZ_CAPABI_OBS_MAX 16U

/* Reads one observation from 16 untrusted bytes. */
static void fuzz_capabi_read(const uint8_t *p, pbx_capabi_observed *o)
{
    o->slot = pbx_le_get32(p);
    o->kind = pbx_le_get32(p + 4);
    o->rights = pbx_le_get32(p + 8);
    o->provenance = pbx_le_get32(p + 12);
}

/* Checks an accepted inventory again, one observation at a time. */
static void fuzz_capabi_recheck(const pbx_capabi_observed *obs, size_t n,
                                pbx_capabi_phase phase)
{
    const pbx_capabi_expect *pub = pbx_capabi_expected(PBX_CAPABI_ENTRY_PUBLIC);
    for (size_t i = 0; i < n; i++) {
        pbx_capabi_entry entry;
        PBX_ASSERT(pbx_capabi_entry_for_slot(obs[i].slot, &entry));
        for (size_t j = 0; j < i; j++) {
            PBX_ASSERT(obs[j].slot != obs[i].slot);
        }
        if (phase == PBX_CAPABI_PHASE_STARTUP && obs[i].slot == pub->slot) {
            continue;
        }
        PBX_ASSERT(pbx_capabi_check_entry(&obs[i]) == PBX_OK);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pbx_capabi_observed obs[FUZZ_CAPABI_OBS_MAX];
    pbx_capabi_layout layout;
    size_t n = 0;
    size_t bad = 0;
    if (size < 1U) {
        return 0;
    }
    pbx_capabi_phase phase = (data[0] & 1U) != 0U ? PBX_CAPABI_PHASE_READY
                                                  : PBX_CAPABI_PHASE_STARTUP;
    for (size_t off = 1; off + 16U <= size && n < FUZZ_CAPABI_OBS_MAX;
         off += 16U) {
        fuzz_capabi_read(data + off, &obs[n]);
        n++;
    }
    if (pbx_capabi_check_inventory(obs, n, phase, &bad) == PBX_OK) {
        fuzz_capabi_recheck(obs, n, phase);
    } else {
        PBX_ASSERT(bad <= n);
    }
    /* Every observation is also judged as a per-request receipt of each
     * kind against the default Linux transient range. */
    PBX_ASSERT(pbx_capabi_layout_init(&layout, 64U, 960U) == PBX_OK);
    for (size_t i = 0; i < n; i++) {
        for (uint32_t r = PBX_CAPABI_RECEIPT_SCOPE;
             r <= PBX_CAPABI_RECEIPT_ALIAS; r++) {
            pbx_err e = pbx_capabi_check_receipt(&layout, &obs[i],
                                                 (pbx_capabi_receipt)r);
            PBX_ASSERT(e != PBX_OK ||
                       pbx_capabi_slot_classify(&layout, obs[i].slot) ==
                           PBX_CAPABI_CLASS_TRANSIENT);
        }
    }
    return 0;
}
