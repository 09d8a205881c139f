/*
 * pbx_capabi.c: the expectation tables and the pure judges of observed
 * slots. Nothing here keeps state or changes a slot; the runtime queries,
 * this layer decides, and only then does the runtime act.
 */
#include "capabi/pbx_capabi.h"

/* Root-transferred peer routes are SEND only: powerboxd calls its peers
 * and never receives on, grants onward or manages their endpoints. */
#define PBX_CAPABI_PEER_RIGHTS PBX_CAPABI_RIGHT_SEND

static const pbx_capabi_expect pbx_capabi_table[PBX_CAPABI_ENTRY_COUNT] = {
    {PBX_CAPABI_SLOT_PBX1, PBX_CAPABI_KIND_MEMORY, PBX_CAPABI_RIGHT_READ,
     PBX_CAPABI_PROV_ROOT_TRANSFERRED, "pbx1"},
    {PBX_CAPABI_SLOT_SUPERVISOR, PBX_CAPABI_KIND_NOTIFY, PBX_CAPABI_PEER_RIGHTS,
     PBX_CAPABI_PROV_ROOT_TRANSFERRED, "supervisor"},
    {PBX_CAPABI_SLOT_VFSD, PBX_CAPABI_KIND_ENDPOINT, PBX_CAPABI_PEER_RIGHTS,
     PBX_CAPABI_PROV_ROOT_TRANSFERRED, "vfsd"},
    {PBX_CAPABI_SLOT_TTYD, PBX_CAPABI_KIND_ENDPOINT, PBX_CAPABI_PEER_RIGHTS,
     PBX_CAPABI_PROV_ROOT_TRANSFERRED, "ttyd"},
    {PBX_CAPABI_SLOT_PROCD, PBX_CAPABI_KIND_ENDPOINT, PBX_CAPABI_PEER_RIGHTS,
     PBX_CAPABI_PROV_ROOT_TRANSFERRED, "procd"},
    {PBX_CAPABI_SLOT_LAUNCHD, PBX_CAPABI_KIND_NOTIFY, PBX_CAPABI_PEER_RIGHTS,
     PBX_CAPABI_PROV_ROOT_TRANSFERRED, "launchd"},
    {PBX_CAPABI_SLOT_PUBLIC, PBX_CAPABI_KIND_ENDPOINT, PBX_CAPABI_RIGHT_RECEIVE,
     PBX_CAPABI_PROV_LOCAL, "public"},
    /* Launchd's broker endpoint: powerboxd only receives on it (and
     * answers each message it received), so RECEIVE is its one right. */
    {PBX_CAPABI_SLOT_BROKER, PBX_CAPABI_KIND_ENDPOINT, PBX_CAPABI_RIGHT_RECEIVE,
     PBX_CAPABI_PROV_ROOT_TRANSFERRED, "broker"},
};

/* The layout's fixed relationships. The entry order in the table is the
 * slot order, so a slot maps to its entry by subtraction. */
_Static_assert(PBX_CAPABI_HOST_END <= PBX_CAPABI_STARTUP_FIRST,
               "host slots precede the startup inventory");
_Static_assert(PBX_CAPABI_SLOT_PBX1 ==
                   PBX_CAPABI_STARTUP_FIRST + PBX_CAPABI_ENTRY_PBX1,
               "pbx1 slot");
_Static_assert(PBX_CAPABI_SLOT_SUPERVISOR ==
                   PBX_CAPABI_STARTUP_FIRST + PBX_CAPABI_ENTRY_SUPERVISOR,
               "supervisor slot");
_Static_assert(PBX_CAPABI_SLOT_VFSD ==
                   PBX_CAPABI_STARTUP_FIRST + PBX_CAPABI_ENTRY_VFSD,
               "vfsd slot");
_Static_assert(PBX_CAPABI_SLOT_TTYD ==
                   PBX_CAPABI_STARTUP_FIRST + PBX_CAPABI_ENTRY_TTYD,
               "ttyd slot");
_Static_assert(PBX_CAPABI_SLOT_PROCD ==
                   PBX_CAPABI_STARTUP_FIRST + PBX_CAPABI_ENTRY_PROCD,
               "procd slot");
