/*
 * rt_tslot.c: the runtime's record of each transient slot's state, the
 * word bitmap that finds a free one, and the judged record that lets a
 * descriptor be queried through the port once, at receipt (issue 23 item
 * 4).
 *
 * Why a judgment may be kept: powerboxd runs one thread, and only the
 * port, called from here, changes what a slot number holds. Every such
 * change in the transient range is followed by a state write through
 * rt_tset, which forgets the slot's judgment; a startup route slot changes
 * only by ROUTE_ATTACH, which forgets it through rt_judged_forget. What a
 * judgment records cannot move against powerboxd meanwhile: a connected
 * sequenced-packet socket keeps its type, its connected state and its
 * peer's credentials (SO_PEERCRED is fixed at connect) for its lifetime,
 * and a memory object's seals only grow, which leaves a recorded WRITE
 * right the kernel already refuses. A descriptor closed and a new one
 * received at the same number is judged afresh.
 */
#include "powerboxd/runtime/rt_int.h"

/** RT_WORD_BITS is the number of transient indexes one bitmap word holds. */
#define RT_WORD_BITS 64U

_Static_assert((PBX_RT_TRANSIENT_MAX + RT_WORD_BITS - 1U) / RT_WORD_BITS <=
                   RT_WORD_BITS,
               "tfull holds one bit per word of tbusy");

void rt_tset(rt_state *s, uint32_t index, rt_tstate state)
{
    uint64_t bit = UINT64_C(1) << (index % RT_WORD_BITS);
    s->tstate[index] = (uint8_t)state;
    s->tjudged[index] = 0U;
    uint32_t w = index / RT_WORD_BITS;
    if (state == RT_T_FREE) {
        s->tbusy[w] &= ~bit;
    } else {
        s->tbusy[w] |= bit;
    }
    if (s->tbusy[w] == UINT64_MAX) {
        s->tfull |= UINT64_C(1) << w;
    } else {
        s->tfull &= ~(UINT64_C(1) << w);
    }
}

bool rt_tfree_find(const rt_state *s, uint32_t *index)
{
    uint32_t count = s->slots.transient_count;
    if (count > PBX_RT_TRANSIENT_MAX) {
        count = PBX_RT_TRANSIENT_MAX;
    }
    /* Two steps, whatever the range's size: the lowest word that is not
     * full, then its lowest free index, as the record-by-record scan this
     * replaces found. Bits past count stay clear, so a free bit there
     * means the range is full. */
    if (s->tfull == UINT64_MAX) {
        return false;
    }
    uint32_t w = (uint32_t)__builtin_ctzll(~s->tfull);
    if ((size_t)w * RT_WORD_BITS >= count) {
        return false;
    }
    uint32_t i = w * RT_WORD_BITS + (uint32_t)__builtin_ctzll(~s->tbusy[w]);
    *index = i;
    return i < count;
}

/* The judged record's entry for slot: a transient index, or, once the
 * service loop runs, a core route's startup slot; NULL when slot's
 * judgment is never kept (any other startup slot, and every slot during
 * startup, where the inventory is judged live before and after the public
 * endpoint is created). */
static pbx_port_slot_info *rt_judged_entry(rt_state *s, uint32_t slot,
                                           uint8_t **judged)
{
    uint32_t t = 0;
    if (pbx_capabi_transient_index(&s->slots, slot, &t) == PBX_OK &&
        t < PBX_RT_TRANSIENT_MAX) {
        *judged = &s->tjudged[t];
        return &s->tinfo[t];
    }
    if (s->judge_routes == 0U) {
        return NULL;
    }
    for (uint32_t r = 0; r < (uint32_t)PBX_CORE_ROUTE_COUNT; r++) {
        if ((int32_t)slot == rt_route_slot_of(r)) {
            *judged = &s->rjudged[r];
            return &s->rinfo[r];
        }
    }
    return NULL;
}

pbx_err rt_judged_query(rt_state *s, uint32_t slot, pbx_port_slot_info *info)
{
    uint8_t *judged = NULL;
    pbx_port_slot_info *rec = rt_judged_entry(s, slot, &judged);
    if (rec != NULL && *judged != 0U) {
        *info = *rec;
        return PBX_OK;
    }
    if (slot > (uint32_t)INT32_MAX) {
        return PBX_E_PORT_SLOT_RANGE;
    }
    pbx_err err = pbx_port_slot_query(&s->port, (int32_t)slot, info);
    if (err == PBX_OK && rec != NULL) {
        *rec = *info;
        *judged = 1U;
    }
    return err;
}

bool rt_judged_identity(rt_state *s, uint32_t slot, uint64_t *identity)
{
    uint8_t *judged = NULL;
    const pbx_port_slot_info *rec = rt_judged_entry(s, slot, &judged);
    if (rec == NULL || *judged == 0U) {
        return false;
    }
    if ((rec->flags & PBX_PORT_INFO_IDENTITY) != 0U) {
        *identity = rec->object_id;
        return true;
    }
    /* An empty slot and a placeholder have no identity on every port. */
    if (rec->kind == (uint32_t)PBX_PORT_KIND_EMPTY ||
        rec->kind == (uint32_t)PBX_PORT_KIND_PLACEHOLDER) {
        *identity = 0U;
        return true;
    }
    return false;
}

void rt_judged_forget(rt_state *s, uint32_t slot)
{
    uint8_t *judged = NULL;
    if (rt_judged_entry(s, slot, &judged) != NULL) {
        *judged = 0U;
    }
}
