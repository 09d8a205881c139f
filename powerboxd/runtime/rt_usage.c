/*
 * rt_usage.c: the USAGE query on the supervisor connection (slot 4), so
 * that whoever started powerboxd can see its pools and descriptors
 * return to their baseline after a storm (capabi/pbx_capabi.h has the
 * wire). Every count is read from live state when the query is handled:
 * each arena pool's records in use and capacity from the core
 * (pbx_core_inspect_usage), the open descriptors from the port (a slot
 * query of every slot up to the end of the reservable range) and the log
 * lines dropped since start from the log. The answer is one non-blocking
 * notify on slot 4, like an attach's answer; a creator that cannot take
 * it loses only the report. A query is refused (status in the report,
 * zeros after it) when it is malformed or carries any capability, and
 * every capability it carried is deleted first.
 */
#include "core/pbx_core_inspect.h"
#include "powerboxd/runtime/rt_int.h"

_Static_assert(PBX_CAPABI_USAGE_POOLS == (uint32_t)PBX_BOOTSTRAP_POOL_COUNT,
               "the report counts every PBX1 pool, in PBX1 order");
_Static_assert(PBX_CAPABI_USAGE_QUERY_BYTES <= PBX_CAPABI_ATTACH_BYTES,
               "slot 4's receive buffer holds a whole query");

/* Counts the slots that hold anything from 0 up to the end of the port's
 * reservable range, the highest slot the port ever fills: the startup
 * slots, the port's own, the transient range. A slot the port cannot
 * describe is counted too: it was not proven empty. Bounded by
 * PBX_CAPABI_SLOT_LIMIT. */
static uint32_t rt_usage_fds(rt_state *s)
{
    uint32_t end = s->port.slot_max >= 0 ? (uint32_t)s->port.slot_max + 1U : 0U;
    uint32_t n = 0;
    if (end > PBX_CAPABI_SLOT_LIMIT) {
        end = PBX_CAPABI_SLOT_LIMIT;
    }
    for (uint32_t slot = 0; slot < end; slot++) {
        pbx_port_slot_info info;
        pbx_err err = pbx_port_slot_query(&s->port, (int32_t)slot, &info);
        if (err != PBX_OK || info.kind != (uint32_t)PBX_PORT_KIND_EMPTY) {
            n++;
        }
    }
    return n;
}

/* Fills u's counts from the core, the port and the log. */
static void rt_usage_count(rt_state *s, pbx_capabi_usage *u)
{
    for (uint32_t i = 0; i < PBX_CAPABI_USAGE_POOLS; i++) {
        pbx_core_inspect_usage(&s->core, (pbx_bootstrap_pool)i, &u->used[i],
                               &u->capacity[i]);
    }
    u->fds = rt_usage_fds(s);
    u->log_dropped = rt_log_dropped_total();
}

void rt_usage_answer(rt_state *s, const uint8_t *buf, uint32_t len,
                     uint32_t receipts)
{
    uint8_t out[PBX_CAPABI_USAGE_REPORT_BYTES];
    pbx_capabi_usage u;
    pbx_mem_set(&u, 0, sizeof(u));
    pbx_err err = pbx_capabi_usage_query_decode(buf, len, receipts, &u.nonce);
    /* A query takes no capability: whatever it carried is deleted before
     * the descriptors are counted, so the report never counts them. */
    if (receipts != 0U) {
        rt_staged_drop(s);
    }
    u.status = (uint32_t)err;
    if (err == PBX_OK) {
        rt_usage_count(s, &u);
    }
    if (pbx_capabi_usage_encode(&u, out, sizeof(out)) == PBX_OK) {
        (void)pbx_port_notify(&s->port, (int32_t)PBX_CAPABI_SLOT_SUPERVISOR,
                              out, (uint32_t)sizeof(out));
    }
}
