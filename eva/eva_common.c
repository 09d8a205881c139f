/*
 * eva_common.c: the geometry the core's EVA drivers share (see
 * eva_common.h).
 */
#include "eva/eva_common.h"

#include "core/pbx_core.h"
#include "core/pbx_core_layout.h"

bool eva_layout(pbx_bootstrap_layout *out)
{
    pbx_bootstrap_geometry g;
    pbx_bootstrap_type_layout want[PBX_BOOTSTRAP_POOL_COUNT];
    pbx_mem_set(&g, 0, sizeof(g));
    g.version = PBX_BOOTSTRAP_VERSION;
    g.page_size_bytes = 4096U;
    pbx_core_pool_layouts(g.layout);
    pbx_core_pool_layouts(want);
    for (unsigned i = 0; i < (unsigned)PBX_BOOTSTRAP_POOL_COUNT; i++) {
        g.capacity[i] = EVA_RECORDS;
    }
    g.capacity[PBX_BOOTSTRAP_POOL_TRANSIENT_SLOTS] =
        3U * EVA_RECORDS + 2U + 2U * PBX_CORE_RECV_SLOTS_MAX;
    g.capacity[PBX_BOOTSTRAP_POOL_SELECTOR_BYTES] =
        4U * EVA_RECORDS * PBX_CORE_SELECTOR_CHUNK_BYTES;
    g.capacity[PBX_BOOTSTRAP_POOL_PROMPTS] =
        PBX_CORE_PROMPT_SHARE_DIVISOR * EVA_RECORDS;
    g.call_window = EVA_RECORDS;
    g.capacity[PBX_BOOTSTRAP_POOL_CALLS] =
        PBX_BOOTSTRAP_CALL_ROUTES * g.call_window;
    for (unsigned t = 0; t < (unsigned)PBX_BOOTSTRAP_TIME_COUNT; t++) {
        g.time_ms[t] = 5000U;
    }
    return pbx_bootstrap_pages_compute(&g, &g.arena_page_count) == PBX_OK &&
           pbx_bootstrap_layout_derive(&g, want, out) == PBX_OK;
}