_Static_assert(PBX_CAPABI_SLOT_LAUNCHD ==
                   PBX_CAPABI_STARTUP_FIRST + PBX_CAPABI_ENTRY_LAUNCHD,
               "launchd slot");
_Static_assert(PBX_CAPABI_SLOT_PUBLIC ==
                   PBX_CAPABI_STARTUP_FIRST + PBX_CAPABI_ENTRY_PUBLIC,
               "public slot");
_Static_assert(PBX_CAPABI_SLOT_BROKER ==
                   PBX_CAPABI_STARTUP_FIRST + PBX_CAPABI_ENTRY_BROKER,
               "broker slot");
_Static_assert(PBX_CAPABI_ENTRY_COUNT == 8 && PBX_CAPABI_STARTUP_END == 11U,
               "eight startup entries, slots 3..10");
_Static_assert((uint32_t)PBX_CAPABI_ENTRY_COUNT < 32U,
               "inventory bit sets fit a uint32_t");
_Static_assert(PBX_CAPABI_STARTUP_END == PBX_CAPABI_PORT_FIRST,
               "port slots follow the startup inventory");
_Static_assert(PBX_CAPABI_PORT_FIRST < PBX_CAPABI_FIXED_END,
               "the port has private slots");
_Static_assert(PBX_CAPABI_TRANSIENT_FIRST_DEFAULT >= PBX_CAPABI_FIXED_END,
               "default transient range does not overlap the fixed slots");
_Static_assert(PBX_CAPABI_TRANSIENT_COUNT_DEFAULT > 0U,
               "default transient range is not empty");
_Static_assert(PBX_CAPABI_TRANSIENT_FIRST_DEFAULT +
                       PBX_CAPABI_TRANSIENT_COUNT_DEFAULT <=
                   1024U,
               "default range fits Linux's default soft RLIMIT_NOFILE");
_Static_assert(1024U <= PBX_CAPABI_SLOT_LIMIT, "slot space holds the default");
_Static_assert(PBX_CAPABI_SLOT_LIMIT <= (uint32_t)INT32_MAX,
               "every slot is a valid int32_t port slot");
_Static_assert((PBX_CAPABI_RIGHT_SEND | PBX_CAPABI_RIGHT_RECEIVE |
                PBX_CAPABI_RIGHT_GRANT | PBX_CAPABI_RIGHT_MANAGE |
                PBX_CAPABI_RIGHT_READ | PBX_CAPABI_RIGHT_WRITE) ==
                   PBX_CAPABI_RIGHTS_KNOWN,
               "known rights are exactly the defined bits");

const pbx_capabi_expect *pbx_capabi_expected(pbx_capabi_entry entry)
{
    PBX_ASSERT((uint32_t)entry < (uint32_t)PBX_CAPABI_ENTRY_COUNT);
    return &pbx_capabi_table[entry];
}

bool pbx_capabi_entry_for_slot(uint32_t slot, pbx_capabi_entry *entry)
{
    PBX_ASSERT(entry != NULL);
    if (slot < PBX_CAPABI_STARTUP_FIRST || slot >= PBX_CAPABI_STARTUP_END) {
        return false;
    }
    *entry = (pbx_capabi_entry)(slot - PBX_CAPABI_STARTUP_FIRST);
    return true;
}

pbx_err pbx_capabi_layout_init(pbx_capabi_layout *layout, uint32_t first,
                               uint32_t count)
{
    PBX_ASSERT(layout != NULL);
    if (count == 0U) {
        return PBX_E_CAPABI_TRANSIENT_EMPTY;
    }
    if (first < PBX_CAPABI_FIXED_END) {
        return PBX_E_CAPABI_TRANSIENT_OVERLAP;
    }
    /* Written as a subtraction so that first + count cannot wrap. */
    if (first >= PBX_CAPABI_SLOT_LIMIT ||
        count > PBX_CAPABI_SLOT_LIMIT - first) {
        return PBX_E_CAPABI_SLOT_RANGE;
    }
    layout->transient_first = first;
    layout->transient_count = count;
    return PBX_OK;
}

