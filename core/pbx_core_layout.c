/*
 * pbx_core_layout.c: the compiled type layout of every pool record.
 */
#include "core/pbx_core_layout.h"

#include <stdalign.h>

/* Records a type's size and alignment; sizes are far below UINT32_MAX. */
#define PBX_CORE_LAYOUT_OF(type)                                               \
    {                                                                          \
        (uint32_t)sizeof(type), (uint32_t)alignof(type)                        \
    }

void pbx_core_pool_layouts(
    pbx_bootstrap_type_layout out[PBX_BOOTSTRAP_POOL_COUNT])
{
    static const pbx_bootstrap_type_layout layouts[PBX_BOOTSTRAP_POOL_COUNT] = {
        [PBX_BOOTSTRAP_POOL_REQUESTS] = PBX_CORE_LAYOUT_OF(pbx_core_request),
        [PBX_BOOTSTRAP_POOL_SELECTOR_BYTES] = PBX_CORE_LAYOUT_OF(uint8_t),
        [PBX_BOOTSTRAP_POOL_GRANTS] = PBX_CORE_LAYOUT_OF(pbx_core_grant),
        [PBX_BOOTSTRAP_POOL_PROMPTS] = PBX_CORE_LAYOUT_OF(pbx_core_prompt),
        [PBX_BOOTSTRAP_POOL_POLICIES] = PBX_CORE_LAYOUT_OF(pbx_core_policy),
        [PBX_BOOTSTRAP_POOL_DECISIONS] = PBX_CORE_LAYOUT_OF(pbx_core_decision),
        [PBX_BOOTSTRAP_POOL_TRANSIENT_SLOTS] =
            PBX_CORE_LAYOUT_OF(pbx_core_tslot),
        [PBX_BOOTSTRAP_POOL_RESOLUTIONS] =
            PBX_CORE_LAYOUT_OF(pbx_core_resolution),
        [PBX_BOOTSTRAP_POOL_NOTIFICATIONS] =
            PBX_CORE_LAYOUT_OF(pbx_core_notification),
        [PBX_BOOTSTRAP_POOL_CALLS] = PBX_CORE_LAYOUT_OF(pbx_core_outcall),
    };
    for (size_t i = 0; i < (size_t)PBX_BOOTSTRAP_POOL_COUNT; i++) {
        out[i] = layouts[i];
    }
}
