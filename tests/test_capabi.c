/*
 * test_capabi.c: the startup routes validate when exact, every distinct
 * failure is reported with its own error, and slot classification holds
 * at every boundary of the layout.
 */
#include "capabi/pbx_capabi.h"
#include "runner/pbx_test.h"

#include <string.h>

/* The exact observation of entry e in the ready phase. */
static pbx_capabi_observed exact(pbx_capabi_entry e)
{
    const pbx_capabi_expect *w = pbx_capabi_expected(e);
    pbx_capabi_observed o = {w->slot, w->kind, w->rights, w->provenance};
    return o;
}

/* Fills inv with the exact ready-phase inventory in slot order. */
static void ready_inventory(pbx_capabi_observed inv[PBX_CAPABI_ENTRY_COUNT])
{
    for (unsigned e = 0; e < (unsigned)PBX_CAPABI_ENTRY_COUNT; e++) {
        inv[e] = exact((pbx_capabi_entry)e);
    }
}

static pbx_capabi_layout default_layout(void)
{
    pbx_capabi_layout l;
    PBX_REQUIRE(pbx_capabi_layout_init(&l, PBX_CAPABI_TRANSIENT_FIRST_DEFAULT,
                                       PBX_CAPABI_TRANSIENT_COUNT_DEFAULT) ==
                PBX_OK);
    return l;
}

PBX_TEST(capabi_table_matches_the_documented_routes)
{
    static const struct {
        pbx_capabi_entry e;
        uint32_t slot, kind, rights, prov;
        const char *name;
    } want[] = {
        {PBX_CAPABI_ENTRY_PBX1, 3, PBX_CAPABI_KIND_MEMORY,
         PBX_CAPABI_RIGHT_READ, PBX_CAPABI_PROV_ROOT_TRANSFERRED, "pbx1"},
        {PBX_CAPABI_ENTRY_SUPERVISOR, 4, PBX_CAPABI_KIND_NOTIFY,
         PBX_CAPABI_RIGHT_SEND, PBX_CAPABI_PROV_ROOT_TRANSFERRED, "supervisor"},
        {PBX_CAPABI_ENTRY_VFSD, 5, PBX_CAPABI_KIND_ENDPOINT,
         PBX_CAPABI_RIGHT_SEND, PBX_CAPABI_PROV_ROOT_TRANSFERRED, "vfsd"},
        {PBX_CAPABI_ENTRY_TTYD, 6, PBX_CAPABI_KIND_ENDPOINT,
         PBX_CAPABI_RIGHT_SEND, PBX_CAPABI_PROV_ROOT_TRANSFERRED, "ttyd"},
        {PBX_CAPABI_ENTRY_PROCD, 7, PBX_CAPABI_KIND_ENDPOINT,
         PBX_CAPABI_RIGHT_SEND, PBX_CAPABI_PROV_ROOT_TRANSFERRED, "procd"},
        {PBX_CAPABI_ENTRY_LAUNCHD, 8, PBX_CAPABI_KIND_NOTIFY,
         PBX_CAPABI_RIGHT_SEND, PBX_CAPABI_PROV_ROOT_TRANSFERRED, "launchd"},
        {PBX_CAPABI_ENTRY_PUBLIC, 9, PBX_CAPABI_KIND_ENDPOINT,
         PBX_CAPABI_RIGHT_RECEIVE, PBX_CAPABI_PROV_LOCAL, "public"},
        {PBX_CAPABI_ENTRY_BROKER, 10, PBX_CAPABI_KIND_ENDPOINT,
         PBX_CAPABI_RIGHT_RECEIVE, PBX_CAPABI_PROV_ROOT_TRANSFERRED, "broker"},
    };
    PBX_CHECK_EQ(sizeof(want) / sizeof(want[0]), PBX_CAPABI_ENTRY_COUNT);
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        const pbx_capabi_expect *w = pbx_capabi_expected(want[i].e);
        pbx_capabi_entry back = PBX_CAPABI_ENTRY_COUNT;
        PBX_CHECK_EQ(w->slot, want[i].slot);
        PBX_CHECK_EQ(w->kind, want[i].kind);
        PBX_CHECK_EQ(w->rights, want[i].rights);
        PBX_CHECK_EQ(w->provenance, want[i].prov);
        PBX_CHECK(strcmp(w->name, want[i].name) == 0);
        PBX_CHECK(pbx_capabi_entry_for_slot(w->slot, &back));
        PBX_CHECK_EQ(back, want[i].e);
    }
}

PBX_TEST(capabi_entry_for_slot_boundaries)
{
    pbx_capabi_entry e = PBX_CAPABI_ENTRY_TTYD;
    PBX_CHECK(!pbx_capabi_entry_for_slot(0, &e));
    PBX_CHECK(!pbx_capabi_entry_for_slot(PBX_CAPABI_STARTUP_FIRST - 1U, &e));
    PBX_CHECK(!pbx_capabi_entry_for_slot(PBX_CAPABI_STARTUP_END, &e));
    PBX_CHECK(!pbx_capabi_entry_for_slot(UINT32_MAX, &e));
    PBX_CHECK_EQ(e, PBX_CAPABI_ENTRY_TTYD);
    PBX_CHECK(pbx_capabi_entry_for_slot(PBX_CAPABI_STARTUP_FIRST, &e));
    PBX_CHECK_EQ(e, PBX_CAPABI_ENTRY_PBX1);
    PBX_CHECK(pbx_capabi_entry_for_slot(PBX_CAPABI_STARTUP_END - 1U, &e));
    PBX_CHECK_EQ(e, PBX_CAPABI_ENTRY_BROKER);
    PBX_CHECK_EQ(PBX_CAPABI_STARTUP_END, PBX_CAPABI_SLOT_BROKER + 1U);
    PBX_CHECK(!pbx_capabi_entry_for_slot(PBX_CAPABI_PORT_FIRST, &e));
    PBX_CHECK_EQ(e, PBX_CAPABI_ENTRY_BROKER);
}

/* The broker endpoint fails each way on its own: it must be there, be an
 * endpoint, have been handed over at startup (never made by powerboxd),
 * and carry exactly RECEIVE. A SEND-only connection (an ordinary
 * caller's) is missing RECEIVE; a connection with both is over-righted. */
