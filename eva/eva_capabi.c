/*
 * EVA driver for capabi/: the attach-channel, answer and USAGE codecs on
 * buffers of every length up to one past their largest frame, of unknown
 * bytes (a decoded record re-encoded into a buffer of every capacity);
 * the layout over any first slot and count, and every slot through its
 * classification; the startup checks over observed capabilities of any
 * kind, rights and provenance (docs/SECURITY.md, "Abstract
 * interpretation").
 */
#include "base/pbx_base.h"
#include "capabi/pbx_capabi.h"
#include <__fc_builtin.h>

#define EVA_IN_MAX    (PBX_CAPABI_USAGE_REPORT_BYTES + 1U)
#define EVA_INVENTORY 12U

static uint8_t eva_in[EVA_IN_MAX];
static uint8_t eva_out[EVA_IN_MAX];
static pbx_capabi_observed eva_obs[EVA_INVENTORY];

static uint32_t eva_u32(void)
{
    return Frama_C_unsigned_int_interval(0, 0xffffffffu);
}

/* A length in [0, EVA_IN_MAX] over freshly unknown bytes. */
static size_t eva_len(void)
{
    Frama_C_make_unknown((char *)eva_in, EVA_IN_MAX);
    return Frama_C_size_t_interval(0, EVA_IN_MAX);
}

static size_t eva_cap(void)
{
    return Frama_C_size_t_interval(0, EVA_IN_MAX);
}

/* Observed capabilities: any slot, kind, rights and provenance. */
static void eva_observe(void)
{
    for (unsigned i = 0; i < EVA_INVENTORY; i++) {
        eva_obs[i].slot = eva_u32();
        eva_obs[i].kind = eva_u32();
        eva_obs[i].rights = eva_u32();
        eva_obs[i].provenance = eva_u32();
    }
}

static void eva_codecs(void)
{
    pbx_capabi_attach a;
    pbx_capabi_answer ans;
    pbx_capabi_usage u;
    uint32_t nonce = 0;
    size_t n = eva_len();

    pbx_mem_set(&a, 0, sizeof(a));
    pbx_mem_set(&ans, 0, sizeof(ans));
    pbx_mem_set(&u, 0, sizeof(u));
    if (pbx_capabi_attach_decode(eva_in, n, eva_u32(), &a) == PBX_OK) {
        pbx_capabi_peer peer = {eva_u32(), eva_u32(), eva_u32(), eva_u32()};
        (void)pbx_capabi_attach_encode(&a, eva_out, eva_cap());
        eva_observe();
        (void)pbx_capabi_check_attach(&a, &eva_obs[0], &peer);
    }
    if (pbx_capabi_answer_decode(eva_in, n, &ans) == PBX_OK) {
        (void)pbx_capabi_answer_encode(&ans, eva_out, eva_cap());
    }
    (void)pbx_capabi_usage_is_query(eva_in, n);
    if (pbx_capabi_usage_query_decode(eva_in, n, eva_u32(), &nonce) == PBX_OK) {
        (void)pbx_capabi_usage_query_encode(nonce, eva_out, eva_cap());
    }
    if (pbx_capabi_usage_decode(eva_in, n, &u) == PBX_OK) {
        (void)pbx_capabi_usage_encode(&u, eva_out, eva_cap());
    }
    (void)pbx_capabi_usage_pool_name(
        Frama_C_unsigned_int_interval(0, PBX_CAPABI_USAGE_POOLS - 1U));
}

static void eva_layout(void)
{
    pbx_capabi_layout layout;
    pbx_capabi_entry entry = PBX_CAPABI_ENTRY_PBX1;
    uint32_t index = 0;
    uint32_t slot = eva_u32();

    (void)pbx_capabi_entry_for_slot(slot, &entry);
    (void)pbx_capabi_expected(entry);
    (void)pbx_capabi_attach_entry(Frama_C_unsigned_int_interval(
        PBX_CAPABI_ROUTE_VFSD, PBX_CAPABI_ROUTE_BROKER));
    if (pbx_capabi_layout_init(&layout, eva_u32(), eva_u32()) != PBX_OK) {
        return;
    }
    (void)pbx_capabi_slot_classify(&layout, slot);
    if (pbx_capabi_transient_index(&layout, slot, &index) == PBX_OK) {
        (void)pbx_capabi_transient_slot(&layout, index);
    }
    eva_observe();
    (void)pbx_capabi_check_receipt(
        &layout, &eva_obs[0],
        (pbx_capabi_receipt)Frama_C_interval(PBX_CAPABI_RECEIPT_SCOPE,
                                             PBX_CAPABI_RECEIPT_ALIAS));
}

static void eva_inventory(void)
{
    size_t bad = 0;
    eva_observe();
    (void)pbx_capabi_check_entry(&eva_obs[0]);
    (void)pbx_capabi_check_inventory(
        eva_obs, Frama_C_size_t_interval(0, EVA_INVENTORY),
        (pbx_capabi_phase)Frama_C_interval(PBX_CAPABI_PHASE_STARTUP,
                                           PBX_CAPABI_PHASE_READY),
        &bad);
}

/* The entry point EVA starts from (-main eva_main). */
void eva_main(void);
void eva_main(void)
{
    eva_codecs();
    eva_layout();
    eva_inventory();
}
