/*
 * bench_procd_tab.c: procd's install-table work per INSTALL, counted by
 * callgrind at a chosen number of live installs (docs/bench/PROFILES.md,
 * "procd's per-event walks (session 10)"). A table of 1,024 rows (procd
 * --installs 1024, as bench_grants.py runs it) holds LIVE installs of
 * process 1; then bpt_measure runs ROUNDS INSTALLs of fresh grants, each
 * decided (pbx_peer_proctab_install_check, with the slot lookup procd's
 * INSTALL makes first), applied, judged by a REVOKE and dropped: what
 * procd's table does for one INSTALL and its revocation. Not built by
 * make; build and run it as docs/bench/PROFILES.md says:
 *
 *   cc -I. -O2 -g bench/procd/bench_procd_tab.c peers/lib/pbx_peer_proc.c \
 *      peers/lib/pbx_peer_proc_index.c build/lib/libpbx.a -o DRV
 *   valgrind --tool=callgrind --toggle-collect=bpt_measure DRV LIVE
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "peers/lib/pbx_peer.h"
#include "peers/lib/pbx_peer_proc.h"

/* The INSTALLs counted. */
#define BPT_ROUNDS 1000U
/* The table's rows. */
#define BPT_CAP 1024U

static pbx_peer_proctab g_bpt;

/* An INSTALL of grant (gi, 1) into slot sl of process 1 gen 1. */
static pbx_ipc_install bpt_rq(uint32_t gi, uint32_t sl)
{
    pbx_ipc_install rq;
    memset(&rq, 0, sizeof(rq));
    rq.target = (pbx_ipc_target){1U, 1U, sl};
    rq.grant = (pbx_ipc_id){gi, 1U};
    rq.operation = PBX_IPC_OPERATION_READ;
    rq.object_class = PBX_IPC_CLASS_FILE;
    rq.lifetime = PBX_IPC_LIFETIME_JOB;
    return rq;
}

/* Installs and revokes BPT_ROUNDS fresh grants in the free slot sl;
 * returns how many were installed (all of them, or the run is void). */
__attribute__((noinline)) static size_t bpt_measure(uint32_t sl)
{
    size_t done = 0;
    for (uint32_t i = 0; i < BPT_ROUNDS; i++) {
        pbx_ipc_install rq = bpt_rq(100000U + i, sl);
        size_t row = 0;
        if (pbx_peer_proctab_install_check(&g_bpt, &rq, &row) != 0U) {
            continue;
        }
        pbx_peer_proctab_install_apply_on(&g_bpt, row, &rq, 3, 4, 5);
        pbx_ipc_revoke rv = {rq.grant, 1U, 1U, sl};
        if (pbx_peer_proctab_revoke_check(&g_bpt, row, &rv) == 0U) {
            int o = -1;
            int h = -1;
            pbx_peer_proctab_drop(&g_bpt, row, &o, &h);
            done++;
        }
    }
    return done;
}

int main(int argc, char **argv)
{
    long live = argc == 2 ? strtol(argv[1], NULL, 10) : -1L;
    if (live < 0L || live >= (long)PBX_PEER_PROC_SLOT_LIMIT - 1L) {
        (void)fprintf(stderr, "usage: bench_procd_tab LIVE (0..1022)\n");
        return 2;
    }
    pbx_peer_proctab_init_cap(&g_bpt, BPT_CAP);
    if (pbx_peer_proctab_stage(&g_bpt, 1U, 1U) != 0U) {
        return 1;
    }
    for (uint32_t i = 0; i < (uint32_t)live; i++) {
        pbx_ipc_install rq = bpt_rq(i, i);
        size_t row = 0;
        if (pbx_peer_proctab_install_check(&g_bpt, &rq, &row) != 0U) {
            return 1;
        }
        pbx_peer_proctab_install_apply_on(&g_bpt, row, &rq, 3, 4, 5);
    }
    size_t done = bpt_measure((uint32_t)live);
    (void)printf("live=%zu installs=%zu\n", pbx_peer_proctab_live(&g_bpt),
                 done);
    return done == BPT_ROUNDS ? 0 : 1;
}
