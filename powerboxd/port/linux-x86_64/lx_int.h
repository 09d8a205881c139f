/*
 * lx_int.h: helpers shared by the files of the linux-x86_64 port. Private
 * to the port; the runtime sees only pbx_port.h.
 */
#ifndef PBX_LX_INT_H
#define PBX_LX_INT_H

#include "powerboxd/port/linux-x86_64/lx_sys.h"
#include "powerboxd/port/pbx_port.h"

/** LX_FLAG_INIT marks a context prepared by pbx_port_init. */
#define LX_FLAG_INIT 1U
/** LX_FLAG_LISTEN_ARMED marks the public endpoint as watched by epoll. */
#define LX_FLAG_LISTEN_ARMED 2U
/** LX_FLAG_ARENA marks the arena as mapped. */
#define LX_FLAG_ARENA 4U
/** LX_FLAG_BROKER_ARMED marks the broker endpoint as watched by epoll. */
#define LX_FLAG_BROKER_ARMED 8U
/** LX_FLAG_HELD marks public intake as held (pbx_port_public_hold). */
#define LX_FLAG_HELD 16U
/** LX_FLAG_BROKER_HELD marks a broker watch suspended by the hold. */
#define LX_FLAG_BROKER_HELD 32U

/** LX_TAG_* tell epoll registrations apart (upper 32 bits of data). */
#define LX_TAG_LISTEN 1U
/** A public connection. */
#define LX_TAG_CLIENT 2U
/** A peer route watched for the runtime. */
#define LX_TAG_ROUTE 3U
/** The startup-transferred broker endpoint. */
#define LX_TAG_BROKER 4U
/** The supervisor connection (ROUTE_ATTACH). */
#define LX_TAG_SUPERVISOR 5U

/** LX_LISTEN_EVENTS is what the public endpoint is watched for: a pending
 * connection, and its receive side shut down, which a level-triggered wait
 * would otherwise report as readable for ever while accept finds nothing. */
#define LX_LISTEN_EVENTS (LX_EPOLLIN | LX_EPOLLRDHUP)

/** LX_SEALS_ALL is the seal set that makes a memfd immutable. */
#define LX_SEALS_ALL                                                           \
    (LX_F_SEAL_SEAL | LX_F_SEAL_SHRINK | LX_F_SEAL_GROW | LX_F_SEAL_WRITE)

/** LX_BADGE_LAST is the highest connection badge the port hands out; the
 * values above it are left to the runtime's reserved badges. */
#define LX_BADGE_LAST UINT32_C(0xFFFFFFF0)

/** LX_SLOT_LIMIT is the highest slot number the port will ever touch. */
#define LX_SLOT_LIMIT 65535

/**
 * lx_slot_valid reports whether slot is a number the port may pass to the
 * kernel (0..LX_SLOT_LIMIT).
 */
static inline int lx_slot_valid(int32_t slot)
{
    return slot >= 0 && slot <= LX_SLOT_LIMIT;
}

/** LX_PRIVATE_SLOTS is the room the port's own objects need above the
 * startup slots: epoll, placeholder, public endpoint, connections, spare. */
#define LX_PRIVATE_SLOTS ((int32_t)PBX_PORT_CLIENTS_MAX + 8)

/**
 * lx_to_private moves a descriptor the port just created out of the startup
 * slots, to the lowest free number at or above PBX_PORT_STARTUP_SLOTS, and
 * checks it stays below the reservable range. Returns the new number, or
 * -1 with the descriptor deleted.
 */
int32_t lx_to_private(const pbx_port_ctx *ctx, int64_t fd);

/** lx_slot_open reports whether slot currently holds anything (F_GETFD). */
int lx_slot_open(int32_t slot);

/**
 * lx_close_proven closes slot and proves it is empty afterwards. close()
 * always frees the number on Linux, even when it reports an error: its
 * answer 0 is the proof; after any other answer F_GETFD answering EBADF
 * is. It keeps no placeholder record: a reservable slot is noted empty by
 * its caller (lx_placed_note).
 */
pbx_err lx_close_proven(int32_t slot);

/**
 * lx_identity stores the inode identity and mode of slot, or returns
 * PBX_E_PORT_SYSCALL (the slot is empty or not queryable).
 */
pbx_err lx_identity(int32_t slot, uint64_t *space, uint64_t *id,
                    uint32_t *mode);

/** LX_NOTE_UNKNOWN: the port does not know what reservable slot holds. */
#define LX_NOTE_UNKNOWN 0
/** LX_NOTE_PLACED: the port's own placeholder sits in the slot. */
#define LX_NOTE_PLACED 1
/** LX_NOTE_MOVED: a receipt the port moved or copied there sits in it. */
#define LX_NOTE_MOVED 2

/**
 * lx_placed_note records what reservable slot now holds: LX_NOTE_PLACED,
 * LX_NOTE_MOVED or LX_NOTE_UNKNOWN (any other value); any other slot has
 * no record. Every dup3 into and close of a reservable slot notes it, and
 * powerboxd runs one thread, so a record other than unknown is what the
 * slot holds without asking the kernel (issue 23 item 4: no fstat or
 * fcntl per message on what the port already knows).
 */
void lx_placed_note(pbx_port_ctx *ctx, int32_t slot, int note);

/** lx_is_placeholder reports whether slot holds the context's placeholder
 * (a reservable slot: by the port's record, lx_placed_note). */
int lx_is_placeholder(const pbx_port_ctx *ctx, int32_t slot);

/** lx_epoll_set adds (op ADD), changes (MOD) or removes (DEL) slot. */
pbx_err lx_epoll_set(const pbx_port_ctx *ctx, int32_t op, int32_t slot,
                     uint32_t tag, uint32_t events);

/**
 * lx_broker_unwatch stops watching the broker endpoint after its sender
 * hung up (the slot keeps holding it); harmless when already unwatched.
 */
void lx_broker_unwatch(pbx_port_ctx *ctx);

/**
 * lx_recv receives one message on slot into buf (cap_bytes long) with
 * flags, staging its receipts and judging truncation and foreign control
 * data (every receipt deleted on a refusal). PBX_E_PORT_AGAIN: nothing
 * waits; PBX_E_PORT_PEER_CLOSED: hang-up (an empty read without
 * receipts, or a reset).
 */
pbx_err lx_recv(pbx_port_ctx *ctx, int32_t slot, uint8_t *buf,
                uint32_t cap_bytes, pbx_port_msg *msg, int32_t flags);

/**
 * lx_supervisor_unwatch stops watching the supervisor connection after it
 * hung up or failed (the slot keeps holding it); harmless when unwatched.
 */
void lx_supervisor_unwatch(pbx_port_ctx *ctx);

/**
 * lx_nofile_fit raises the soft RLIMIT_NOFILE to slot_max + 1 when it is
 * lower, so every slot of the reservable range can be used, never above
 * the hard limit. PBX_E_PORT_NOFILE: the hard limit is below slot_max + 1
 * (nothing changed); PBX_E_PORT_SYSCALL: the limit could not be read or
 * set.
 */
pbx_err lx_nofile_fit(int32_t slot_max);

/** lx_now_ms reads CLOCK_MONOTONIC in milliseconds; 0 when it fails. */
uint64_t lx_now_ms(void);

#endif /* PBX_LX_INT_H */
