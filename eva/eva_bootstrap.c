/*
 * EVA driver for bootstrap/: a PBX1 record of every length up to one
 * byte past a whole record, of unknown bytes, through the parser; a
 * record it accepts through the geometry check, the page count, the
 * layout derivation (with unknown record sizes and alignments) and the
 * encoder into a buffer of every length; and every pool, deadline and
 * error value through the naming helpers (docs/SECURITY.md, "Abstract
 * interpretation").
 */
#include "base/pbx_base.h"
#include "bootstrap/pbx_bootstrap.h"
#include <__fc_builtin.h>

#define EVA_RECORD (PBX_BOOTSTRAP_DIGEST_OFFSET + PBX_BOOTSTRAP_DIGEST_BYTES)
#define EVA_IN_MAX (EVA_RECORD + 1U)

static uint8_t eva_in[EVA_IN_MAX];
static uint8_t eva_out[EVA_IN_MAX];

/* The helpers over plain values: every pool, deadline and error. */
static void eva_values(void)
{
    pbx_bootstrap_pool pool =
        (pbx_bootstrap_pool)Frama_C_interval(0, (int)PBX_BOOTSTRAP_POOL_COUNT);
    pbx_bootstrap_time t =
        (pbx_bootstrap_time)Frama_C_interval(0, (int)PBX_BOOTSTRAP_TIME_COUNT);
    pbx_bootstrap_pool got = PBX_BOOTSTRAP_POOL_COUNT;

    (void)pbx_bootstrap_pool_name(pool);
    (void)pbx_bootstrap_capacity_max(pool);
    (void)pbx_bootstrap_time_name(t);
    (void)pbx_bootstrap_mismatch_pool(
        (pbx_err)Frama_C_unsigned_int_interval(0, 0xffffu), &got);
}

/* Unknown record layouts, one per pool: any size and alignment. */
static void eva_layouts(pbx_bootstrap_type_layout *l)
{
    for (unsigned i = 0; i < (unsigned)PBX_BOOTSTRAP_POOL_COUNT; i++) {
        l[i].record_size_bytes = Frama_C_unsigned_int_interval(0, 0xffffffffu);
        l[i].record_align_bytes = Frama_C_unsigned_int_interval(0, 0xffffffffu);
    }
}

/* The entry point EVA starts from (-main eva_main). */
void eva_main(void);
void eva_main(void)
{
    pbx_bootstrap_geometry g;
    pbx_bootstrap_type_layout l[PBX_BOOTSTRAP_POOL_COUNT];
    pbx_bootstrap_layout out;
    uint32_t pages = 0;
    size_t n = Frama_C_size_t_interval(0, EVA_IN_MAX);

    eva_values();
    Frama_C_make_unknown((char *)eva_in, EVA_IN_MAX);
    pbx_mem_set(&g, 0, sizeof(g));
    if (pbx_bootstrap_parse(eva_in, n, &g) != PBX_OK) {
        return;
    }
    (void)pbx_bootstrap_geometry_check(&g);
    (void)pbx_bootstrap_pages_compute(&g, &pages);
    eva_layouts(l);
    (void)pbx_bootstrap_layout_derive(&g, l, &out);
    (void)pbx_bootstrap_encode(&g, eva_out,
                               Frama_C_size_t_interval(0, EVA_IN_MAX));
}