PBX_TEST(capabi_broker_entry_failures)
{
    static const struct {
        uint32_t kind, rights, prov;
        pbx_err want;
    } cases[] = {
        {PBX_CAPABI_KIND_EMPTY, 0U, PBX_CAPABI_PROV_UNKNOWN,
         PBX_E_CAPABI_ENTRY_MISSING},
        {PBX_CAPABI_KIND_NOTIFY, PBX_CAPABI_RIGHT_RECEIVE,
         PBX_CAPABI_PROV_ROOT_TRANSFERRED, PBX_E_CAPABI_KIND},
        {PBX_CAPABI_KIND_STREAM, PBX_CAPABI_RIGHT_RECEIVE,
         PBX_CAPABI_PROV_ROOT_TRANSFERRED, PBX_E_CAPABI_KIND},
        {PBX_CAPABI_KIND_PLACEHOLDER, PBX_CAPABI_RIGHT_RECEIVE,
         PBX_CAPABI_PROV_ROOT_TRANSFERRED, PBX_E_CAPABI_KIND},
        {PBX_CAPABI_KIND_ENDPOINT, PBX_CAPABI_RIGHT_RECEIVE,
         PBX_CAPABI_PROV_LOCAL, PBX_E_CAPABI_PROVENANCE},
        {PBX_CAPABI_KIND_ENDPOINT, PBX_CAPABI_RIGHT_RECEIVE,
         PBX_CAPABI_PROV_RECEIVED, PBX_E_CAPABI_PROVENANCE},
        {PBX_CAPABI_KIND_ENDPOINT, PBX_CAPABI_RIGHT_SEND,
         PBX_CAPABI_PROV_ROOT_TRANSFERRED, PBX_E_CAPABI_RIGHTS_MISSING},
        {PBX_CAPABI_KIND_ENDPOINT, 0U, PBX_CAPABI_PROV_ROOT_TRANSFERRED,
         PBX_E_CAPABI_RIGHTS_MISSING},
        {PBX_CAPABI_KIND_ENDPOINT,
         PBX_CAPABI_RIGHT_RECEIVE | PBX_CAPABI_RIGHT_SEND,
         PBX_CAPABI_PROV_ROOT_TRANSFERRED, PBX_E_CAPABI_RIGHTS_EXTRA},
        {PBX_CAPABI_KIND_ENDPOINT,
         PBX_CAPABI_RIGHT_RECEIVE | PBX_CAPABI_RIGHT_MANAGE,
         PBX_CAPABI_PROV_ROOT_TRANSFERRED, PBX_E_CAPABI_RIGHTS_EXTRA},
        {PBX_CAPABI_KIND_ENDPOINT, PBX_CAPABI_RIGHT_RECEIVE,
         PBX_CAPABI_PROV_ROOT_TRANSFERRED, PBX_OK},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        pbx_capabi_observed inv[PBX_CAPABI_ENTRY_COUNT];
        size_t bad = 99;
        pbx_capabi_observed o = {PBX_CAPABI_SLOT_BROKER, cases[i].kind,
                                 cases[i].rights, cases[i].prov};
        PBX_CHECK_EQ(pbx_capabi_check_entry(&o), cases[i].want);
        /* The same verdict in both phases: unlike the public endpoint,
         * the broker must already be present at startup. */
        for (int ph = 0; ph < 2; ph++) {
            ready_inventory(inv);
            if (ph == 0) {
                inv[PBX_CAPABI_ENTRY_PUBLIC].kind = PBX_CAPABI_KIND_EMPTY;
            }
            inv[PBX_CAPABI_ENTRY_BROKER] = o;
            PBX_CHECK_EQ(
                pbx_capabi_check_inventory(inv, PBX_CAPABI_ENTRY_COUNT,
                                           ph == 0 ? PBX_CAPABI_PHASE_STARTUP
                                                   : PBX_CAPABI_PHASE_READY,
                                           &bad),
                cases[i].want);
            PBX_CHECK_EQ(bad, cases[i].want == PBX_OK
                                  ? 99U
                                  : (size_t)PBX_CAPABI_ENTRY_BROKER);
        }
    }
}

PBX_TEST(capabi_every_route_validates_when_exact)
{
    pbx_capabi_observed inv[PBX_CAPABI_ENTRY_COUNT];
    size_t bad = 99;
    ready_inventory(inv);
    for (unsigned e = 0; e < (unsigned)PBX_CAPABI_ENTRY_COUNT; e++) {
        PBX_CHECK_EQ(pbx_capabi_check_entry(&inv[e]), PBX_OK);
    }
    PBX_CHECK_EQ(pbx_capabi_check_inventory(inv, PBX_CAPABI_ENTRY_COUNT,
                                            PBX_CAPABI_PHASE_READY, &bad),
                 PBX_OK);
    PBX_CHECK_EQ(bad, 99U);
}

PBX_TEST(capabi_inventory_order_does_not_matter)
{
    pbx_capabi_observed inv[PBX_CAPABI_ENTRY_COUNT];
    pbx_capabi_observed rev[PBX_CAPABI_ENTRY_COUNT];
    ready_inventory(inv);
    for (size_t i = 0; i < PBX_CAPABI_ENTRY_COUNT; i++) {
        rev[i] = inv[PBX_CAPABI_ENTRY_COUNT - 1U - i];
    }
    PBX_CHECK_EQ(pbx_capabi_check_inventory(rev, PBX_CAPABI_ENTRY_COUNT,
                                            PBX_CAPABI_PHASE_READY, NULL),
                 PBX_OK);
}

PBX_TEST(capabi_startup_phase_wants_an_empty_public_slot)
{
    pbx_capabi_observed inv[PBX_CAPABI_ENTRY_COUNT];
    size_t bad = 99;
    ready_inventory(inv);
    /* Without the public slot at all (the broker takes its place in the
     * array; the order of observations does not matter). */
    inv[PBX_CAPABI_ENTRY_PUBLIC] = exact(PBX_CAPABI_ENTRY_BROKER);
    PBX_CHECK_EQ(pbx_capabi_check_inventory(inv, PBX_CAPABI_ENTRY_COUNT - 1U,
                                            PBX_CAPABI_PHASE_STARTUP, &bad),
                 PBX_OK);
    /* Without the broker as well, its absence is reported. */
    PBX_CHECK_EQ(pbx_capabi_check_inventory(inv, PBX_CAPABI_ENTRY_PUBLIC,
                                            PBX_CAPABI_PHASE_STARTUP, &bad),
                 PBX_E_CAPABI_ENTRY_MISSING);
    PBX_CHECK_EQ(bad, (size_t)PBX_CAPABI_ENTRY_PUBLIC);
    bad = 99;
    ready_inventory(inv);
    /* With the public slot observed empty. */
    inv[PBX_CAPABI_ENTRY_PUBLIC].kind = PBX_CAPABI_KIND_EMPTY;
    inv[PBX_CAPABI_ENTRY_PUBLIC].rights = 0;
    inv[PBX_CAPABI_ENTRY_PUBLIC].provenance = PBX_CAPABI_PROV_UNKNOWN;
    PBX_CHECK_EQ(pbx_capabi_check_inventory(inv, PBX_CAPABI_ENTRY_COUNT,
                                            PBX_CAPABI_PHASE_STARTUP, &bad),
                 PBX_OK);
    PBX_CHECK_EQ(bad, 99U);
    /* The same empty public slot is a missing entry once ready. */
    PBX_CHECK_EQ(pbx_capabi_check_inventory(inv, PBX_CAPABI_ENTRY_COUNT,
                                            PBX_CAPABI_PHASE_READY, &bad),
                 PBX_E_CAPABI_ENTRY_MISSING);
    PBX_CHECK_EQ(bad, PBX_CAPABI_ENTRY_PUBLIC);
}

