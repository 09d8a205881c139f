/*
 * test_core_layout.c: the compiled pool record layouts the core exports
 * for PBX1 checking.
 */
#include "../core/pbx_core_layout.h"
#include "runner/pbx_test.h"

#include <stdalign.h>
#include <stddef.h>

PBX_TEST(core_layout_matches_record_types)
{
    pbx_bootstrap_type_layout l[PBX_BOOTSTRAP_POOL_COUNT];
    pbx_core_pool_layouts(l);
    PBX_CHECK_EQ(l[PBX_BOOTSTRAP_POOL_SELECTOR_BYTES].record_size_bytes, 1U);
    PBX_CHECK_EQ(l[PBX_BOOTSTRAP_POOL_SELECTOR_BYTES].record_align_bytes, 1U);
    PBX_CHECK_EQ(l[PBX_BOOTSTRAP_POOL_REQUESTS].record_size_bytes,
                 sizeof(pbx_core_request));
    PBX_CHECK_EQ(l[PBX_BOOTSTRAP_POOL_REQUESTS].record_align_bytes,
                 alignof(pbx_core_request));
    PBX_CHECK_EQ(l[PBX_BOOTSTRAP_POOL_GRANTS].record_size_bytes,
                 sizeof(pbx_core_grant));
    PBX_CHECK_EQ(l[PBX_BOOTSTRAP_POOL_TRANSIENT_SLOTS].record_size_bytes,
                 sizeof(pbx_core_tslot));
    PBX_CHECK_EQ(l[PBX_BOOTSTRAP_POOL_NOTIFICATIONS].record_size_bytes,
                 sizeof(pbx_core_notification));
    PBX_CHECK_EQ(l[PBX_BOOTSTRAP_POOL_CALLS].record_size_bytes,
                 sizeof(pbx_core_outcall));
    PBX_CHECK_EQ(l[PBX_BOOTSTRAP_POOL_CALLS].record_align_bytes,
                 alignof(pbx_core_outcall));
    /* Every record begins with its link: the carving code threads the
     * free list through it. */
    PBX_CHECK_EQ(offsetof(pbx_core_outcall, link), 0U);
    for (size_t i = 0; i < (size_t)PBX_BOOTSTRAP_POOL_COUNT; i++) {
        uint32_t a = l[i].record_align_bytes;
        PBX_CHECK(l[i].record_size_bytes >= 1U);
        PBX_CHECK(l[i].record_size_bytes <= PBX_BOOTSTRAP_RECORD_SIZE_MAX);
        if (a == 0U) {
            PBX_CHECK(a != 0U);
            continue;
        }
        PBX_CHECK_EQ(a & (a - 1U), 0U);
        PBX_CHECK_EQ(l[i].record_size_bytes % a, 0U);
    }
}
