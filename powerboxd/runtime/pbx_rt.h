/*
 * pbx_rt.h: the powerboxd runtime, the port-independent part of the
 * executable. It authenticates the startup inventory, builds the one arena
 * from PBX1, implements the core's effect table over the syscall port
 * (powerboxd/port/pbx_port.h) and runs the service loop. Everything here
 * is freestanding: it links into the same image on Linux and EriX.
 *
 * This header is the runtime's contract with whoever starts powerboxd: the
 * command line, the readiness report sent to the supervisor, and the exit
 * status of every refusal (docs/PORTS.md lists them too).
 */
#ifndef PBX_RT_H
#define PBX_RT_H

#include "base/pbx_base.h"
#include "bootstrap/pbx_bootstrap.h"

/**
 * pbx_rt_exit names every exit status of the runtime. Startup refusals
 * each have their own status below 64; once running, a fail-stop exits
 * with the core's service-local status (pbx_core_exit: 64 public receive,
 * dispatch or reply; 65 cleanup; 66 retained progression; 67 notification),
 * which the runtime also uses for failures of its own in those classes.
 */
typedef enum pbx_rt_exit {
    /** The command line is not exactly one endpoint name (argv[1], not
     * empty, not beginning with '-'); -h and --help print the usage. */
    PBX_RT_EXIT_ARGS = 10,
    /** The syscall port could not be prepared. */
    PBX_RT_EXIT_PORT_INIT = 11,
    /** Slot 3 holds nothing. */
    PBX_RT_EXIT_PBX1_MISSING = 12,
    /** Slot 3 is not a memory object. */
    PBX_RT_EXIT_PBX1_KIND = 13,
    /** The PBX1 memory object is not sealed against every change. */
    PBX_RT_EXIT_PBX1_UNSEALED = 14,
    /** The PBX1 object is empty, too large, or could not be read whole. */
    PBX_RT_EXIT_PBX1_SIZE = 15,
    /** The record does not parse or authenticate (length, magic, version,
     * digest, reserved fields, geometry). */
    PBX_RT_EXIT_PBX1_RECORD = 16,
    /** A pool's type layout differs from the compiled record types. */
    PBX_RT_EXIT_PBX1_LAYOUT = 17,
    /** The patched page count differs from the derived arena extent. */
    PBX_RT_EXIT_PBX1_EXTENT = 18,
    /** The transient slot range PBX1 implies does not fit the slot space. */
    PBX_RT_EXIT_TRANSIENT = 19,
    /** The arena could not be mapped. */
    PBX_RT_EXIT_ARENA = 20,
    /** A startup inventory slot is empty. */
    PBX_RT_EXIT_INV_MISSING = 21,
    /** A startup inventory slot holds the wrong kind of capability. */
    PBX_RT_EXIT_INV_KIND = 22,
    /** A startup capability lacks a right it needs. */
    PBX_RT_EXIT_INV_RIGHTS_MISSING = 23,
    /** A startup capability carries a right it must not have. */
    PBX_RT_EXIT_INV_RIGHTS_EXTRA = 24,
    /** Wrong provenance, including a startup-transferred public endpoint
     * (the public endpoint slot must be empty at startup). */
    PBX_RT_EXIT_INV_PROVENANCE = 25,
    /** Any other inventory refusal. */
    PBX_RT_EXIT_INV_OTHER = 26,
    /** The public endpoint could not be created at its slot. */
    PBX_RT_EXIT_PUBLIC = 27,
    /** The ready-phase inventory (with the public endpoint) is not exact. */
    PBX_RT_EXIT_READY_INVENTORY = 28,
    /** The core refused the layout or the arena. */
    PBX_RT_EXIT_CORE_INIT = 29,
    /** The readiness report could not be sent to the supervisor. */
    PBX_RT_EXIT_READY_SEND = 30,
    /** The launchd broker endpoint (slot 10) could not be received on. */
    PBX_RT_EXIT_BROKER = 31,
    /** The hard descriptor limit (Linux: RLIMIT_NOFILE) is below the
     * transient range's end (slot 4095), so the range cannot be used
     * whole; the soft limit is raised when only it is lower. */
    PBX_RT_EXIT_NOFILE = 32
    /* 68 and 69 (a silent or hung-up peer) are retired: no peer's timing
     * or death ends the service any more. */
} pbx_rt_exit;

/** PBX_RT_READY_MAGIC is the u32 whose little-endian bytes are "PBXR". */
#define PBX_RT_READY_MAGIC 0x52584250U
/** PBX_RT_READY_VERSION is the readiness report version. */
#define PBX_RT_READY_VERSION 1U
/** PBX_RT_READY_KIND_READY says every startup check passed. */
#define PBX_RT_READY_KIND_READY 1U
/**
 * PBX_RT_READY_BYTES is the length of the readiness report, one datagram on
 * the supervisor route, little-endian: u32 magic, u16 version, u16 kind,
 * u32 public endpoint slot, u32 first transient slot, u32 transient slot
 * count, u32 reserved (0), u64 arena bytes. It carries no capability.
 */
#define PBX_RT_READY_BYTES 32U

/**
 * PBX_RT_STEPS_PER_WAKE bounds the retained-work steps the loop performs
 * between two intake events, so that neither starves the other.
 */
#define PBX_RT_STEPS_PER_WAKE 8U

/**
 * PBX_RT_RETRY_MS_FIRST is the first wait, in milliseconds, before the
 * core's deferred work (ttyd's RETRY, a scope's backpressure, a transient
 * deletion, an inexact or missing cleanup answer) is retried by a tick;
 * each wait that ends without an event doubles it.
 */
#define PBX_RT_RETRY_MS_FIRST 10U

/** PBX_RT_RETRY_MS_MAX caps the tick wait (milliseconds); the wait
 * starts again from PBX_RT_RETRY_MS_FIRST only after nothing was deferred
 * for this long. */
#define PBX_RT_RETRY_MS_MAX 640U

/**
 * PBX_RT_TICK_TURNS is how many loop turns (one event and at most
 * PBX_RT_STEPS_PER_WAKE steps each) may pass without a timed-out wait
 * before the loop ticks the core anyway, so steady traffic cannot starve
 * deferred retries. The core's deferred work is retried once per tick: at
 * most once per idle wait (PBX_RT_RETRY_MS_FIRST doubling up to
 * PBX_RT_RETRY_MS_MAX) or per PBX_RT_TICK_TURNS turns.
 */
#define PBX_RT_TICK_TURNS 64U

/**
 * PBX_RT_TRANSIENT_MAX bounds the transient slot range: PBX1's
 * transient-slot capacity plus PBX_PORT_RECEIPTS_MAX intake slots must
 * fit, and the range (from slot 64) ends inside Linux's default hard
 * descriptor limit (4096); the port raises the soft limit to it at
 * startup (PBX_RT_EXIT_NOFILE when the hard limit is lower). It is
 * PBX_BOOTSTRAP_TRANSIENT_RANGE_MAX, the bound the shared startup check
 * (pbx_core_startup_check) applies.
 */
#define PBX_RT_TRANSIENT_MAX PBX_BOOTSTRAP_TRANSIENT_RANGE_MAX

#endif /* PBX_RT_H */