PBX_TEST(capabi_wrong_kind)
{
    static const uint32_t kinds[] = {PBX_CAPABI_KIND_PLACEHOLDER,
                                     PBX_CAPABI_KIND_ENDPOINT,
                                     PBX_CAPABI_KIND_NOTIFY,
                                     PBX_CAPABI_KIND_STREAM,
                                     PBX_CAPABI_KIND_MEMORY,
                                     PBX_CAPABI_KIND_OTHER,
                                     7U,
                                     UINT32_MAX};
    size_t rejected = 0;
    for (unsigned e = 0; e < (unsigned)PBX_CAPABI_ENTRY_COUNT; e++) {
        for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
            pbx_capabi_observed o = exact((pbx_capabi_entry)e);
            if (kinds[k] == o.kind) {
                continue;
            }
            o.kind = kinds[k];
            PBX_CHECK_EQ(pbx_capabi_check_entry(&o), PBX_E_CAPABI_KIND);
            rejected++;
        }
    }
    PBX_CHECK_EQ(rejected, (sizeof(kinds) / sizeof(kinds[0]) - 1U) *
                               PBX_CAPABI_ENTRY_COUNT);
}

PBX_TEST(capabi_missing_rights)
{
    for (unsigned e = 0; e < (unsigned)PBX_CAPABI_ENTRY_COUNT; e++) {
        pbx_capabi_observed o = exact((pbx_capabi_entry)e);
        uint32_t want = o.rights;
        o.rights = 0;
        PBX_CHECK_EQ(pbx_capabi_check_entry(&o), PBX_E_CAPABI_RIGHTS_MISSING);
        /* Swapping the required right for another is still "missing":
         * the lack is reported before the surplus. */
        o.rights = (want << 1) & PBX_CAPABI_RIGHTS_KNOWN;
        PBX_CHECK_EQ(pbx_capabi_check_entry(&o), PBX_E_CAPABI_RIGHTS_MISSING);
    }
}

PBX_TEST(capabi_extra_rights_are_rejected_not_a_superset)
{
    static const uint32_t extra[] = {PBX_CAPABI_RIGHT_SEND,
                                     PBX_CAPABI_RIGHT_RECEIVE,
                                     PBX_CAPABI_RIGHT_GRANT,
                                     PBX_CAPABI_RIGHT_MANAGE,
                                     PBX_CAPABI_RIGHT_READ,
                                     PBX_CAPABI_RIGHT_WRITE,
                                     0x40U,
                                     0x80000000U};
    size_t rejected = 0;
    for (unsigned e = 0; e < (unsigned)PBX_CAPABI_ENTRY_COUNT; e++) {
        for (size_t x = 0; x < sizeof(extra) / sizeof(extra[0]); x++) {
            pbx_capabi_observed o = exact((pbx_capabi_entry)e);
            if ((o.rights & extra[x]) != 0U) {
                continue;
            }
            o.rights |= extra[x];
            PBX_CHECK_EQ(pbx_capabi_check_entry(&o), PBX_E_CAPABI_RIGHTS_EXTRA);
            rejected++;
        }
        pbx_capabi_observed all = exact((pbx_capabi_entry)e);
        all.rights = UINT32_MAX;
        PBX_CHECK_EQ(pbx_capabi_check_entry(&all), PBX_E_CAPABI_RIGHTS_EXTRA);
    }
    /* Every route has exactly one right, so seven of eight bits are extra. */
    PBX_CHECK_EQ(rejected, 7U * PBX_CAPABI_ENTRY_COUNT);
}

PBX_TEST(capabi_wrong_provenance)
{
    static const uint32_t provs[] = {PBX_CAPABI_PROV_UNKNOWN,
                                     PBX_CAPABI_PROV_ROOT_TRANSFERRED,
                                     PBX_CAPABI_PROV_LOCAL,
                                     PBX_CAPABI_PROV_RECEIVED,
                                     4U,
                                     UINT32_MAX};
    for (unsigned e = 0; e < (unsigned)PBX_CAPABI_ENTRY_COUNT; e++) {
        for (size_t p = 0; p < sizeof(provs) / sizeof(provs[0]); p++) {
            pbx_capabi_observed o = exact((pbx_capabi_entry)e);
            pbx_err want =
                provs[p] == o.provenance ? PBX_OK : PBX_E_CAPABI_PROVENANCE;
            o.provenance = provs[p];
            PBX_CHECK_EQ(pbx_capabi_check_entry(&o), want);
        }
    }
}

PBX_TEST(capabi_locally_created_peer_route_is_rejected)
{
    static const pbx_capabi_entry peers[] = {
        PBX_CAPABI_ENTRY_VFSD, PBX_CAPABI_ENTRY_TTYD, PBX_CAPABI_ENTRY_PROCD,
        PBX_CAPABI_ENTRY_LAUNCHD};
    for (size_t i = 0; i < sizeof(peers) / sizeof(peers[0]); i++) {
        pbx_capabi_observed inv[PBX_CAPABI_ENTRY_COUNT];
        size_t bad = 99;
        ready_inventory(inv);
        inv[peers[i]].provenance = PBX_CAPABI_PROV_LOCAL;
        PBX_CHECK_EQ(pbx_capabi_check_inventory(inv, PBX_CAPABI_ENTRY_COUNT,
                                                PBX_CAPABI_PHASE_READY, &bad),
                     PBX_E_CAPABI_PROVENANCE);
        PBX_CHECK_EQ(bad, peers[i]);
    }
}

PBX_TEST(capabi_startup_self_transfer_of_public_endpoint_is_rejected)
{
    pbx_capabi_observed inv[PBX_CAPABI_ENTRY_COUNT];
    size_t bad = 99;
    ready_inventory(inv);
    /* Anything already in the public slot at startup was transferred in,
     * whatever it claims to be. */
    PBX_CHECK_EQ(pbx_capabi_check_inventory(inv, PBX_CAPABI_ENTRY_COUNT,
                                            PBX_CAPABI_PHASE_STARTUP, &bad),
                 PBX_E_CAPABI_PROVENANCE);
    PBX_CHECK_EQ(bad, PBX_CAPABI_ENTRY_PUBLIC);
    inv[PBX_CAPABI_ENTRY_PUBLIC].provenance = PBX_CAPABI_PROV_ROOT_TRANSFERRED;
    PBX_CHECK_EQ(pbx_capabi_check_inventory(inv, PBX_CAPABI_ENTRY_COUNT,
                                            PBX_CAPABI_PHASE_STARTUP, &bad),
                 PBX_E_CAPABI_PROVENANCE);
    /* And once ready, a root-transferred public endpoint is rejected too. */
    PBX_CHECK_EQ(pbx_capabi_check_inventory(inv, PBX_CAPABI_ENTRY_COUNT,
                                            PBX_CAPABI_PHASE_READY, &bad),
                 PBX_E_CAPABI_PROVENANCE);
    PBX_CHECK_EQ(bad, PBX_CAPABI_ENTRY_PUBLIC);
}