/* A valid layout is one pbx_capabi_layout_init could have written. */
static void pbx_capabi_layout_assert(const pbx_capabi_layout *layout)
{
    PBX_ASSERT(layout != NULL);
    PBX_ASSERT(layout->transient_count != 0U);
    PBX_ASSERT(layout->transient_first >= PBX_CAPABI_FIXED_END);
    PBX_ASSERT(layout->transient_first < PBX_CAPABI_SLOT_LIMIT);
    PBX_ASSERT(layout->transient_count <=
               PBX_CAPABI_SLOT_LIMIT - layout->transient_first);
}

pbx_capabi_slot_class pbx_capabi_slot_classify(const pbx_capabi_layout *layout,
                                               uint32_t slot)
{
    pbx_capabi_layout_assert(layout);
    if (slot >= PBX_CAPABI_SLOT_LIMIT) {
        return PBX_CAPABI_CLASS_OUT_OF_RANGE;
    }
    if (slot < PBX_CAPABI_HOST_END) {
        return PBX_CAPABI_CLASS_HOST;
    }
    if (slot < PBX_CAPABI_STARTUP_END) {
        return PBX_CAPABI_CLASS_STARTUP;
    }
    if (slot < PBX_CAPABI_FIXED_END) {
        return PBX_CAPABI_CLASS_PORT;
    }
    if (slot >= layout->transient_first &&
        slot - layout->transient_first < layout->transient_count) {
        return PBX_CAPABI_CLASS_TRANSIENT;
    }
    return PBX_CAPABI_CLASS_FREE;
}

pbx_err pbx_capabi_transient_index(const pbx_capabi_layout *layout,
                                   uint32_t slot, uint32_t *index)
{
    PBX_ASSERT(index != NULL);
    switch (pbx_capabi_slot_classify(layout, slot)) {
    case PBX_CAPABI_CLASS_TRANSIENT:
        *index = slot - layout->transient_first;
        return PBX_OK;
    case PBX_CAPABI_CLASS_OUT_OF_RANGE:
        return PBX_E_CAPABI_SLOT_RANGE;
    default:
        return PBX_E_CAPABI_SLOT_UNEXPECTED;
    }
}

uint32_t pbx_capabi_transient_slot(const pbx_capabi_layout *layout,
                                   uint32_t index)
{
    pbx_capabi_layout_assert(layout);
    PBX_ASSERT(index < layout->transient_count);
    return layout->transient_first + index;
}

/* Judges an occupied slot against one exact expectation: kind first (the
 * rights of a wrong kind mean nothing), then how it arrived (a capability
 * that should not be here at all), then the rights in both directions. */
static pbx_err pbx_capabi_match(const pbx_capabi_observed *obs, uint32_t kind,
                                uint32_t rights, uint32_t provenance)
{
    if (obs->kind != kind) {
        return PBX_E_CAPABI_KIND;
    }
    if (obs->provenance != provenance) {
        return PBX_E_CAPABI_PROVENANCE;
    }
    if ((obs->rights & rights) != rights) {
        return PBX_E_CAPABI_RIGHTS_MISSING;
    }
    if ((obs->rights & ~rights) != 0U) {
        return PBX_E_CAPABI_RIGHTS_EXTRA;
    }
    return PBX_OK;
}

/* Maps a slot to its startup entry, or says why it has none. */
static pbx_err pbx_capabi_startup_slot(uint32_t slot, pbx_capabi_entry *entry)
{
    if (slot >= PBX_CAPABI_SLOT_LIMIT) {
        return PBX_E_CAPABI_SLOT_RANGE;
    }
    if (!pbx_capabi_entry_for_slot(slot, entry)) {
        return PBX_E_CAPABI_SLOT_UNEXPECTED;
    }
    return PBX_OK;
}

pbx_err pbx_capabi_check_entry(const pbx_capabi_observed *obs)
{
    pbx_capabi_entry entry = PBX_CAPABI_ENTRY_PBX1;
    PBX_ASSERT(obs != NULL);
    pbx_err err = pbx_capabi_startup_slot(obs->slot, &entry);
    if (err != PBX_OK) {
        return err;
    }
    if (obs->kind == (uint32_t)PBX_CAPABI_KIND_EMPTY) {
        return PBX_E_CAPABI_ENTRY_MISSING;
    }
    const pbx_capabi_expect *want = &pbx_capabi_table[entry];
    return pbx_capabi_match(obs, want->kind, want->rights, want->provenance);
}

