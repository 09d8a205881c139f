/*
 * bench.h: the benchmark programs behind `make bench` (hosted; never
 * shipped).
 *
 * One executable, pbx-bench, with one subcommand per measurement: the
 * core lifecycle through a lean O(1) ops table (core), its physical floor
 * with the codec and SHA-256 alone (floor), SHA-256 throughput against the
 * system's sha256sum (sha2), and raw SOCK_SEQPACKET round trips with and
 * without fd passing (seqpacket). Instruction counts come from running the
 * same program under callgrind with --toggle-collect on the functions
 * named here (bench/bench.sh), so no client requests are compiled in.
 */
#ifndef PBX_BENCH_H
#define PBX_BENCH_H

#include "core/pbx_core.h"

#include <stdbool.h>
#include <stdint.h>

/**
 * BENCH_MEASURED marks a function callgrind measures by name: it is never
 * inlined, cloned or merged with an identical twin (gcc's noipa; clang
 * neither clones nor merges at -O2 without being asked).
 */
#if defined(__clang__)
/** BENCH_MEASURED under clang: noinline is enough. */
#define BENCH_MEASURED __attribute__((noinline))
#else
/** BENCH_MEASURED under gcc: noipa (no inlining, cloning or merging). */
#define BENCH_MEASURED __attribute__((noipa))
#endif

/** BENCH_T_FIRST is the first transient slot of the bench slot table. */
#define BENCH_T_FIRST 64U

/** bench_slot is one fake slot of the bench ops table. */
typedef struct bench_slot {
    /** pbx_capabi_kind of what the slot holds. */
    uint32_t kind;
    /** Rights bits of the capability held. */
    uint32_t rights;
    /** pbx_capabi_provenance of the capability held. */
    uint32_t prov;
    /** True while reserved by slot_reserve and not yet released. */
    bool reserved;
} bench_slot;

/** BENCH_PEND_MAX bounds the replies the fake peers hold at once. */
#define BENCH_PEND_MAX 8U

/**
 * bench_pend is one reply a fake peer built when the core sent its call,
 * waiting to be delivered as an event (bench_deliver_all).
 */
typedef struct bench_pend {
    /** Route the reply arrives on (the call's route). */
    uint32_t route;
    /** Scope slot it comes through, or PBX_CORE_SLOT_NONE. */
    uint32_t via_slot;
    /** Bytes in frame. */
    size_t len;
    /** Receipts that arrive with it. */
    uint32_t slots[PBX_CORE_RECV_SLOTS_MAX];
    /** Number of receipts. */
    size_t n;
    /** The reply frame (echoing the call's seq, op and identity). */
    uint8_t frame[PBX_CORE_FRAME_BYTES_MAX];
} bench_pend;

/**
 * bench_env is one core plus the lean ops table that plays the kernel and
 * the four peers on the happy path. Every op is O(1): free transient
 * slots sit on a stack, so the ops table never hides a scan that grows
 * with capacity. Created by bench_env_new, released by bench_env_free.
 */
typedef struct bench_env {
    /** The core under measurement. */
    pbx_core_ctx core;
    /** The arena (page-aligned, exactly the PBX1 layout's arena_bytes). */
    uint8_t *arena;
    /** Bytes in arena (issue 23 item 8: reported per request). */
    size_t arena_bytes;
    /** Fake slot table of slot_count entries. */
    bench_slot *slots;
    /** Entries in slots (BENCH_T_FIRST + transient count). */
    uint32_t slot_count;
    /** Stack of free (empty, unreserved) transient slots. */
    uint32_t *free_stack;
    /** Entries on free_stack. */
    uint32_t free_top;
    /** Pool capacity the PBX1 geometry was built with. */
    uint32_t capacity;
    /** Object identities handed out by the fake vfsd. */
    uint32_t object_seq;
    /** Wakes queued to the fake launchd. */
    uint32_t wakes;
    /** Protocol violations seen by the fake kernel and peers (stay 0). */
    uint32_t violations;
    /** Core events driven: public frames, progressing steps, delivery
     * reports and peer replies. */
    uint64_t events;
    /** Ring of replies waiting for delivery: first entry. */
    uint32_t pend_head;
    /** Replies waiting for delivery. */
    uint32_t pend_count;
    /** The ring itself. */
    bench_pend pend[BENCH_PEND_MAX];
} bench_env;

/**
 * bench_env_new builds a PBX1 record for pools of capacity records with
 * the bootstrap encoder, parses and authenticates it back, derives the
 * arena layout and initialises a core over it. Returns NULL on failure
 * (printed to stderr). The result is released with bench_env_free.
 */
bench_env *bench_env_new(uint32_t capacity);

/** bench_env_free releases env and its arena; NULL is ignored. */
void bench_env_free(bench_env *env);

/**
 * bench_put_cap places a received SEND endpoint capability in slot (or in
 * a free transient slot when slot is PBX_CORE_SLOT_NONE) and returns the
 * slot, or PBX_CORE_SLOT_NONE when no slot is free.
 */
uint32_t bench_put_cap(bench_env *env, uint32_t slot, uint32_t rights);

/**
 * bench_default_begin fills *b with the routine install-mode, one-shot
 * READ FILE BEGIN every benchmark uses, digest included. Returns false
 * only if hashing fails.
 */
bool bench_default_begin(pbx_ipc_begin *b);

/**
 * bench_selector returns the benchmark selector (static storage, not
 * NUL-terminated for the purpose of its length) and its length in *len.
 */
const uint8_t *bench_selector(uint32_t *len);

/**
 * bench_ops is the lean effect table; its user pointer is a bench_env.
 * Its send builds the fake peer's reply at once and queues it; the reply
 * reaches the core only through bench_deliver_all.
 */
extern const pbx_core_ops bench_ops;

/**
 * bench_deliver_all hands every queued peer reply to the core
 * (pbx_core_on_peer_reply), oldest first, counting each as one event.
 * Returns false on a core error or a reply the core refused.
 */
bool bench_deliver_all(bench_env *env);

/**
 * bench_core_main runs `pbx-bench core`: argv holds --cap, --live and
 * --n. Returns the process exit status.
 */
int bench_core_main(int argc, char **argv);

/** bench_floor_main runs `pbx-bench floor --n N`; returns exit status. */
int bench_floor_main(int argc, char **argv);

/** bench_sha2_main runs `pbx-bench sha2`; returns exit status. */
int bench_sha2_main(int argc, char **argv);

/** bench_seqpacket_main runs `pbx-bench seqpacket`; returns status. */
int bench_seqpacket_main(int argc, char **argv);

/**
 * bench_arg_u32 returns the value following the option name in argv, or
 * def when absent. A malformed value prints an error and exits 2.
 */
uint32_t bench_arg_u32(int argc, char **argv, const char *name, uint32_t def);

/** bench_now_ns returns CLOCK_MONOTONIC in nanoseconds. */
uint64_t bench_now_ns(void);

/** bench_cycles returns the time-stamp counter, or 0 where there is none. */
uint64_t bench_cycles(void);

#endif /* PBX_BENCH_H */