PBX_TEST(capabi_duplicate_slot)
{
    pbx_capabi_observed inv[PBX_CAPABI_ENTRY_COUNT + 1U];
    size_t bad = 99;
    ready_inventory(inv);
    inv[PBX_CAPABI_ENTRY_COUNT] = exact(PBX_CAPABI_ENTRY_TTYD);
    PBX_CHECK_EQ(pbx_capabi_check_inventory(inv, PBX_CAPABI_ENTRY_COUNT + 1U,
                                            PBX_CAPABI_PHASE_READY, &bad),
                 PBX_E_CAPABI_SLOT_DUPLICATE);
    PBX_CHECK_EQ(bad, PBX_CAPABI_ENTRY_COUNT);
    /* A duplicate is caught before the missing entry it displaces. */
    inv[1] = inv[0];
    PBX_CHECK_EQ(pbx_capabi_check_inventory(inv, PBX_CAPABI_ENTRY_COUNT,
                                            PBX_CAPABI_PHASE_READY, &bad),
                 PBX_E_CAPABI_SLOT_DUPLICATE);
    PBX_CHECK_EQ(bad, 1U);
}

PBX_TEST(capabi_slot_out_of_range)
{
    static const uint32_t slots[] = {PBX_CAPABI_SLOT_LIMIT,
                                     PBX_CAPABI_SLOT_LIMIT + 1U, UINT32_MAX};
    for (size_t i = 0; i < sizeof(slots) / sizeof(slots[0]); i++) {
        pbx_capabi_observed inv[PBX_CAPABI_ENTRY_COUNT];
        size_t bad = 99;
        ready_inventory(inv);
        inv[3].slot = slots[i];
        PBX_CHECK_EQ(pbx_capabi_check_entry(&inv[3]), PBX_E_CAPABI_SLOT_RANGE);
        PBX_CHECK_EQ(pbx_capabi_check_inventory(inv, PBX_CAPABI_ENTRY_COUNT,
                                                PBX_CAPABI_PHASE_READY, &bad),
                     PBX_E_CAPABI_SLOT_RANGE);
        PBX_CHECK_EQ(bad, 3U);
    }
}

PBX_TEST(capabi_unexpected_slot_in_inventory)
{
    static const uint32_t slots[] = {0U,
                                     PBX_CAPABI_HOST_END - 1U,
                                     PBX_CAPABI_STARTUP_END,
                                     PBX_CAPABI_FIXED_END - 1U,
                                     PBX_CAPABI_FIXED_END,
                                     PBX_CAPABI_SLOT_LIMIT - 1U};
    for (size_t i = 0; i < sizeof(slots) / sizeof(slots[0]); i++) {
        pbx_capabi_observed inv[PBX_CAPABI_ENTRY_COUNT + 1U];
        size_t bad = 99;
        ready_inventory(inv);
        inv[PBX_CAPABI_ENTRY_COUNT] = exact(PBX_CAPABI_ENTRY_VFSD);
        inv[PBX_CAPABI_ENTRY_COUNT].slot = slots[i];
        PBX_CHECK_EQ(pbx_capabi_check_entry(&inv[PBX_CAPABI_ENTRY_COUNT]),
                     PBX_E_CAPABI_SLOT_UNEXPECTED);
        PBX_CHECK_EQ(pbx_capabi_check_inventory(inv,
                                                PBX_CAPABI_ENTRY_COUNT + 1U,
                                                PBX_CAPABI_PHASE_READY, &bad),
                     PBX_E_CAPABI_SLOT_UNEXPECTED);
        PBX_CHECK_EQ(bad, PBX_CAPABI_ENTRY_COUNT);
    }
}

PBX_TEST(capabi_missing_entry)
{
    for (unsigned drop = 0; drop < (unsigned)PBX_CAPABI_ENTRY_COUNT; drop++) {
        pbx_capabi_observed inv[PBX_CAPABI_ENTRY_COUNT];
        pbx_capabi_observed part[PBX_CAPABI_ENTRY_COUNT];
        size_t n = 0;
        size_t bad = 99;
        ready_inventory(inv);
        for (unsigned e = 0; e < (unsigned)PBX_CAPABI_ENTRY_COUNT; e++) {
            if (e != drop) {
                part[n++] = inv[e];
            }
        }
        PBX_CHECK_EQ(
            pbx_capabi_check_inventory(part, n, PBX_CAPABI_PHASE_READY, &bad),
            PBX_E_CAPABI_ENTRY_MISSING);
        PBX_CHECK_EQ(bad, n);
        /* An observed-empty slot is reported at its own index. */
        inv[drop].kind = PBX_CAPABI_KIND_EMPTY;
        PBX_CHECK_EQ(pbx_capabi_check_entry(&inv[drop]),
                     PBX_E_CAPABI_ENTRY_MISSING);
        PBX_CHECK_EQ(pbx_capabi_check_inventory(inv, PBX_CAPABI_ENTRY_COUNT,
                                                PBX_CAPABI_PHASE_READY, &bad),
                     PBX_E_CAPABI_ENTRY_MISSING);
        PBX_CHECK_EQ(bad, drop);
    }
    PBX_CHECK_EQ(
        pbx_capabi_check_inventory(NULL, 0, PBX_CAPABI_PHASE_STARTUP, NULL),
        PBX_E_CAPABI_ENTRY_MISSING);
}

PBX_TEST(capabi_layout_rejects_empty_overlapping_and_oversized_ranges)
{
    pbx_capabi_layout l = {12345U, 678U};
    const pbx_capabi_layout before = l;
    PBX_CHECK_EQ(pbx_capabi_layout_init(&l, 100, 0),
                 PBX_E_CAPABI_TRANSIENT_EMPTY);
    /* Every first slot below the fixed end overlaps host, startup or port
     * slots. */
    for (uint32_t first = 0; first < PBX_CAPABI_FIXED_END; first++) {
        PBX_CHECK_EQ(pbx_capabi_layout_init(&l, first, 1),
                     PBX_E_CAPABI_TRANSIENT_OVERLAP);
    }
    PBX_CHECK_EQ(pbx_capabi_layout_init(&l, PBX_CAPABI_STARTUP_FIRST,
                                        PBX_CAPABI_TRANSIENT_COUNT_DEFAULT),
                 PBX_E_CAPABI_TRANSIENT_OVERLAP);
    PBX_CHECK_EQ(pbx_capabi_layout_init(&l, PBX_CAPABI_SLOT_LIMIT - 1U, 2),
                 PBX_E_CAPABI_SLOT_RANGE);
    PBX_CHECK_EQ(pbx_capabi_layout_init(&l, PBX_CAPABI_SLOT_LIMIT, 1),
                 PBX_E_CAPABI_SLOT_RANGE);
    PBX_CHECK_EQ(pbx_capabi_layout_init(&l, UINT32_MAX, UINT32_MAX),
                 PBX_E_CAPABI_SLOT_RANGE);
    PBX_CHECK_EQ(pbx_capabi_layout_init(&l, PBX_CAPABI_FIXED_END, UINT32_MAX),
                 PBX_E_CAPABI_SLOT_RANGE);
    PBX_CHECK_MEM(&l, &before, sizeof(l));
    /* The extremes that fit. */
    PBX_CHECK_EQ(
        pbx_capabi_layout_init(&l, PBX_CAPABI_FIXED_END,
                               PBX_CAPABI_SLOT_LIMIT - PBX_CAPABI_FIXED_END),
        PBX_OK);
    PBX_CHECK_EQ(l.transient_first, PBX_CAPABI_FIXED_END);
    PBX_CHECK_EQ(pbx_capabi_layout_init(&l, PBX_CAPABI_SLOT_LIMIT - 1U, 1),
                 PBX_OK);
    PBX_CHECK_EQ(l.transient_count, 1U);
}

