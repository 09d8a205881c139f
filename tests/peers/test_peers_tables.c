/*
 * test_peers_tables.c: the table sizes vfsd and procd take from their
 * options (issue 23 item 3). The pure tables hold exactly the capacity
 * they were given, refuse the next row BUSY (nothing held changes) and
 * take one again once a row ends; pbx-vfsd --objects and pbx-procd
 * --installs refuse a bad value with one line naming it (exit 2) and
 * report the size they started with.
 */
#include "../../ipc/pbx_ipc.h"
#include "../../peers/lib/pbx_peer.h"
#include "../../peers/lib/pbx_peer_proc.h"
#include "../../peers/lib/pbx_peer_vfs.h"
#include "../runner/pbx_test.h"
#include "peers_child.h"

#include <stdio.h>
#include <string.h>

/* A capacity above both tables' defaults, and the e2e bench's. */
#define TT_CAP 900U

/* The tables are static: each is larger than a test's stack should be. */
static pbx_peer_objtab g_tt_objs;
static pbx_peer_proctab g_tt_procs;

PBX_TEST(peers_tables_objtab_holds_its_capacity_then_busy)
{
    pbx_peer_objtab *t = &g_tt_objs;
    pbx_peer_objtab_init_cap(t, TT_CAP);
    PBX_CHECK_EQ(t->cap, TT_CAP);
    for (size_t i = 0; i < TT_CAP; i++) {
        size_t row = TT_CAP;
        PBX_REQUIRE(pbx_peer_objtab_reserve(t, &row) == 0U);
        PBX_CHECK_EQ(row, i);
        (void)pbx_peer_objtab_mint(t, row, 1000U + i, 7U, PBX_IPC_CLASS_FILE,
                                   (int)(100U + i));
    }
    PBX_CHECK_EQ(pbx_peer_objtab_live(t), TT_CAP);
    size_t row = 0;
    /* One past the capacity: refused, every live row kept. */
    PBX_CHECK_EQ(pbx_peer_objtab_reserve(t, &row), PBX_PEER_E_BUSY);
    PBX_CHECK_EQ(pbx_peer_objtab_live(t), TT_CAP);
    /* A row that ends is taken again. */
    int prov = -1;
    PBX_CHECK_EQ(pbx_peer_objtab_hangup(t, 417U, &prov), 0U);
    PBX_CHECK_EQ(prov, 517);
    PBX_CHECK_EQ(pbx_peer_objtab_reserve(t, &row), 0U);
    PBX_CHECK_EQ(row, 417U);
    /* Beyond the capacity no row exists, whatever the storage holds. */
    PBX_CHECK_EQ(pbx_peer_objtab_hangup(t, TT_CAP, &prov), PBX_PEER_E_UNKNOWN);
}

PBX_TEST(peers_tables_proctab_holds_its_capacity_then_busy)
{
    pbx_peer_proctab *t = &g_tt_procs;
    pbx_peer_proctab_init_cap(t, TT_CAP);
    PBX_CHECK_EQ(t->cap, TT_CAP);
    PBX_REQUIRE(pbx_peer_proctab_stage(t, 7U, 5U) == 0U);
    pbx_ipc_install rq;
    memset(&rq, 0, sizeof(rq));
    rq.target.process_id = 7U;
    rq.target.process_gen = 5U;
    rq.operation = PBX_IPC_OPERATION_READ;
    rq.object_class = PBX_IPC_CLASS_FILE;
    rq.lifetime = PBX_IPC_LIFETIME_JOB;
    for (uint32_t i = 0; i < TT_CAP; i++) {
        rq.target.slot = i;
        rq.grant.index = i;
        rq.grant.gen = 1U;
        size_t row = TT_CAP;
        PBX_REQUIRE(pbx_peer_proctab_install_check(t, &rq, &row) == 0U);
        PBX_CHECK_EQ(row, (size_t)i);
        pbx_peer_proctab_install_apply(t, row, &rq, (int)(100U + i),
                                       (int)(2000U + i));
    }
    PBX_CHECK_EQ(pbx_peer_proctab_live(t), TT_CAP);
    rq.target.slot = TT_CAP;
    rq.grant.index = TT_CAP;
    size_t row = 0;
    PBX_CHECK_EQ(pbx_peer_proctab_install_check(t, &rq, &row), PBX_PEER_E_BUSY);
    PBX_CHECK_EQ(pbx_peer_proctab_live(t), TT_CAP);
    int object = -1;
    int handle = -1;
    pbx_peer_proctab_drop(t, 333U, &object, &handle);
    PBX_CHECK_EQ(object, 433);
    PBX_CHECK_EQ(handle, 2333);
    PBX_CHECK_EQ(pbx_peer_proctab_install_check(t, &rq, &row), 0U);
    PBX_CHECK_EQ(row, 333U);
}

/* Runs pbx-NAME with its two other arguments a0 a1 and option opt set to
 * value; returns its exit status, with its stderr in err (cap bytes). */
static int tt_cli(const char *name, const char *const *two, const char *opt,
                  const char *value, char *err, size_t cap)
{
    const char *argv[] = {two[0], two[1], opt, value, NULL};
    static char out[256];
    return tp_cli(name, argv, out, err, cap < sizeof(out) ? cap : sizeof(out));
}

PBX_TEST(peers_tables_options_refuse_bad_sizes)
{
    static const char *const bad[] = {"0", "4097", "12x", "", "-1"};
    const char *vfsd[] = {"--root", tp_tmpdir()};
    const char *procd[] = {"--stage", "7:1"};
    char err[256];
    for (size_t i = 0; i < PBX_ARRAY_LEN(bad); i++) {
        char want[64];
        (void)snprintf(want, sizeof(want), "--objects '%s' (1..4096)", bad[i]);
        PBX_CHECK_EQ(
            tt_cli("vfsd", vfsd, "--objects", bad[i], err, sizeof(err)), 2);
        PBX_CHECK(strstr(err, want) != NULL);
        (void)snprintf(want, sizeof(want), "--installs '%s' (1..4096)", bad[i]);
        PBX_CHECK_EQ(
            tt_cli("procd", procd, "--installs", bad[i], err, sizeof(err)), 2);
        PBX_CHECK(strstr(err, want) != NULL);
    }
}

PBX_TEST(peers_tables_options_are_in_the_usage)
{
    /* The sizes a started peer uses are shown end to end (e2e many-grants
     * fills 900 rows of each); here the usage names the options. */
    static char out[4096];
    static char err[4096];
    const char *help[] = {"--help", NULL};
    PBX_CHECK_EQ(tp_cli("vfsd", help, out, err, sizeof(out)), 0);
    PBX_CHECK(strstr(out, "--objects N") != NULL);
    PBX_CHECK_EQ(tp_cli("procd", help, out, err, sizeof(out)), 0);
    PBX_CHECK(strstr(out, "--installs N") != NULL);
}
