/*
 * launchd_budget.c: one prompt budget per sandboxed job (docs/HOST.md,
 * "The prompt budget"). A sandboxed job may ask on its own job
 * connection (libpbx-app, fd 3) and its open broker asks on a second one
 * bound to the same job; both pass here, so one bucket covers both: a
 * burst of --prompt-burst prompts, then one more every --prompt-per-ms.
 *
 * The bucket is charged only for a request whose decision shows that a
 * person was asked: an exceptional request approved (powerboxd allows
 * only routine requests without a prompt, and ttyd allows no exceptional
 * one by rule), or any request denied by the person or by the prompt's
 * deadline. A rule's answer costs nothing. While the bucket is empty
 * every BEGIN of the job is refused PBX_E_PEER_PROMPT_RATE before it
 * reaches powerboxd, so nobody is asked (a routine request too: whether
 * a rule would answer it is known only after asking).
 */
#include <string.h>

#include "peers/launchd/launchd.h"
#include "peers/lib/pbx_peer.h"

/* The job of connection ci when it is a sandboxed job's, else NULL. */
static launchd_job *launchd_budget_job(launchd_srv *srv, uint32_t ci)
{
    const launchd_conn *c = &srv->conns[ci];
    if (!c->job_conn || c->job >= LAUNCHD_JOBS_CAP) {
        return NULL;
    }
    launchd_job *j = &srv->jobs[c->job];
    return j->live && j->budget.on ? j : NULL;
}

void launchd_budget_init(const launchd_srv *srv, launchd_job *j, bool on)
{
    memset(&j->budget, 0, sizeof(j->budget));
    j->budget.on = on;
    pbx_peer_broker_rate_init(&j->budget.rate, srv->prompt_burst,
                              srv->prompt_per_ms, srv->now);
}

bool launchd_budget_admit(launchd_srv *srv, uint32_t ci)
{
    launchd_job *j = launchd_budget_job(srv, ci);
    if (j == NULL) {
        return true;
    }
    /* A look at a copy: the bucket is charged only by a decision. */
    pbx_peer_broker_rate peek = j->budget.rate;
    if (pbx_peer_broker_rate_take(&peek, srv->now)) {
        return true;
    }
    pbx_peer_log("launchd",
                 "job %llu.%u: BEGIN refused: over the job's prompt budget "
                 "(%u in a row, then one per %u ms), nobody asked",
                 (unsigned long long)j->bind.job_id, j->bind.job_gen,
                 srv->prompt_burst, srv->prompt_per_ms);
    return false;
}

void launchd_budget_begun(launchd_srv *srv, uint32_t ci,
                          const pbx_ipc_frame *begin, pbx_ipc_id request)
{
    launchd_job *j = launchd_budget_job(srv, ci);
    static pbx_ipc_begin rec;
    if (j == NULL || pbx_ipc_begin_decode(begin, &rec) != PBX_OK ||
        rec.ctx.urgency != (uint8_t)PBX_IPC_URGENCY_EXCEPTIONAL) {
        return;
    }
    launchd_budget *b = &j->budget;
    if (b->nexc < LAUNCHD_BUDGET_EXC) {
        b->exc[b->nexc++] = request;
    }
}

/* Removes request from b's undecided exceptional requests; whether it
 * was one. */
static bool launchd_budget_forget(launchd_budget *b, pbx_ipc_id request)
{
    for (uint32_t i = 0; i < b->nexc && i < LAUNCHD_BUDGET_EXC; i++) {
        if (b->exc[i].index == request.index && b->exc[i].gen == request.gen) {
            b->exc[i] = b->exc[b->nexc - 1U];
            b->nexc--;
            return true;
        }
    }
    return false;
}

void launchd_budget_decided(launchd_srv *srv, uint32_t ci, pbx_ipc_id request,
                            const pbx_ipc_frame *rep)
{
    launchd_job *j = launchd_budget_job(srv, ci);
    pbx_ipc_decision d;
    if (j == NULL || rep->status != 0U ||
        pbx_ipc_decision_reply_decode(rep, &d) != PBX_OK ||
        d.outcome == (uint8_t)PBX_IPC_OUTCOME_PENDING) {
        return;
    }
    bool exc = launchd_budget_forget(&j->budget, request);
    bool person = (d.outcome == (uint8_t)PBX_IPC_OUTCOME_APPROVED && exc) ||
                  (d.outcome == (uint8_t)PBX_IPC_OUTCOME_DENIED &&
                   (d.reason == (uint16_t)PBX_IPC_REASON_USER ||
                    d.reason == (uint16_t)PBX_IPC_REASON_PROMPT_TIMEOUT));
    if (!person) {
        return;
    }
    (void)pbx_peer_broker_rate_take(&j->budget.rate, srv->now);
    pbx_peer_log("launchd",
                 "job %llu.%u: prompt budget charged (request %u.%u "
                 "reached a person), %u left",
                 (unsigned long long)j->bind.job_id, j->bind.job_gen,
                 request.index, request.gen, j->budget.rate.tokens);
}