/* An independent statement of the layout table, for comparison. */
static pbx_capabi_slot_class model_class(uint32_t first, uint32_t count,
                                         uint32_t slot)
{
    if (slot >= 65536U) {
        return PBX_CAPABI_CLASS_OUT_OF_RANGE;
    }
    if (slot <= 2U) {
        return PBX_CAPABI_CLASS_HOST;
    }
    if (slot <= 10U) {
        return PBX_CAPABI_CLASS_STARTUP;
    }
    if (slot <= 63U) {
        return PBX_CAPABI_CLASS_PORT;
    }
    if ((uint64_t)slot >= first && (uint64_t)slot < (uint64_t)first + count) {
        return PBX_CAPABI_CLASS_TRANSIENT;
    }
    return PBX_CAPABI_CLASS_FREE;
}

PBX_TEST(capabi_classify_every_slot_against_a_model)
{
    static const uint32_t ranges[][2] = {
        {PBX_CAPABI_TRANSIENT_FIRST_DEFAULT,
         PBX_CAPABI_TRANSIENT_COUNT_DEFAULT},
        {100U, 10U},
        {65000U, 536U},
        {64U, 1U},
    };
    for (size_t r = 0; r < sizeof(ranges) / sizeof(ranges[0]); r++) {
        pbx_capabi_layout l;
        size_t wrong = 0;
        PBX_REQUIRE(pbx_capabi_layout_init(&l, ranges[r][0], ranges[r][1]) ==
                    PBX_OK);
        for (uint32_t s = 0; s <= PBX_CAPABI_SLOT_LIMIT + 2U; s++) {
            wrong += pbx_capabi_slot_classify(&l, s) ==
                             model_class(ranges[r][0], ranges[r][1], s)
                         ? 0U
                         : 1U;
        }
        PBX_CHECK_EQ(wrong, 0U);
        PBX_CHECK_EQ(pbx_capabi_slot_classify(&l, UINT32_MAX),
                     PBX_CAPABI_CLASS_OUT_OF_RANGE);
    }
}

PBX_TEST(capabi_classify_boundaries_of_the_default_layout)
{
    const pbx_capabi_layout l = default_layout();
    static const struct {
        uint32_t slot;
        pbx_capabi_slot_class want;
    } cases[] = {
        {0, PBX_CAPABI_CLASS_HOST},
        {2, PBX_CAPABI_CLASS_HOST},
        {3, PBX_CAPABI_CLASS_STARTUP},
        {9, PBX_CAPABI_CLASS_STARTUP},
        {10, PBX_CAPABI_CLASS_STARTUP},
        {11, PBX_CAPABI_CLASS_PORT},
        {63, PBX_CAPABI_CLASS_PORT},
        {64, PBX_CAPABI_CLASS_TRANSIENT},
        {1023, PBX_CAPABI_CLASS_TRANSIENT},
        {1024, PBX_CAPABI_CLASS_FREE},
        {65535, PBX_CAPABI_CLASS_FREE},
        {65536, PBX_CAPABI_CLASS_OUT_OF_RANGE},
        {UINT32_MAX, PBX_CAPABI_CLASS_OUT_OF_RANGE},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        PBX_CHECK_EQ(pbx_capabi_slot_classify(&l, cases[i].slot),
                     cases[i].want);
    }
}

PBX_TEST(capabi_transient_index_round_trip)
{
    const pbx_capabi_layout l = default_layout();
    uint32_t index = 77;
    size_t wrong = 0;
    for (uint32_t i = 0; i < l.transient_count; i++) {
        uint32_t slot = pbx_capabi_transient_slot(&l, i);
        wrong += (pbx_capabi_transient_index(&l, slot, &index) == PBX_OK &&
                  index == i && slot == l.transient_first + i)
                     ? 0U
                     : 1U;
    }
    PBX_CHECK_EQ(wrong, 0U);
    index = 77;
    PBX_CHECK_EQ(pbx_capabi_transient_index(&l, l.transient_first - 1U, &index),
                 PBX_E_CAPABI_SLOT_UNEXPECTED);
    PBX_CHECK_EQ(pbx_capabi_transient_index(
                     &l, l.transient_first + l.transient_count, &index),
                 PBX_E_CAPABI_SLOT_UNEXPECTED);
    PBX_CHECK_EQ(pbx_capabi_transient_index(&l, PBX_CAPABI_SLOT_VFSD, &index),
                 PBX_E_CAPABI_SLOT_UNEXPECTED);
    PBX_CHECK_EQ(pbx_capabi_transient_index(&l, PBX_CAPABI_SLOT_LIMIT, &index),
                 PBX_E_CAPABI_SLOT_RANGE);
    PBX_CHECK_EQ(index, 77U);
}

/* The exact observation of receipt r in transient slot slot. */
static pbx_capabi_observed receipt_obs(pbx_capabi_receipt r, uint32_t slot)
{
    pbx_capabi_observed o = {slot, PBX_CAPABI_KIND_ENDPOINT,
                             PBX_CAPABI_RIGHT_SEND, PBX_CAPABI_PROV_RECEIVED};
    if (r == PBX_CAPABI_RECEIPT_REVOCATION) {
        o.rights = PBX_CAPABI_RIGHT_MANAGE;
    }
    if (r == PBX_CAPABI_RECEIPT_ALIAS) {
        o.provenance = PBX_CAPABI_PROV_LOCAL;
    }
    return o;
}

PBX_TEST(capabi_receipts_validate_when_exact)
{
    const pbx_capabi_layout l = default_layout();
    const uint32_t last = l.transient_first + l.transient_count - 1U;
    for (int r = PBX_CAPABI_RECEIPT_SCOPE; r <= PBX_CAPABI_RECEIPT_ALIAS; r++) {
        pbx_capabi_observed o =
            receipt_obs((pbx_capabi_receipt)r, l.transient_first);
        PBX_CHECK_EQ(pbx_capabi_check_receipt(&l, &o, (pbx_capabi_receipt)r),
                     PBX_OK);
        o.slot = last;
        PBX_CHECK_EQ(pbx_capabi_check_receipt(&l, &o, (pbx_capabi_receipt)r),
                     PBX_OK);
    }
}

