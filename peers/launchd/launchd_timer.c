/*
 * launchd_timer.c: launchd's deadlines in one indexed binary min-heap.
 * Every call, orphan, connection and job has one handle, armed at most
 * once with its next deadline (a later arm moves it), so a loop wake-up
 * looks only at the heap's top and pops what is due: its cost does not
 * grow with the tables' sizes (earlier, each wake-up walked 512 call and
 * 512 orphan slots and every connection twice). What a due handle means
 * is launchd_wake.c's.
 */
#include "peers/launchd/launchd.h"

/* More levels than a heap of LAUNCHD_TIMERS entries has. */
#define LAUNCHD_TIMER_DEPTH 32U

/* Whether heap entry a is due before entry b. */
static bool launchd_timer_less(const launchd_theap *t, uint32_t a, uint32_t b)
{
    return t->due[t->heap[a]] < t->due[t->heap[b]];
}

/* Swaps heap entries a and b and their positions. */
static void launchd_timer_swap(launchd_theap *t, uint32_t a, uint32_t b)
{
    uint16_t h = t->heap[a];
    t->heap[a] = t->heap[b];
    t->heap[b] = h;
    t->pos[t->heap[a]] = (uint16_t)(a + 1U);
    t->pos[t->heap[b]] = (uint16_t)(b + 1U);
}

/* Moves entry i up or down until the heap order holds again (each way
 * bounded by the heap's depth, under LAUNCHD_TIMER_DEPTH). */
static void launchd_timer_fix(launchd_theap *t, uint32_t i)
{
    for (uint32_t d = 0; d < LAUNCHD_TIMER_DEPTH && i > 0U &&
                         launchd_timer_less(t, i, (i - 1U) / 2U);
         d++) {
        launchd_timer_swap(t, i, (i - 1U) / 2U);
        i = (i - 1U) / 2U;
    }
    for (uint32_t d = 0; d < LAUNCHD_TIMER_DEPTH; d++) {
        uint32_t l = 2U * i + 1U;
        uint32_t m = i;
        if (l < t->n && launchd_timer_less(t, l, m)) {
            m = l;
        }
        if (l + 1U < t->n && launchd_timer_less(t, l + 1U, m)) {
            m = l + 1U;
        }
        if (m == i) {
            return;
        }
        launchd_timer_swap(t, i, m);
        i = m;
    }
}

/* Takes handle h out of the heap (it must be in it). */
static void launchd_timer_remove(launchd_theap *t, uint32_t h)
{
    uint32_t i = (uint32_t)t->pos[h] - 1U;
    t->pos[h] = 0U;
    t->n--;
    if (i == t->n) {
        return;
    }
    t->heap[i] = t->heap[t->n];
    t->pos[t->heap[i]] = (uint16_t)(i + 1U);
    launchd_timer_fix(t, i);
}

void launchd_timer_set(launchd_theap *t, uint32_t h, uint64_t due_ms)
{
    if (h >= LAUNCHD_TIMERS) {
        return;
    }
    if (due_ms == UINT64_MAX) {
        if (t->pos[h] != 0U) {
            launchd_timer_remove(t, h);
        }
        return;
    }
    t->due[h] = due_ms;
    if (t->pos[h] == 0U) {
        t->heap[t->n] = (uint16_t)h;
        t->pos[h] = (uint16_t)(t->n + 1U);
        t->n++;
    }
    launchd_timer_fix(t, (uint32_t)t->pos[h] - 1U);
}

uint32_t launchd_timer_pop(launchd_theap *t, uint64_t now_ms)
{
    if (t->n == 0U || t->due[t->heap[0]] > now_ms) {
        return LAUNCHD_TIMERS;
    }
    uint32_t h = t->heap[0];
    launchd_timer_remove(t, h);
    return h;
}

int launchd_timer_wait(const launchd_theap *t, uint64_t now_ms, int cap_ms)
{
    if (t->n == 0U) {
        return cap_ms;
    }
    uint64_t due = t->due[t->heap[0]];
    if (due <= now_ms) {
        return 0;
    }
    return due - now_ms < (uint64_t)cap_ms ? (int)(due - now_ms) : cap_ms;
}
