/*
 * test_core_walks.c: every walk over a pool reaches its last record with
 * that record live (issue 22 item 8). Each test fills the pool (its
 * capacity, the last index included) and checks the walk acted on every
 * record, the last above all: the broker-loss walks over requests and
 * grants, the route-loss walks (vfsd's requests and grants, procd's
 * grants), ttyd's resync walk on return, and the EXPIRE walks of a job's
 * request and grant chains, each as long as its pool.
 */
#include "core/pbx_core_inspect.h"
#include "runner/pbx_test.h"
#include "test_core_harness.h"

#include <string.h>

static const uint8_t sel[] = "docs/report.txt";
#define SEL_LEN ((uint32_t)(sizeof(sel) - 1U))
/* Records per pool: every walk must reach index WALK_N - 1. */
#define WALK_N 4U

/* How a grant walk is driven. */
enum walk_how {
    WALK_BROKER = 0,
    WALK_VFSD,
    WALK_PROCD,
    WALK_EXPIRE,
    WALK_TTYD,
    WALK_HOWS
};

/* Drives walk how on h (b: the job every record belongs to). */
static void walk_drive(th_h *h, int how, const pbx_ipc_begin *b)
{
    switch (how) {
    case WALK_BROKER:
        PBX_CHECK_EQ(pbx_core_on_broker_lost(&h->core), PBX_OK);
        break;
    case WALK_VFSD:
        PBX_CHECK_EQ(pbx_core_on_route_down(&h->core, PBX_CORE_ROUTE_VFSD),
                     PBX_OK);
        break;
    case WALK_PROCD:
        PBX_CHECK_EQ(pbx_core_on_route_down(&h->core, PBX_CORE_ROUTE_PROCD),
                     PBX_OK);
        break;
    case WALK_EXPIRE:
        PBX_CHECK_EQ(th_expire(h, PBX_CORE_BADGE_LAUNCHD, PBX_IPC_EXPIRE_JOB,
                               b->ctx.job_id, b->ctx.job_gen, 0U),
                     0U);
        break;
    default:
        PBX_CHECK_EQ(pbx_core_on_route_down(&h->core, PBX_CORE_ROUTE_TTYD),
                     PBX_OK);
        PBX_CHECK_EQ(pbx_core_on_route_up(&h->core, PBX_CORE_ROUTE_TTYD),
                     PBX_OK);
        break;
    }
}

/* Every grant record is LIVE (approved, delivered, its request retired),
 * one job's, installed by procd; each walk must end (or, ttyd's return,
 * resend the row of) every one of them, the last index included. */
PBX_TEST(core_grant_walks_reach_the_last_live_record)
{
    for (int how = 0; how < WALK_HOWS; how++) {
        th_h *h = th_new(WALK_N);
        pbx_ipc_begin b;
        th_default_begin(&b, sel, SEL_LEN);
        b.ctx.lifetime = PBX_IPC_LIFETIME_JOB;
        for (uint32_t k = 0; k < WALK_N; k++) {
            (void)th_approve(h, &b, sel, false, NULL, NULL);
        }
        for (uint32_t g = 0; g < WALK_N; g++) {
            PBX_REQUIRE(pbx_core_inspect_grant(&h->core, g)->link.state ==
                        PBX_CORE_ST_LIVE);
        }
        th_clear_trace(h);
        walk_drive(h, how, &b);
        for (uint32_t g = 0; g < WALK_N; g++) {
            const pbx_core_grant *gr = pbx_core_inspect_grant(&h->core, g);
            if (how == WALK_TTYD) {
                PBX_CHECK_EQ(gr->link.state, PBX_CORE_ST_LIVE);
                PBX_CHECK((gr->flags & PBX_CORE_GRANT_F_RESYNC) != 0U);
            } else {
                PBX_CHECK(gr->link.state != PBX_CORE_ST_LIVE);
            }
        }
        th_run(h);
        PBX_CHECK_EQ(h->step_err, PBX_OK);
        th_free(h);
    }
}

/* Every request record is in flight (parked at the trusted prompt,
 * holding its resolved object); the broker-loss walk cancels every one,
 * vfsd's loss denies every one (PROVIDER_LOST), and an EXPIRE of their
 * job cancels every one: the last index included. */
PBX_TEST(core_request_walks_reach_the_last_live_record)
{
    static const int hows[] = {WALK_BROKER, WALK_VFSD, WALK_EXPIRE};
    for (size_t w = 0; w < sizeof(hows) / sizeof(hows[0]); w++) {
        th_h *h = th_new(WALK_N);
        pbx_ipc_begin b;
        th_default_begin(&b, sel, SEL_LEN);
        for (uint32_t k = 0; k < WALK_N; k++) {
            pbx_ipc_id id = {0, 0};
            PBX_REQUIRE(th_open_parked(h, &b, sel, &id) == 0U);
            PBX_REQUIRE(id.index == k);
        }
        walk_drive(h, hows[w], &b);
        for (uint32_t i = 0; i < WALK_N; i++) {
            const pbx_core_request *r = pbx_core_inspect_request(&h->core, i);
            PBX_CHECK_EQ(r->link.state, PBX_CORE_ST_RELEASE);
            PBX_CHECK_EQ(r->outcome, hows[w] == WALK_VFSD
                                         ? PBX_IPC_OUTCOME_DENIED
                                         : PBX_IPC_OUTCOME_CANCELLED);
        }
        th_run(h);
        PBX_CHECK_EQ(h->step_err, PBX_OK);
        th_free(h);
    }
}

/* The generation-zero CANCEL's walk of a job's request chain, as long as
 * the pool: with every request record in one job, the one request of the
 * named session is found wherever it sits in the chain (first or last
 * begun), and only it is cancelled. */
PBX_TEST(core_cancel_correlation_walk_reaches_the_last_record)
{
    for (uint32_t at = 0; at < WALK_N; at += WALK_N - 1U) {
        th_h *h = th_new(WALK_N);
        pbx_ipc_begin b;
        th_default_begin(&b, sel, SEL_LEN);
        uint64_t other = b.ctx.session + 1U;
        for (uint32_t k = 0; k < WALK_N; k++) {
            pbx_ipc_begin bk = b;
            bk.ctx.session = k == at ? b.ctx.session : other;
            pbx_ipc_id id = {0, 0};
            PBX_REQUIRE(th_open_parked(h, &bk, sel, &id) == 0U);
            PBX_REQUIRE(id.index == k);
        }
        PBX_CHECK_EQ(
            th_cancel_corr(h, b.ctx.job_id, b.ctx.job_gen, b.ctx.session), 0U);
        for (uint32_t i = 0; i < WALK_N; i++) {
            const pbx_core_request *r = pbx_core_inspect_request(&h->core, i);
            PBX_CHECK_EQ(r->link.state == PBX_CORE_ST_RELEASE, i == at);
        }
        th_free(h);
    }
}