PBX_TEST(capabi_receipt_outside_the_transient_range)
{
    const pbx_capabi_layout l = default_layout();
    pbx_capabi_observed o =
        receipt_obs(PBX_CAPABI_RECEIPT_SCOPE, l.transient_first - 1U);
    PBX_CHECK_EQ(pbx_capabi_check_receipt(&l, &o, PBX_CAPABI_RECEIPT_SCOPE),
                 PBX_E_CAPABI_SLOT_UNEXPECTED);
    o.slot = l.transient_first + l.transient_count;
    PBX_CHECK_EQ(pbx_capabi_check_receipt(&l, &o, PBX_CAPABI_RECEIPT_SCOPE),
                 PBX_E_CAPABI_SLOT_UNEXPECTED);
    o.slot = PBX_CAPABI_SLOT_VFSD;
    PBX_CHECK_EQ(pbx_capabi_check_receipt(&l, &o, PBX_CAPABI_RECEIPT_SCOPE),
                 PBX_E_CAPABI_SLOT_UNEXPECTED);
    o.slot = PBX_CAPABI_SLOT_LIMIT;
    PBX_CHECK_EQ(pbx_capabi_check_receipt(&l, &o, PBX_CAPABI_RECEIPT_SCOPE),
                 PBX_E_CAPABI_SLOT_RANGE);
}

PBX_TEST(capabi_receipt_each_failure)
{
    const pbx_capabi_layout l = default_layout();
    const uint32_t s = l.transient_first + 5U;
    pbx_capabi_observed o = receipt_obs(PBX_CAPABI_RECEIPT_OBJECT, s);
    o.kind = PBX_CAPABI_KIND_EMPTY;
    PBX_CHECK_EQ(pbx_capabi_check_receipt(&l, &o, PBX_CAPABI_RECEIPT_OBJECT),
                 PBX_E_CAPABI_ENTRY_MISSING);
    o.kind = PBX_CAPABI_KIND_PLACEHOLDER;
    PBX_CHECK_EQ(pbx_capabi_check_receipt(&l, &o, PBX_CAPABI_RECEIPT_OBJECT),
                 PBX_E_CAPABI_ENTRY_MISSING);
    o.kind = PBX_CAPABI_KIND_NOTIFY;
    PBX_CHECK_EQ(pbx_capabi_check_receipt(&l, &o, PBX_CAPABI_RECEIPT_OBJECT),
                 PBX_E_CAPABI_KIND);
    o = receipt_obs(PBX_CAPABI_RECEIPT_SCOPE, s);
    o.provenance = PBX_CAPABI_PROV_LOCAL;
    PBX_CHECK_EQ(pbx_capabi_check_receipt(&l, &o, PBX_CAPABI_RECEIPT_SCOPE),
                 PBX_E_CAPABI_PROVENANCE);
    o = receipt_obs(PBX_CAPABI_RECEIPT_ALIAS, s);
    o.provenance = PBX_CAPABI_PROV_RECEIVED;
    PBX_CHECK_EQ(pbx_capabi_check_receipt(&l, &o, PBX_CAPABI_RECEIPT_ALIAS),
                 PBX_E_CAPABI_PROVENANCE);
    /* procd's staging SEND is not a manage-only revocation handle. */
    o = receipt_obs(PBX_CAPABI_RECEIPT_REVOCATION, s);
    o.rights = PBX_CAPABI_RIGHT_SEND;
    PBX_CHECK_EQ(
        pbx_capabi_check_receipt(&l, &o, PBX_CAPABI_RECEIPT_REVOCATION),
        PBX_E_CAPABI_RIGHTS_MISSING);
    o.rights = PBX_CAPABI_RIGHT_MANAGE | PBX_CAPABI_RIGHT_SEND;
    PBX_CHECK_EQ(
        pbx_capabi_check_receipt(&l, &o, PBX_CAPABI_RECEIPT_REVOCATION),
        PBX_E_CAPABI_RIGHTS_EXTRA);
    o = receipt_obs(PBX_CAPABI_RECEIPT_SCOPE, s);
    o.rights |= PBX_CAPABI_RIGHT_GRANT;
    PBX_CHECK_EQ(pbx_capabi_check_receipt(&l, &o, PBX_CAPABI_RECEIPT_SCOPE),
                 PBX_E_CAPABI_RIGHTS_EXTRA);
}

PBX_TEST(capabi_errors_are_distinct_and_named)
{
    static const pbx_err errs[] = {PBX_E_CAPABI_KIND,
                                   PBX_E_CAPABI_RIGHTS_MISSING,
                                   PBX_E_CAPABI_RIGHTS_EXTRA,
                                   PBX_E_CAPABI_PROVENANCE,
                                   PBX_E_CAPABI_SLOT_DUPLICATE,
                                   PBX_E_CAPABI_SLOT_RANGE,
                                   PBX_E_CAPABI_TRANSIENT_OVERLAP,
                                   PBX_E_CAPABI_SLOT_UNEXPECTED,
                                   PBX_E_CAPABI_ENTRY_MISSING,
                                   PBX_E_CAPABI_TRANSIENT_EMPTY,
                                   PBX_E_CAPABI_ATTACH_LENGTH,
                                   PBX_E_CAPABI_ATTACH_MAGIC,
                                   PBX_E_CAPABI_ATTACH_VERSION,
                                   PBX_E_CAPABI_ATTACH_ROUTE,
                                   PBX_E_CAPABI_ATTACH_PID,
                                   PBX_E_CAPABI_ATTACH_RESERVED,
                                   PBX_E_CAPABI_ATTACH_COUNT,
                                   PBX_E_CAPABI_PEER_NONE,
                                   PBX_E_CAPABI_PEER_USER,
                                   PBX_E_CAPABI_PEER_PID};
    for (size_t i = 0; i < sizeof(errs) / sizeof(errs[0]); i++) {
        PBX_CHECK_EQ((unsigned)errs[i] >> PBX_ERR_LAYER_SHIFT, 5U);
        PBX_CHECK(strncmp(pbx_err_name(errs[i]), "PBX_E_CAPABI_", 13) == 0);
        for (size_t j = i + 1U; j < sizeof(errs) / sizeof(errs[0]); j++) {
            PBX_CHECK(errs[i] != errs[j]);
        }
    }
}

/* A valid ROUTE_ATTACH for route r and pid 4242, encoded into buf. */
static void attach_frame(uint32_t r, uint8_t buf[PBX_CAPABI_ATTACH_BYTES])
{
    pbx_capabi_attach a = {r, 4242U};
    PBX_REQUIRE(pbx_capabi_attach_encode(&a, buf, PBX_CAPABI_ATTACH_BYTES) ==
                PBX_OK);
}

