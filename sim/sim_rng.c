/*
 * sim_rng.c: the one PRNG, fault rolls, the trace hash and the event ring.
 * Nothing here reads time or addresses: the hash covers integers only.
 */
#include "sim/sim.h"

#include <stdarg.h>

static const char *const sim_fault_names[SIM_F_COUNT] = {
    "busy",      "failed",  "status",   "flip",      "trunc",    "echo",
    "surplus",   "badcap",  "replay",   "del-trans", "del-perm", "notify",
    "wake-fail", "reserve", "delivery", "client",    "cancel",   "expire",
    "pbx1",      "nth",     "late",     "dup",       "drop",     "silent",
    "hangup",    "stall",   "broker",
};

static const char *const sim_event_names[] = {
    "?",      "boot",    "public",  "reply",   "step",   "call",
    "answer", "delete",  "reserve", "release", "alias",  "wake",
    "ready",  "deliver", "fault",   "heal",    "cancel", "tick",
    "send",   "lost",    "route",   "time",
};

const char *sim_fault_name(sim_fault f)
{
    return (unsigned)f < (unsigned)SIM_F_COUNT ? sim_fault_names[f] : "?";
}

/* splitmix64 spreads one seed over the four state words. */
static uint64_t sim_splitmix(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

void sim_rng_seed(sim_world *w, uint64_t seed)
{
    uint64_t x = seed;
    for (size_t i = 0; i < 4U; i++) {
        w->rng[i] = sim_splitmix(&x);
    }
    w->side = seed ^ 0xB20CE2A11A5B05EULL;
}

uint32_t sim_side_below(sim_world *w, uint32_t n)
{
    return (uint32_t)(((sim_splitmix(&w->side) >> 32) * (uint64_t)n) >> 32);
}

static uint64_t sim_rotl(uint64_t v, unsigned k)
{
    return (v << k) | (v >> (64U - k));
}

/* The fuzzer's feed (sim_rng_feed): the bytes still to be handed out as
 * draws, and how many. Empty in pbx-sim, whose draws never see it. */
static const uint8_t *sim_feed_bytes;
static size_t sim_feed_left;

void sim_rng_feed(const uint8_t *bytes, size_t len)
{
    sim_feed_bytes = len == 0U ? NULL : bytes;
    sim_feed_left = sim_feed_bytes == NULL ? 0U : len;
}

size_t sim_rng_feed_left(void)
{
    return sim_feed_left;
}

/* Takes the feed's next byte as a whole draw: the byte repeated across
 * all 64 bits, so sim_below(n) spans [0, n) and sim_chance's odds follow
 * the byte. */
static uint64_t sim_feed_next(void)
{
    uint64_t b = sim_feed_bytes[0];
    sim_feed_bytes++;
    sim_feed_left--;
    return b * 0x0101010101010101ULL;
}

uint64_t sim_rand(sim_world *w)
{
    if (sim_feed_left != 0U) {
        return sim_feed_next();
    }
    uint64_t *s = w->rng;
    uint64_t out = sim_rotl(s[1] * 5U, 7U) * 9U;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = sim_rotl(s[3], 45U);
    return out;
}

uint32_t sim_below(sim_world *w, uint32_t n)
{
    /* The high 32 bits scaled into [0, n): no division. */
    return (uint32_t)(((sim_rand(w) >> 32) * (uint64_t)n) >> 32);
}

bool sim_chance(sim_world *w, uint32_t per_1024)
{
    return sim_below(w, 1024U) < per_1024;
}

bool sim_fault_fires(sim_world *w, sim_fault f)
{
    if (w->healed != 0U || w->rate[f] == 0U) {
        return false;
    }
    if (!sim_chance(w, w->rate[f])) {
        return false;
    }
    w->faults_fired++;
    sim_event_add(w, SIM_EV_FAULT, (uint64_t)f, 0, 0, 0);
    return true;
}

/* Folds the 64-bit word v into the FNV-1a trace hash (one round per
 * word: the events are integers, not bytes). */
static void sim_hash_u64(sim_world *w, uint64_t v)
{
    w->hash ^= v;
    w->hash *= 0x100000001B3ULL;
}

void sim_event_add(sim_world *w, uint32_t code, uint64_t a0, uint64_t a1,
                   uint64_t a2, uint64_t a3)
{
    sim_event *e = &w->ring[w->events % SIM_EVENTS];
    e->step = w->step;
    e->code = code;
    e->a[0] = a0;
    e->a[1] = a1;
    e->a[2] = a2;
    e->a[3] = a3;
    w->events++;
    sim_hash_u64(w, w->step);
    sim_hash_u64(w, code);
    for (size_t i = 0; i < 4U; i++) {
        sim_hash_u64(w, e->a[i]);
    }
}

void sim_fail(sim_world *w, const char *fmt, ...)
{
    if (w->violation[0] != '\0') {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    (void)vsnprintf(w->violation, sizeof(w->violation), fmt, ap);
    va_end(ap);
    if (w->violation[0] == '\0') {
        (void)snprintf(w->violation, sizeof(w->violation), "violation");
    }
}

void sim_events_print(const sim_world *w, FILE *out)
{
    uint64_t first = w->events > SIM_EVENTS ? w->events - SIM_EVENTS : 0U;
    for (uint64_t n = first; n < w->events; n++) {
        const sim_event *e = &w->ring[n % SIM_EVENTS];
        const char *name =
            e->code < sizeof(sim_event_names) / sizeof(sim_event_names[0])
                ? sim_event_names[e->code]
                : "?";
        (void)fprintf(out, "  step %llu %-8s %#llx %#llx %#llx %#llx\n",
                      (unsigned long long)e->step, name,
                      (unsigned long long)e->a[0], (unsigned long long)e->a[1],
                      (unsigned long long)e->a[2], (unsigned long long)e->a[3]);
    }
}
