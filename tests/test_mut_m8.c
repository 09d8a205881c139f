/*
 * test_mut_m8.c: behaviour that the mutation runs of issue 22 item 7
 * (make mutate, docs/TESTING.md "Mutation testing") left unchecked on
 * today's tree: a BEGIN never copies stack bytes into the arena, and a
 * late COMMIT receipt refused while the request's wake is still parked
 * (NOTIFY, decision published) is junk owned by no request. Each test is
 * named for the behaviour it pins, not for a mutant.
 */
#include "../core/pbx_core.h"
#include "core/pbx_core_inspect.h"
#include "runner/pbx_test.h"
#include "test_core_harness.h"

static const uint8_t m8_sel[] = "docs/report.txt";
#define M8_SEL_LEN ((uint32_t)(sizeof(m8_sel) - 1U))

/* Bytes of stack the painter dirties: far more than the frames of the
 * public intake path below the calling test (a BEGIN record is about
 * half a kilobyte). */
#define M8_PAINT_BYTES 32768U

/* Fills the stack below the caller's frame with a nonzero pattern, so a
 * record later built there without being cleared holds 0xA5 bytes where
 * nothing wrote it. Kept out of line so its frame is really used. */
static __attribute__((noinline)) void m8_paint_stack(void)
{
    volatile uint8_t paint[M8_PAINT_BYTES];
    for (size_t i = 0; i < sizeof(paint); i++) {
        paint[i] = 0xA5U;
    }
}

/* Whether count bytes at p are all zero. */
static bool m8_zero(const uint8_t *p, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        if (p[i] != 0U) {
            return false;
        }
    }
    return true;
}

/* Whether the count bytes at a and b are equal, padding bytes included:
 * the stored record must match byte for byte, not only field by field. */
static bool m8_same_bytes(const void *a, const void *b, size_t count)
{
    const uint8_t *x = a;
    const uint8_t *y = b;
    for (size_t i = 0; i < count; i++) {
        if (x[i] != y[i]) {
            return false;
        }
    }
    return true;
}

/* The BEGIN record the core stores is exactly the decoded request: the
 * entry and label bytes past their lengths and every padding byte are
 * zero, even when the stack the intake path runs on holds old nonzero
 * bytes (make eva: no stack bytes reach the arena). The reference is the
 * test's own zeroed record, which the decoder reproduces field by field. */
PBX_TEST(mut_m8_begin_stores_no_stack_bytes_in_the_arena)
{
    th_h *h = th_new(2);
    pbx_ipc_begin b;
    pbx_ipc_id id = {0, 0};
    uint32_t dest = 0;
    th_default_begin(&b, m8_sel, M8_SEL_LEN);
    m8_paint_stack();
    PBX_REQUIRE(th_begin(h, &b, &id, &dest) == 0U);
    const pbx_core_request *r = pbx_core_inspect_request(&h->core, id.index);
    const pbx_ipc_entry *e = &r->ctx.ctx.entry;
    const pbx_ipc_label *l = &r->ctx.label;
    PBX_CHECK_EQ(e->len, b.ctx.entry.len);
    PBX_CHECK(m8_zero(e->bytes + e->len, sizeof(e->bytes) - e->len));
    PBX_CHECK_EQ(l->len, b.label.len);
    PBX_CHECK(m8_zero(l->bytes + l->len, sizeof(l->bytes) - l->len));
    PBX_CHECK(m8_same_bytes(&r->ctx, &b, sizeof(b)));
    th_free(h);
}

/* The orphan count of request index. */
static uint32_t m8_orphans(const th_h *h, uint32_t index)
{
    return pbx_core_inspect_request(&h->core, index)->orphans;
}

/* A request whose CANCELLED decision is published but whose wake launchd's
 * route pushed back (state NOTIFY: the wake is parked, not yet sent) gets
 * a late COMMIT. The receipt is refused and its deletion must be retried:
 * it is junk owned by no request, since the published decision cannot
 * wait for it (the same rule as after the wake, DECIDED, in
 * core_late_commit_receipt_after_publication_is_unowned). */
PBX_TEST(mut_m8_late_commit_receipt_while_the_wake_is_parked_is_unowned)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    pbx_ipc_id id = {0, 0};
    uint32_t dest = 0;
    th_default_begin(&b, m8_sel, M8_SEL_LEN);
    PBX_REQUIRE(th_begin(h, &b, &id, &dest) == 0U);
    th_push_wake(h, PBX_CORE_IO_BUSY);
    PBX_CHECK_EQ(th_cancel(h, id), 0U);
    th_run(h);
    PBX_CHECK_EQ(pbx_core_inspect_request(&h->core, id.index)->link.state,
                 PBX_CORE_ST_NOTIFY);
    PBX_CHECK_EQ(h->wake_count, 0U);
    h->hold_slot = dest;
    PBX_CHECK_EQ(th_commit(h, id, dest, dest), PBX_E_CORE_CLEANUP_PENDING);
    PBX_CHECK_EQ(m8_orphans(h, id.index), 0U);
    /* launchd's route takes the wake; the receipt is deleted once the
     * kernel lets go, and everything ends with nothing left behind. */
    h->hold_slot = PBX_CORE_SLOT_NONE;
    pbx_core_on_route_ready(&h->core, PBX_CORE_ROUTE_LAUNCHD);
    pbx_core_on_tick(&h->core);
    th_run(h);
    PBX_CHECK_EQ(h->step_err, PBX_OK);
    PBX_CHECK_EQ(h->wake_count, 1U);
    th_free(h);
}