PBX_TEST(capabi_attach_round_trips_with_its_exact_bytes)
{
    static const uint8_t want[PBX_CAPABI_ATTACH_BYTES] = {
        'P', 'B', 'X', 'A', 1, 0, 2, 0, 0x92, 0x10, 0, 0, 0, 0, 0, 0};
    uint8_t buf[PBX_CAPABI_ATTACH_BYTES];
    pbx_capabi_attach got = {0, 0};
    attach_frame(PBX_CAPABI_ROUTE_TTYD, buf);
    PBX_CHECK_MEM(buf, want, sizeof(want));
    for (uint32_t r = PBX_CAPABI_ROUTE_VFSD; r <= PBX_CAPABI_ROUTE_BROKER;
         r++) {
        attach_frame(r, buf);
        PBX_CHECK_EQ(pbx_capabi_attach_decode(buf, sizeof(buf), 1U, &got),
                     PBX_OK);
        PBX_CHECK_EQ(got.route, r);
        PBX_CHECK_EQ(got.peer_pid, 4242U);
    }
    PBX_CHECK_EQ(pbx_capabi_attach_entry(PBX_CAPABI_ROUTE_VFSD),
                 PBX_CAPABI_ENTRY_VFSD);
    PBX_CHECK_EQ(pbx_capabi_attach_entry(PBX_CAPABI_ROUTE_TTYD),
                 PBX_CAPABI_ENTRY_TTYD);
    PBX_CHECK_EQ(pbx_capabi_attach_entry(PBX_CAPABI_ROUTE_PROCD),
                 PBX_CAPABI_ENTRY_PROCD);
    PBX_CHECK_EQ(pbx_capabi_attach_entry(PBX_CAPABI_ROUTE_WAKE),
                 PBX_CAPABI_ENTRY_LAUNCHD);
    PBX_CHECK_EQ(pbx_capabi_attach_entry(PBX_CAPABI_ROUTE_BROKER),
                 PBX_CAPABI_ENTRY_BROKER);
}

PBX_TEST(capabi_attach_encode_refuses_what_it_cannot_write)
{
    uint8_t buf[PBX_CAPABI_ATTACH_BYTES + 1U];
    memset(buf, 0xAA, sizeof(buf));
    pbx_capabi_attach a = {PBX_CAPABI_ROUTE_VFSD, 1U};
    PBX_CHECK_EQ(
        pbx_capabi_attach_encode(&a, buf, PBX_CAPABI_ATTACH_BYTES - 1U),
        PBX_E_CAPABI_ATTACH_LENGTH);
    a.route = 0U;
    PBX_CHECK_EQ(pbx_capabi_attach_encode(&a, buf, sizeof(buf)),
                 PBX_E_CAPABI_ATTACH_ROUTE);
    a.route = 6U;
    PBX_CHECK_EQ(pbx_capabi_attach_encode(&a, buf, sizeof(buf)),
                 PBX_E_CAPABI_ATTACH_ROUTE);
    a.route = PBX_CAPABI_ROUTE_BROKER;
    a.peer_pid = 0U;
    PBX_CHECK_EQ(pbx_capabi_attach_encode(&a, buf, sizeof(buf)),
                 PBX_E_CAPABI_ATTACH_PID);
    a.peer_pid = (uint32_t)INT32_MAX + 1U;
    PBX_CHECK_EQ(pbx_capabi_attach_encode(&a, buf, sizeof(buf)),
                 PBX_E_CAPABI_ATTACH_PID);
    for (size_t i = 0; i < sizeof(buf); i++) {
        PBX_CHECK_EQ(buf[i], 0xAAU); /* Nothing written on error. */
    }
    a.peer_pid = (uint32_t)INT32_MAX;
    PBX_CHECK_EQ(pbx_capabi_attach_encode(&a, buf, sizeof(buf)), PBX_OK);
    PBX_CHECK_EQ(buf[PBX_CAPABI_ATTACH_BYTES], 0xAAU);
}

PBX_TEST(capabi_attach_decode_refuses_every_malformed_form_in_order)
{
    uint8_t buf[PBX_CAPABI_ATTACH_BYTES + 8U];
    pbx_capabi_attach got = {0, 0};
    attach_frame(PBX_CAPABI_ROUTE_PROCD, buf);
    /* Every truncation and one byte too many: the length, nothing else. */
    for (size_t len = 0; len <= PBX_CAPABI_ATTACH_BYTES + 1U; len++) {
        if (len == PBX_CAPABI_ATTACH_BYTES) {
            continue;
        }
        PBX_CHECK_EQ(pbx_capabi_attach_decode(buf, len, 1U, &got),
                     PBX_E_CAPABI_ATTACH_LENGTH);
        /* The echo holds only what was there. */
        PBX_CHECK_EQ(got.route, len >= 8U ? PBX_CAPABI_ROUTE_PROCD : 0U);
        PBX_CHECK_EQ(got.peer_pid, len >= 12U ? 4242U : 0U);
    }
    PBX_CHECK_EQ(pbx_capabi_attach_decode(NULL, 0U, 1U, &got),
                 PBX_E_CAPABI_ATTACH_LENGTH);
    /* Each byte of magic and version, each flipped alone. */
    for (size_t i = 0; i < 6U; i++) {
        attach_frame(PBX_CAPABI_ROUTE_PROCD, buf);
        buf[i] ^= 0x40U;
        PBX_CHECK_EQ(
            pbx_capabi_attach_decode(buf, PBX_CAPABI_ATTACH_BYTES, 1U, &got),
            i < 4U ? PBX_E_CAPABI_ATTACH_MAGIC : PBX_E_CAPABI_ATTACH_VERSION);
    }
    static const uint16_t bad_routes[] = {0U, 6U, 7U, 0x100U, 0xFFFFU};
    for (size_t i = 0; i < PBX_ARRAY_LEN(bad_routes); i++) {
        attach_frame(PBX_CAPABI_ROUTE_PROCD, buf);
        pbx_le_put16(buf + 6, bad_routes[i]);
        PBX_CHECK_EQ(
            pbx_capabi_attach_decode(buf, PBX_CAPABI_ATTACH_BYTES, 1U, &got),
            PBX_E_CAPABI_ATTACH_ROUTE);
        PBX_CHECK_EQ(got.route, bad_routes[i]);
    }
    static const uint32_t bad_pids[] = {0U, 0x80000000U, 0xFFFFFFFFU};
    for (size_t i = 0; i < PBX_ARRAY_LEN(bad_pids); i++) {
        attach_frame(PBX_CAPABI_ROUTE_PROCD, buf);
        pbx_le_put32(buf + 8, bad_pids[i]);
        PBX_CHECK_EQ(
            pbx_capabi_attach_decode(buf, PBX_CAPABI_ATTACH_BYTES, 1U, &got),
            PBX_E_CAPABI_ATTACH_PID);
    }
    for (size_t i = 12U; i < PBX_CAPABI_ATTACH_BYTES; i++) {
        attach_frame(PBX_CAPABI_ROUTE_PROCD, buf);
        buf[i] = 1U;
        PBX_CHECK_EQ(
            pbx_capabi_attach_decode(buf, PBX_CAPABI_ATTACH_BYTES, 1U, &got),
            PBX_E_CAPABI_ATTACH_RESERVED);
    }
    attach_frame(PBX_CAPABI_ROUTE_PROCD, buf);
    static const uint32_t bad_counts[] = {0U, 2U, 16U, 0xFFFFFFFFU};
    for (size_t i = 0; i < PBX_ARRAY_LEN(bad_counts); i++) {
        PBX_CHECK_EQ(pbx_capabi_attach_decode(buf, PBX_CAPABI_ATTACH_BYTES,
                                              bad_counts[i], &got),
                     PBX_E_CAPABI_ATTACH_COUNT);
    }
    /* Order: a wrong length hides everything after it, and so on. */
    buf[0] ^= 1U;
    PBX_CHECK_EQ(
        pbx_capabi_attach_decode(buf, PBX_CAPABI_ATTACH_BYTES, 0U, &got),
        PBX_E_CAPABI_ATTACH_MAGIC);
    PBX_CHECK_EQ(pbx_capabi_attach_decode(buf, 15U, 0U, &got),
                 PBX_E_CAPABI_ATTACH_LENGTH);
}

