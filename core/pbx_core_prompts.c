/*
 * pbx_core_prompts.c: fair shares of the prompt records (issue 20, item
 * 4). A prompt record is taken only when policy asks for a prompt, never
 * at BEGIN, so a routine request never waits for storage only prompts
 * need. No one job (id and generation from the launchd-authenticated
 * BEGIN body) holds more than pbx_core_prompt_share records at once. A
 * request that finds no record it may take waits on its own lane keeping
 * everything it holds (its resolution, policy verdict, scope and object
 * copy: retryable backpressure, never a drop), and every freed record
 * sends the waiters back to the intake lane in order.
 */
#include "core/pbx_core_progress.h"

uint32_t pbx_core_prompt_share(uint32_t prompts)
{
    uint32_t share = prompts / PBX_CORE_PROMPT_SHARE_DIVISOR;
    return share == 0U ? 1U : share;
}

/* How many prompt records the job of request i holds now: one walk over
 * the job's chain in the requests index, bounded by the pool capacity. */
static uint32_t pbx_core_prompts_of_job(pbx_core_ctx *ctx, uint32_t i)
{
    const pbx_core_request *r = pbx_core_req(ctx, i);
    uint64_t job = r->ctx.ctx.job_id;
    uint32_t gen = r->ctx.ctx.job_gen;
    uint32_t cap = ctx->pools[PBX_BOOTSTRAP_POOL_REQUESTS].capacity;
    uint32_t held = 0U;
    uint32_t k =
        pbx_core_index_head(ctx, PBX_BOOTSTRAP_POOL_REQUESTS, job, gen);
    for (uint32_t n = 0; n < cap && k != PBX_CORE_NIL; n++) {
        const pbx_core_request *q = pbx_core_req(ctx, k);
        if (q->ctx.ctx.job_id == job && q->ctx.ctx.job_gen == gen &&
            q->prompt != PBX_CORE_NIL) {
            held++;
        }
        k = pbx_core_index_next(ctx, PBX_BOOTSTRAP_POOL_REQUESTS, k);
    }
    return held;
}

bool pbx_core_prompt_take(pbx_core_ctx *ctx, uint32_t i)
{
    pbx_core_request *r = pbx_core_req(ctx, i);
    PBX_ASSERT(r->prompt == PBX_CORE_NIL);
    if (pbx_core_free_count(ctx, PBX_BOOTSTRAP_POOL_PROMPTS) == 0U ||
        pbx_core_prompts_of_job(ctx, i) >= ctx->prompt_share) {
        return false;
    }
    r->prompt = pbx_core_alloc(ctx, PBX_BOOTSTRAP_POOL_PROMPTS);
    pbx_core_prompt *p = (pbx_core_prompt *)pbx_core_rec(
        ctx, PBX_BOOTSTRAP_POOL_PROMPTS, r->prompt);
    /* The exact request and object to show; no RETRY, no answer yet. */
    p->object = pbx_core_req_object(ctx, r);
    p->request = i;
    p->request_generation = r->link.generation;
    p->retries = 0U;
    p->answer = 0U;
    return true;
}

void pbx_core_prompt_give(pbx_core_ctx *ctx, uint32_t i)
{
    pbx_core_request *r = pbx_core_req(ctx, i);
    if (r->prompt == PBX_CORE_NIL) {
        return;
    }
    pbx_core_free(ctx, PBX_BOOTSTRAP_POOL_PROMPTS, r->prompt);
    r->prompt = PBX_CORE_NIL;
    /* Any waiter may now fit (the pool had none free, or this was its
     * job's record): each asks again once, and one that still does not
     * fit waits again behind the others. */
    pbx_core_splice(ctx, PBX_CORE_Q_INTAKE, PBX_CORE_Q_WAIT_PROMPT);
}