/* Judges observation obs of an inventory for phase, recording in *seen
 * (bit per entry) which entries were observed occupied. */
static pbx_err pbx_capabi_check_one(const pbx_capabi_observed *obs,
                                    pbx_capabi_phase phase, uint32_t *seen,
                                    uint32_t *observed)
{
    pbx_capabi_entry entry = PBX_CAPABI_ENTRY_PBX1;
    pbx_err err = pbx_capabi_startup_slot(obs->slot, &entry);
    if (err != PBX_OK) {
        return err;
    }
    uint32_t bit = 1U << (uint32_t)entry;
    if ((*observed & bit) != 0U) {
        return PBX_E_CAPABI_SLOT_DUPLICATE;
    }
    *observed |= bit;
    if (entry == PBX_CAPABI_ENTRY_PUBLIC && phase == PBX_CAPABI_PHASE_STARTUP) {
        /* Before powerboxd creates it, anything in the public slot came
         * with the startup transfer: a self-transfer, never accepted. */
        return obs->kind == (uint32_t)PBX_CAPABI_KIND_EMPTY
                   ? PBX_OK
                   : PBX_E_CAPABI_PROVENANCE;
    }
    err = pbx_capabi_check_entry(obs);
    if (err == PBX_OK) {
        *seen |= bit;
    }
    return err;
}

pbx_err pbx_capabi_check_inventory(const pbx_capabi_observed *obs, size_t count,
                                   pbx_capabi_phase phase, size_t *bad_index)
{
    PBX_ASSERT(count == 0U || obs != NULL);
    PBX_ASSERT(phase == PBX_CAPABI_PHASE_STARTUP ||
               phase == PBX_CAPABI_PHASE_READY);
    uint32_t seen = 0;
    uint32_t observed = 0;
    /* Bounded by count; every observation is judged before any verdict
     * on missing entries, so the first bad observation is reported. */
    for (size_t i = 0; i < count; i++) {
        pbx_err err = pbx_capabi_check_one(&obs[i], phase, &seen, &observed);
        if (err != PBX_OK) {
            if (bad_index != NULL) {
                *bad_index = i;
            }
            return err;
        }
    }
    uint32_t need = (1U << (uint32_t)PBX_CAPABI_ENTRY_COUNT) - 1U;
    if (phase == PBX_CAPABI_PHASE_STARTUP) {
        need &= ~(1U << (uint32_t)PBX_CAPABI_ENTRY_PUBLIC);
    }
    if ((seen & need) != need) {
        if (bad_index != NULL) {
            *bad_index = count;
        }
        return PBX_E_CAPABI_ENTRY_MISSING;
    }
    return PBX_OK;
}

pbx_err pbx_capabi_check_receipt(const pbx_capabi_layout *layout,
                                 const pbx_capabi_observed *obs,
                                 pbx_capabi_receipt receipt)
{
    uint32_t index = 0;
    uint32_t rights = PBX_CAPABI_RIGHT_SEND;
    uint32_t provenance = PBX_CAPABI_PROV_RECEIVED;
    PBX_ASSERT(obs != NULL);
    switch (receipt) {
    case PBX_CAPABI_RECEIPT_SCOPE:
    case PBX_CAPABI_RECEIPT_OBJECT:
        break;
    case PBX_CAPABI_RECEIPT_REVOCATION:
        rights = PBX_CAPABI_RIGHT_MANAGE;
        break;
    case PBX_CAPABI_RECEIPT_ALIAS:
        provenance = PBX_CAPABI_PROV_LOCAL;
        break;
    default:
        PBX_ASSERT(false);
        break;
    }
    pbx_err err = pbx_capabi_transient_index(layout, obs->slot, &index);
    if (err != PBX_OK) {
        return err;
    }
    if (obs->kind == (uint32_t)PBX_CAPABI_KIND_EMPTY ||
        obs->kind == (uint32_t)PBX_CAPABI_KIND_PLACEHOLDER) {
        return PBX_E_CAPABI_ENTRY_MISSING;
    }
    return pbx_capabi_match(obs, PBX_CAPABI_KIND_ENDPOINT, rights, provenance);
}