/* The exact observation and credentials of route r's new capability. */
static void attach_exact(uint32_t r, pbx_capabi_observed *o,
                         pbx_capabi_peer *peer)
{
    const pbx_capabi_expect *w =
        pbx_capabi_expected(pbx_capabi_attach_entry(r));
    /* Staged anywhere: the slot it sits in does not matter. */
    pbx_capabi_observed e = {13U, w->kind, w->rights, w->provenance};
    pbx_capabi_peer p = {1U, 4242U, 1000U, 1000U};
    *o = e;
    *peer = p;
}

PBX_TEST(capabi_check_attach_judges_as_at_startup_then_credentials)
{
    for (uint32_t r = PBX_CAPABI_ROUTE_VFSD; r <= PBX_CAPABI_ROUTE_BROKER;
         r++) {
        pbx_capabi_attach a = {r, 4242U};
        pbx_capabi_observed o;
        pbx_capabi_peer p;
        attach_exact(r, &o, &p);
        PBX_CHECK_EQ(pbx_capabi_check_attach(&a, &o, &p), PBX_OK);
        o.kind = PBX_CAPABI_KIND_EMPTY;
        PBX_CHECK_EQ(pbx_capabi_check_attach(&a, &o, &p),
                     PBX_E_CAPABI_ENTRY_MISSING);
        attach_exact(r, &o, &p);
        /* The other socket type: a datagram route for an endpoint and
         * an endpoint for a datagram wake. */
        o.kind = o.kind == PBX_CAPABI_KIND_NOTIFY ? PBX_CAPABI_KIND_ENDPOINT
                                                  : PBX_CAPABI_KIND_NOTIFY;
        PBX_CHECK_EQ(pbx_capabi_check_attach(&a, &o, &p), PBX_E_CAPABI_KIND);
        attach_exact(r, &o, &p);
        o.provenance = PBX_CAPABI_PROV_LOCAL;
        PBX_CHECK_EQ(pbx_capabi_check_attach(&a, &o, &p),
                     PBX_E_CAPABI_PROVENANCE);
        attach_exact(r, &o, &p);
        o.rights = 0U;
        PBX_CHECK_EQ(pbx_capabi_check_attach(&a, &o, &p),
                     PBX_E_CAPABI_RIGHTS_MISSING);
        attach_exact(r, &o, &p);
        o.rights |= PBX_CAPABI_RIGHT_GRANT;
        PBX_CHECK_EQ(pbx_capabi_check_attach(&a, &o, &p),
                     PBX_E_CAPABI_RIGHTS_EXTRA);
        attach_exact(r, &o, &p);
        p.present = 0U;
        PBX_CHECK_EQ(pbx_capabi_check_attach(&a, &o, &p),
                     PBX_E_CAPABI_PEER_NONE);
        attach_exact(r, &o, &p);
        p.uid = 0U;
        PBX_CHECK_EQ(pbx_capabi_check_attach(&a, &o, &p),
                     PBX_E_CAPABI_PEER_USER);
        attach_exact(r, &o, &p);
        p.pid = 4243U;
        PBX_CHECK_EQ(pbx_capabi_check_attach(&a, &o, &p),
                     PBX_E_CAPABI_PEER_PID);
        /* A wrong kind is reported before a wrong peer. */
        o.kind = PBX_CAPABI_KIND_STREAM;
        PBX_CHECK_EQ(pbx_capabi_check_attach(&a, &o, &p), PBX_E_CAPABI_KIND);
    }
}

PBX_TEST(capabi_answer_round_trips_and_refuses_malformed)
{
    pbx_capabi_answer ans = {PBX_CAPABI_ROUTE_WAKE, 77U,
                             (uint32_t)PBX_E_CAPABI_PEER_PID};
    pbx_capabi_answer got = {0, 0, 0};
    uint8_t buf[PBX_CAPABI_ANSWER_BYTES];
    PBX_CHECK_EQ(pbx_capabi_answer_encode(&ans, buf, sizeof(buf) - 1U),
                 PBX_E_CAPABI_ATTACH_LENGTH);
    PBX_REQUIRE(pbx_capabi_answer_encode(&ans, buf, sizeof(buf)) == PBX_OK);
    PBX_CHECK_EQ(pbx_le_get32(buf), PBX_CAPABI_ANSWER_MAGIC);
    PBX_CHECK_EQ(pbx_capabi_answer_decode(buf, sizeof(buf), &got), PBX_OK);
    PBX_CHECK_EQ(got.route, ans.route);
    PBX_CHECK_EQ(got.peer_pid, 77U);
    PBX_CHECK_EQ(got.status, (uint32_t)PBX_E_CAPABI_PEER_PID);
    for (size_t len = 0; len < sizeof(buf); len++) {
        PBX_CHECK_EQ(pbx_capabi_answer_decode(buf, len, &got),
                     PBX_E_CAPABI_ATTACH_LENGTH);
    }
    for (size_t i = 0; i < 6U; i++) {
        uint8_t bad[PBX_CAPABI_ANSWER_BYTES];
        memcpy(bad, buf, sizeof(bad));
        bad[i] ^= 0x01U;
        PBX_CHECK_EQ(pbx_capabi_answer_decode(bad, sizeof(bad), &got),
                     i < 4U ? PBX_E_CAPABI_ATTACH_MAGIC
                            : PBX_E_CAPABI_ATTACH_VERSION);
    }
    /* An attach frame is not an answer. */
    uint8_t att[PBX_CAPABI_ATTACH_BYTES];
    attach_frame(PBX_CAPABI_ROUTE_VFSD, att);
    PBX_CHECK_EQ(pbx_capabi_answer_decode(att, sizeof(att), &got),
                 PBX_E_CAPABI_ATTACH_MAGIC);
}
