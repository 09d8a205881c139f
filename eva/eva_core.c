/*
 * EVA driver for core/: a core initialised over the arena a small
 * geometry implies (two records per pool, a window of two calls), whose
 * ops answer every outcome (any io status, any deletion result, any slot
 * observed), then driven once through every entry point with abstract
 * inputs: a public frame and a peer reply of every length up to one past
 * the largest frame and of unknown bytes, with any badge, route, slot and
 * receipt count; a time; every route down and up; the broker lost
 * (docs/SECURITY.md, "Abstract interpretation").
 */
#include <__fc_builtin.h>

#include "base/pbx_base.h"
#include "bootstrap/pbx_bootstrap.h"
#include "capabi/pbx_capabi.h"
#include "core/pbx_core.h"
#include "core/pbx_core_layout.h"
#include "eva/eva_common.h"
#include "ipc/pbx_ipc.h"

#define EVA_ARENA  (256U * 1024U)
#define EVA_IN_MAX (PBX_IPC_FRAME_BYTES_MAX + 1U)
#define EVA_FIRST  64U
#define EVA_COUNT  64U

static uint8_t eva_arena[EVA_ARENA] __attribute__((aligned(4096)));
static uint8_t eva_in[EVA_IN_MAX];
static pbx_core_ctx eva_core;
static pbx_core_out eva_out;

static uint32_t eva_u32(void)
{
    return Frama_C_unsigned_int_interval(0, 0xffffffffu);
}

static pbx_core_io eva_io(void)
{
    return (pbx_core_io)Frama_C_interval(0, 2);
}

static pbx_core_io eva_send(void *user, const pbx_core_call *call)
{
    (void)user;
    (void)call;
    return eva_io();
}

static void eva_query(void *user, uint32_t slot, pbx_capabi_observed *out)
{
    (void)user;
    out->slot = slot;
    out->kind = eva_u32();
    out->rights = eva_u32();
    out->provenance = eva_u32();
}

static pbx_core_delete eva_delete(void *user, uint32_t slot)
{
    (void)user;
    (void)slot;
    return (pbx_core_delete)Frama_C_interval(0, 2);
}

static bool eva_reserve(void *user, uint32_t *slot_out)
{
    (void)user;
    *slot_out =
        Frama_C_unsigned_int_interval(EVA_FIRST, EVA_FIRST + EVA_COUNT - 1U);
    return Frama_C_interval(0, 1) != 0;
}

static void eva_release(void *user, uint32_t slot)
{
    (void)user;
    (void)slot;
}

static pbx_core_io eva_alias(void *user, uint32_t object, uint32_t *alias_out)
{
    (void)user;
    (void)object;
    *alias_out =
        Frama_C_unsigned_int_interval(EVA_FIRST, EVA_FIRST + EVA_COUNT - 1U);
    return eva_io();
}

static pbx_core_io eva_wake(void *user, const uint8_t *frame, size_t len)
{
    (void)user;
    (void)frame;
    (void)len;
    return eva_io();
}

static const pbx_core_ops eva_ops = {
    eva_send,    eva_query, eva_delete, eva_reserve,
    eva_release, eva_alias, eva_wake,
};

/* A frame of unknown bytes and of any length; returns the length. */
static size_t eva_frame(void)
{
    Frama_C_make_unknown((char *)eva_in, EVA_IN_MAX);
    return Frama_C_size_t_interval(0, EVA_IN_MAX);
}

/* One event of each kind, with abstract inputs. */
static void eva_events(void)
{
    uint32_t slots[PBX_CORE_RECV_SLOTS_MAX];
    uint32_t dest = 0;
    uint64_t at = 0;
    bool progressed = false;
    for (unsigned i = 0; i < PBX_CORE_RECV_SLOTS_MAX; i++) {
        slots[i] = Frama_C_unsigned_int_interval(EVA_FIRST,
                                                 EVA_FIRST + EVA_COUNT - 1U);
    }
    size_t n = eva_frame();
    size_t count = Frama_C_size_t_interval(0, PBX_CORE_RECV_SLOTS_MAX);
    uint32_t badge = eva_u32();
    (void)pbx_core_commit_dest(&eva_core, badge, eva_in, n, count, &dest);
    (void)pbx_core_on_public(&eva_core, badge, eva_in, n, slots, count,
                             &eva_out);
    n = eva_frame();
    (void)pbx_core_on_peer_reply(
        &eva_core, Frama_C_unsigned_int_interval(0, PBX_CORE_ROUTE_SCOPE),
        eva_u32(), eva_in, n, slots, count);
    (void)pbx_core_on_reply_delivered(&eva_core, eva_u32(), eva_u32(),
                                      Frama_C_interval(0, 1) != 0);
    (void)pbx_core_on_time(&eva_core, (uint64_t)eva_u32());
    pbx_core_on_tick(&eva_core);
    (void)pbx_core_step(&eva_core, &progressed);
    pbx_core_route r =
        (pbx_core_route)Frama_C_interval(0, (int)PBX_CORE_ROUTE_COUNT - 1);
    (void)pbx_core_on_route_down(&eva_core, r);
    (void)pbx_core_on_route_up(&eva_core, r);
    pbx_core_on_route_ready(&eva_core, r);
    (void)pbx_core_on_broker_lost(&eva_core);
    (void)pbx_core_next_deadline(&eva_core, &at);
    (void)pbx_core_public_ready(&eva_core);
    (void)pbx_core_peer_ready(&eva_core);
    (void)pbx_core_tick_wanted(&eva_core);
    (void)pbx_core_calls_outstanding(&eva_core);
    (void)pbx_core_exit_status(&eva_core);
    (void)pbx_core_held_caps(&eva_core);
    (void)pbx_core_prompt_share(eva_u32());
}

/* The entry point EVA starts from (-main eva_main). */
void eva_main(void);
void eva_main(void)
{
    pbx_bootstrap_layout l;
    pbx_capabi_layout slots;
    if (!eva_layout(&l) || l.arena_bytes > sizeof(eva_arena) ||
        pbx_capabi_layout_init(&slots, EVA_FIRST, EVA_COUNT) != PBX_OK) {
        return;
    }
    if (pbx_core_init(&eva_core, &l, eva_arena, l.arena_bytes, &slots, &eva_ops,
                      NULL) != PBX_OK) {
        return;
    }
    eva_events();
}
