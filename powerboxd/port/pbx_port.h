/*
 * pbx_port.h: the narrow syscall port under the powerboxd executable.
 *
 * The runtime reaches the kernel only through these functions, so the very
 * runtime that is tested on the Linux host is the one that runs on EriX
 * apart from this layer. Every type is fixed width; nothing here names a C
 * library type. Slot numbers are data: the authority is the capability (on
 * Linux: the open file description) that a slot holds. Each port keeps its
 * mutable state in the caller-allocated pbx_port_ctx and nowhere else.
 *
 * Receipt discipline: a receive stages every capability that arrived in
 * the context. Before the next receive the caller moves each wanted receipt
 * into an exact reserved slot (pbx_port_receipt_move) and deletes the rest
 * (pbx_port_receipts_delete). Nothing arrives without being accounted for.
 */
#ifndef PBX_PORT_H
#define PBX_PORT_H

#include "base/pbx_base.h"

/** PBX_PORT_SLOT_NONE marks "no slot" wherever a slot is optional. */
#define PBX_PORT_SLOT_NONE (-1)

/**
 * PBX_PORT_STARTUP_SLOTS is the number of low slots (0 up to this value,
 * exclusive) that belong to the startup inventory. The port never creates
 * an object of its own there, so a missing startup capability stays
 * visibly missing instead of being shadowed by a port object.
 */
#define PBX_PORT_STARTUP_SLOTS 16

/** PBX_PORT_CLIENTS_MAX bounds the public connections held at once. */
#define PBX_PORT_CLIENTS_MAX 32U

/**
 * PBX_PORT_CLIENTS_PER_PID bounds the public connections one peer process
 * (by its pid at connect time, Linux SO_PEERCRED) holds at once, so one
 * process cannot take the whole table. A peer whose pid is unknown (0, as
 * on EriX) is never counted.
 */
#define PBX_PORT_CLIENTS_PER_PID (PBX_PORT_CLIENTS_MAX / 4U)

/**
 * PBX_PORT_RECEIPTS_MAX is how many receipts one receive can stage. The
 * Linux control buffer is sized for exactly this many descriptors, which is
 * the largest count any protocol message carries (one) plus a wide margin;
 * a message carrying more is detected as truncated and fully cleaned up.
 */
#define PBX_PORT_RECEIPTS_MAX 16U

/** PBX_PORT_PLACED_WORDS sizes pbx_port_ctx.placed: one bit for each of
 * the at most 65,536 reservable slots. */
#define PBX_PORT_PLACED_WORDS 1024U

/** PBX_PORT_WANT_READ asks pbx_port_watch to report readability. */
#define PBX_PORT_WANT_READ 1U
/** PBX_PORT_WANT_WRITE asks pbx_port_watch to report writability. */
#define PBX_PORT_WANT_WRITE 2U

/** pbx_port_event_kind names what pbx_port_wait observed. */
typedef enum pbx_port_event_kind {
    /** A new public connection was accepted; slot is the connection. */
    PBX_PORT_EV_PUBLIC_CONNECT = 1,
    /** A public connection has a message waiting; slot is the connection. */
    PBX_PORT_EV_PUBLIC_READABLE = 2,
    /** A public connection hung up and was closed; slot was its number. */
    PBX_PORT_EV_PUBLIC_CLOSED = 3,
    /** A watched peer route has data; slot is the route. */
    PBX_PORT_EV_ROUTE_READABLE = 4,
    /** A watched peer route accepts data again; slot is the route. */
    PBX_PORT_EV_ROUTE_WRITABLE = 5,
    /** A watched peer route hung up or failed; slot is the route. */
    PBX_PORT_EV_ROUTE_ERROR = 6,
    /** The broker endpoint (pbx_port_broker_open) hung up: the port no
     * longer watches it, and its slot still holds it. */
    PBX_PORT_EV_BROKER_CLOSED = 7,
    /** pbx_port_wait_for's time ran out without an event. */
    PBX_PORT_EV_TIMEOUT = 8,
    /** A public connection arrived while PBX_PORT_CLIENTS_MAX were open:
     * it was accepted and closed at once (a refusal the caller sees as a
     * hang-up); slot is PBX_PORT_SLOT_NONE. */
    PBX_PORT_EV_PUBLIC_REFUSED = 9,
    /** The supervisor connection (pbx_port_supervisor_open) has a message
     * waiting; slot is its slot. */
    PBX_PORT_EV_SUPERVISOR_READABLE = 10,
    /** The supervisor connection hung up or failed: the port no longer
     * watches it, and its slot still holds it. Reported once. */
    PBX_PORT_EV_SUPERVISOR_CLOSED = 11,
    /** A public connection arrived from a process that already held
     * PBX_PORT_CLIENTS_PER_PID: it was accepted and closed at once (a
     * hang-up to the caller); slot is PBX_PORT_SLOT_NONE and pid names the
     * process. */
    PBX_PORT_EV_PUBLIC_REFUSED_PID = 12
} pbx_port_event_kind;

/** pbx_port_event is one observation returned by pbx_port_wait. */
typedef struct pbx_port_event {
    /** kind is a pbx_port_event_kind value. */
    uint32_t kind;
    /** slot is the connection or route the event concerns. */
    int32_t slot;
    /** pid is the refused process; it is set only with kind
     * PBX_PORT_EV_PUBLIC_REFUSED_PID and means nothing otherwise. */
    uint32_t pid;
} pbx_port_event;

/** pbx_port_slot_kind classifies what a slot holds (pbx_port_slot_query). */
typedef enum pbx_port_slot_kind {
    /** The slot is empty. */
    PBX_PORT_KIND_EMPTY = 0,
    /** A reservation placeholder held for a transient destination. */
    PBX_PORT_KIND_PLACEHOLDER = 1,
    /** A message endpoint (Linux: SOCK_SEQPACKET socket). */
    PBX_PORT_KIND_ENDPOINT = 2,
    /** An authority-free notification route (Linux: SOCK_DGRAM). */
    PBX_PORT_KIND_NOTIFY = 3,
    /** A byte-stream channel (Linux: SOCK_STREAM). */
    PBX_PORT_KIND_STREAM = 4,
    /** A memory object (Linux: regular file or memfd). */
    PBX_PORT_KIND_MEMORY = 5,
    /** Anything else; never accepted as a protocol capability. */
    PBX_PORT_KIND_OTHER = 6
} pbx_port_slot_kind;

/** PBX_PORT_INFO_LISTENING flags an endpoint that accepts connections. */
#define PBX_PORT_INFO_LISTENING 1U
/** PBX_PORT_INFO_PEER flags that peer_pid/uid/gid are valid. */
#define PBX_PORT_INFO_PEER 2U
/**
 * PBX_PORT_INFO_SEALED flags a memory object whose contents and size can
 * never change again (Linux: all four memfd seals; EriX: immutable frame).
 */
#define PBX_PORT_INFO_SEALED 4U
/**
 * PBX_PORT_INFO_RIGHTS flags that rights holds the kernel's own record of
 * the capability's rights. Without it (Linux, where descriptors carry no
 * rights) the runtime derives rights from kind, state and provenance.
 */
#define PBX_PORT_INFO_RIGHTS 8U
/**
 * PBX_PORT_INFO_IDENTITY flags that object_id is also the slot's identity:
 * exactly what pbx_port_slot_identity would store for the same capability
 * (Linux: a socket that answered SO_TYPE, its nonzero inode). A port that
 * cannot vouch for that in the same query leaves it clear (EriX), and the
 * runtime then asks pbx_port_slot_identity.
 */
#define PBX_PORT_INFO_IDENTITY 16U

/** PBX_PORT_RIGHT_SEND: send through an endpoint (same value as capabi). */
#define PBX_PORT_RIGHT_SEND 0x01U
/** PBX_PORT_RIGHT_RECEIVE: receive on an endpoint. */
#define PBX_PORT_RIGHT_RECEIVE 0x02U
/** PBX_PORT_RIGHT_GRANT: transfer the capability onward. */
#define PBX_PORT_RIGHT_GRANT 0x04U
/** PBX_PORT_RIGHT_MANAGE: revoke or delete derived copies. */
#define PBX_PORT_RIGHT_MANAGE 0x08U
/** PBX_PORT_RIGHT_READ: read a memory object. */
#define PBX_PORT_RIGHT_READ 0x10U
/** PBX_PORT_RIGHT_WRITE: write a memory object. */
#define PBX_PORT_RIGHT_WRITE 0x20U

/** pbx_port_slot_info is the result of a slot query; plain data. */
typedef struct pbx_port_slot_info {
    /** kind is a pbx_port_slot_kind value. */
    uint32_t kind;
    /** flags is a set of PBX_PORT_INFO_* bits. */
    uint32_t flags;
    /** object_id identifies the kernel object (Linux: inode number). */
    uint64_t object_id;
    /** object_space qualifies object_id (Linux: device number). */
    uint64_t object_space;
    /** peer_pid is the connected peer's process (Linux: SO_PEERCRED). */
    int32_t peer_pid;
    /** peer_uid is the connected peer's user id. */
    uint32_t peer_uid;
    /** peer_gid is the connected peer's group id. */
    uint32_t peer_gid;
    /** rights: PBX_PORT_RIGHT_* bits, valid with PBX_PORT_INFO_RIGHTS. */
    uint32_t rights;
} pbx_port_slot_info;

/** pbx_port_msg describes one received message; plain data. */
typedef struct pbx_port_msg {
    /** from_slot is the connection or route that delivered it. */
    int32_t from_slot;
    /** len_bytes is the message length written to the buffer. */
    uint32_t len_bytes;
    /** receipts is how many receipts are now staged in the context. */
    uint32_t receipts;
    /**
     * badge identifies the capability the sender invoked, as the kernel
     * reported it (EriX: the endpoint capability's badge; Linux: a fresh
     * number the port gave the accepted connection, never reused). Zero
     * means the sender is unidentified (an unbadged EriX capability, a
     * badge wider than 32 bits, a peer-call reply or the broker endpoint):
     * the runtime never treats such a public message as a caller's.
     */
    uint32_t badge;
} pbx_port_msg;

/**
 * pbx_port_ctx is the whole mutable state of a port. The caller allocates
 * it (typically in static storage) and passes it to every call; the port
 * keeps no other state. Fields are private to the port implementation.
 */
typedef struct pbx_port_ctx {
    /** public_slot is the public endpoint, or PBX_PORT_SLOT_NONE. */
    int32_t public_slot;
    /** broker_slot is the startup-transferred broker endpoint received
     * on beside the public endpoint, or PBX_PORT_SLOT_NONE. */
    int32_t broker_slot;
    /** wait_slot is the event multiplexer (Linux: epoll instance). */
    int32_t wait_slot;
    /** placeholder_slot is the source every placeholder duplicates. */
    int32_t placeholder_slot;
    /** flags records port state bits private to the implementation. */
    uint32_t flags;
    /** slot_min is the first slot of the reservable range. */
    int32_t slot_min;
    /** slot_max is the last slot of the reservable range. */
    int32_t slot_max;
    /** placeholder_id is the placeholder object's identity. */
    uint64_t placeholder_id;
    /** placeholder_space qualifies placeholder_id. */
    uint64_t placeholder_space;
    /** arena_base is the mapped arena address, or zero. */
    uint64_t arena_base;
    /** arena_bytes is the mapped arena length. */
    uint64_t arena_bytes;
    /** client_count is the number of used entries in clients. */
    uint32_t client_count;
    /** staged_count is the number of entries used in staged. */
    uint32_t staged_count;
    /** clients holds the open public connections (unordered). */
    int32_t clients[PBX_PORT_CLIENTS_MAX];
    /** staged holds received receipts; NONE once moved or deleted. */
    int32_t staged[PBX_PORT_RECEIPTS_MAX];
    /** client_badges[i] is the badge of clients[i] (Linux). */
    uint32_t client_badges[PBX_PORT_CLIENTS_MAX];
    /** client_seen_ms[i] is when clients[i] was accepted or last
     * delivered a message, on the port's clock (Linux). */
    uint64_t client_seen_ms[PBX_PORT_CLIENTS_MAX];
    /** client_pids[i] is the peer pid of clients[i] at connect time, or 0
     * when unknown (EriX); counted against PBX_PORT_CLIENTS_PER_PID. */
    uint32_t client_pids[PBX_PORT_CLIENTS_MAX];
    /** next_badge is the next connection badge to hand out (Linux). */
    uint32_t next_badge;
    /** supervisor_slot is the supervisor connection watched for
     * ROUTE_ATTACH (pbx_port_supervisor_open), or PBX_PORT_SLOT_NONE. */
    int32_t supervisor_slot;
    /** placed has one bit per reservable slot (bit i: slot_min + i), set
     * while the port itself put the placeholder there and nothing has
     * replaced it since (Linux: so a reservation is known without asking
     * the kernel; EriX leaves it unused). */
    uint64_t placed[PBX_PORT_PLACED_WORDS];
    /** moved has one bit per reservable slot, set while a receipt the port
     * itself moved or copied there holds it and nothing has replaced or
     * closed it since (Linux: so a restore knows the slot is not empty
     * without asking the kernel; EriX leaves it unused). */
    uint64_t moved[PBX_PORT_PLACED_WORDS];
} pbx_port_ctx;

/**
 * pbx_port_start is what the port's entry point hands to the executable:
 * the arguments the creator supplied, as NUL-terminated strings that live
 * for the whole program. argv has argc entries.
 */
typedef struct pbx_port_start {
    /** argc is the number of entries in argv. */
    uint32_t argc;
    /** pad keeps the layout explicit. */
    uint32_t pad;
    /** argv points at the argument strings; never written. */
    const char *const *argv;
} pbx_port_start;

/**
 * pbx_port_main is supplied by the executable, not the port. The port's
 * entry point calls it once and exits with the status it returns, which is
 * the process exit status (0 success; nonzero a service-local status).
 */
uint8_t pbx_port_main(const pbx_port_start *start);

/**
 * pbx_port_init prepares ctx (old contents ignored): it creates the event
 * multiplexer and the placeholder source. Reservations may use only slots in
 * [slot_min, slot_max]; slot_min must leave room between the startup slots
 * and the range for the port's own objects (PBX_PORT_STARTUP_SLOTS +
 * PBX_PORT_CLIENTS_MAX + 8 at least). A port whose kernel limits the
 * descriptor count (Linux: RLIMIT_NOFILE) raises the soft limit to reach
 * slot_max, and answers PBX_E_PORT_NOFILE when the hard limit is below
 * it. Returns PBX_OK or an error; on error nothing is held.
 */
pbx_err pbx_port_init(pbx_port_ctx *ctx, int32_t slot_min, int32_t slot_max);

/**
 * pbx_port_public_open creates the process-owned public endpoint named by
 * name (name_len bytes, no NUL; on Linux a leading '@' selects the abstract
 * namespace, otherwise it is a filesystem path) and starts listening. slot
 * is the exact empty slot it must occupy (below PBX_PORT_STARTUP_SLOTS, as
 * the capability layout places it), or PBX_PORT_SLOT_NONE to let the port
 * place it among its private slots.
 */
pbx_err pbx_port_public_open(pbx_port_ctx *ctx, int32_t slot,
                             const uint8_t *name, uint32_t name_len);

/**
 * pbx_port_clients_idle closes every public connection that has been
 * silent (no message since it was accepted or since its last one) for at
 * least idle_ms at time now_ms (the port's clock, pbx_port_now_ms), so
 * that idle callers cannot hold every connection. It stores how many it
 * closed in *closed and, in *next_ms, the time the next open connection
 * becomes idle (UINT64_MAX when none is open). The broker endpoint is
 * never closed. On a port without connections (EriX: a caller's reply
 * capability lives for one call) it closes nothing. Bounded by
 * PBX_PORT_CLIENTS_MAX; returns the first close error.
 */
pbx_err pbx_port_clients_idle(pbx_port_ctx *ctx, uint64_t now_ms,
                              uint64_t idle_ms, uint64_t *next_ms,
                              uint32_t *closed);

/**
 * pbx_port_broker_open starts receiving on the endpoint in startup slot
 * (below PBX_PORT_STARTUP_SLOTS), which the creator transferred in already
 * connected to one known sender (launchd's broker). Its messages are
 * reported by pbx_port_wait as PBX_PORT_EV_PUBLIC_READABLE with that slot,
 * received with pbx_port_public_recv and answered with pbx_port_send to
 * the message's from_slot, exactly like a public caller's; the runtime
 * tells them apart by the slot alone. The port never closes it: when the
 * sender hangs up (a receive answers PBX_E_PORT_PEER_CLOSED, or a wait
 * sees the hang-up) the port stops watching it, reports
 * PBX_PORT_EV_BROKER_CLOSED once, and the slot keeps holding it.
 */
pbx_err pbx_port_broker_open(pbx_port_ctx *ctx, int32_t slot);

/**
 * pbx_port_supervisor_open starts watching the startup slot (below
 * PBX_PORT_STARTUP_SLOTS) that holds the connection to powerboxd's
 * creator, which stays open after readiness: pbx_port_wait reports
 * PBX_PORT_EV_SUPERVISOR_READABLE when a message waits on it, whatever
 * public hold is in force, and PBX_PORT_EV_SUPERVISOR_CLOSED once when it
 * hangs up or fails (then it is no longer watched; the slot keeps it).
 * Linux: a connected SOCK_DGRAM pair. EriX: the endpoint the creator
 * invokes with ROUTE_ATTACH, bound to the wait set.
 */
pbx_err pbx_port_supervisor_open(pbx_port_ctx *ctx, int32_t slot);

/**
 * pbx_port_supervisor_recv receives one message waiting on the supervisor
 * connection into buf (cap_bytes long) without blocking, staging its
 * receipts exactly as pbx_port_public_recv does (every one must be moved
 * or deleted before the next receive). PBX_E_PORT_AGAIN: nothing is
 * waiting; PBX_E_PORT_PEER_CLOSED: the creator is gone (on Linux an
 * empty datagram counts as that too), and the port stops watching it;
 * PBX_E_PORT_STATE: no supervisor connection is open. Truncated data or
 * receipts fail the receive with every receipt deleted.
 */
pbx_err pbx_port_supervisor_recv(pbx_port_ctx *ctx, uint8_t *buf,
                                 uint32_t cap_bytes, pbx_port_msg *msg);

/**
 * pbx_port_receipt_query describes staged receipt index exactly as
 * pbx_port_slot_query describes a slot (kind, flags, the peer's
 * credentials on Linux, the kernel's rights on EriX), without moving it.
 * PBX_E_PORT_RECEIPT_INDEX: no receipt is staged at index.
 */
pbx_err pbx_port_receipt_query(pbx_port_ctx *ctx, uint32_t index,
                               pbx_port_slot_info *info);

/**
 * pbx_port_route_replace moves staged receipt index into startup slot
 * (below PBX_PORT_STARTUP_SLOTS, not the public endpoint's, not one of
 * the port's own), replacing whatever the slot held in one step: the old
 * capability is deleted, the staging slot deleted with proof. The slot is
 * no longer watched afterwards (the caller watches it again with
 * pbx_port_watch), except the broker endpoint's slot
 * (pbx_port_broker_open): that one is watched again at once as a fresh
 * broker endpoint, under the public hold if one is in force.
 */
pbx_err pbx_port_route_replace(pbx_port_ctx *ctx, uint32_t index, int32_t slot);

/**
 * pbx_port_self_uid stores the user powerboxd runs as in *uid (Linux: the
 * real user id), which an attached route's peer must share. EriX has no
 * users: it answers PBX_E_PORT_STATE and the caller refuses every route
 * judged by credentials (EriX judges the expected peer by
 * SLOT_IDENTIFY instead, see docs/PORTS.md).
 */
pbx_err pbx_port_self_uid(pbx_port_ctx *ctx, uint32_t *uid);

/**
 * pbx_port_watch sets which readiness of the peer route slot pbx_port_wait
 * reports: a set of PBX_PORT_WANT_* bits, or 0 to stop watching it. The
 * slot stays owned by the caller.
 */
pbx_err pbx_port_watch(pbx_port_ctx *ctx, int32_t slot, uint32_t want);

/**
 * pbx_port_public_hold stops (hold nonzero) or resumes (hold 0) public
 * intake: while held, pbx_port_wait reports nothing from public
 * connections, the public endpoint or the broker (no accept, no message,
 * no hang-up), and their messages stay queued in the kernel, so nothing is
 * received and nothing is dropped. Route events and timeouts are reported
 * as before. Idempotent. Returns PBX_OK or the first failing syscall.
 */
pbx_err pbx_port_public_hold(pbx_port_ctx *ctx, uint32_t hold);

/**
 * pbx_port_wait blocks until one event is available and stores it in *ev.
 * New public connections are accepted here. PBX_E_PORT_AGAIN means the wait
 * was interrupted without an event; the caller simply waits again.
 * PBX_E_PORT_PUBLIC_DOWN means the public endpoint itself failed (Linux:
 * its receive side was shut down): it takes no more callers, for good.
 */
pbx_err pbx_port_wait(pbx_port_ctx *ctx, pbx_port_event *ev);

/**
 * pbx_port_wait_for is pbx_port_wait bounded by timeout_ms (1 or more):
 * when nothing happens in that time it returns PBX_OK with an event of
 * kind PBX_PORT_EV_TIMEOUT. The runtime uses it to wait no longer than
 * the nearest call deadline or deferred-work tick.
 */
pbx_err pbx_port_wait_for(pbx_port_ctx *ctx, pbx_port_event *ev,
                          uint32_t timeout_ms);

/**
 * pbx_port_poll is pbx_port_wait without blocking: PBX_E_PORT_AGAIN means
 * no event is ready now. The runtime uses it while retained work is ready,
 * so that intake and retained progression take turns.
 */
pbx_err pbx_port_poll(pbx_port_ctx *ctx, pbx_port_event *ev);

/**
 * pbx_port_public_recv receives one message from public connection slot
 * into buf (cap_bytes long) without blocking, staging its receipts. On any
 * error every receipt that arrived has already been deleted. Fails with
 * PBX_E_PORT_RECEIPTS_PENDING while earlier receipts are still staged.
 */
pbx_err pbx_port_public_recv(pbx_port_ctx *ctx, int32_t slot, uint8_t *buf,
                             uint32_t cap_bytes, pbx_port_msg *msg);

/**
 * pbx_port_client_close closes public connection slot (with proof that the
 * slot is empty afterwards) and forgets it.
 */
pbx_err pbx_port_client_close(pbx_port_ctx *ctx, int32_t slot);

/**
 * pbx_port_receipt_move moves staged receipt index into dest_slot, which
 * must currently hold a reservation placeholder. The placeholder is replaced
 * atomically; the staging slot is deleted with proof.
 */
pbx_err pbx_port_receipt_move(pbx_port_ctx *ctx, uint32_t index,
                              int32_t dest_slot);

/**
 * pbx_port_receipts_delete deletes, with proof, every staged receipt not
 * moved yet and stores how many it deleted in *deleted (may be NULL). The
 * staging area is empty afterwards even when a proof fails, except after
 * PBX_E_PORT_DELETE_AGAIN: then the receipts whose deletion was
 * interrupted stay staged (still held), the rest are gone, and the caller
 * calls it again later (receives answer PBX_E_PORT_RECEIPTS_PENDING
 * meanwhile).
 */
pbx_err pbx_port_receipts_delete(pbx_port_ctx *ctx, uint32_t *deleted);

/**
 * pbx_port_send sends len_bytes of msg on slot (a public connection for a
 * reply, or a route) without blocking, optionally transferring a copy of
 * the capability in cap_slot (PBX_PORT_SLOT_NONE for none). The caller still
 * holds cap_slot afterwards. PBX_E_PORT_BACKPRESSURE means retry when the
 * slot is writable.
 */
pbx_err pbx_port_send(pbx_port_ctx *ctx, int32_t slot, const uint8_t *msg,
                      uint32_t len_bytes, int32_t cap_slot);

/**
 * pbx_port_call is a synchronous peer call on route, used only by the
 * port smoke driver (powerboxd/portcheck), never by powerboxd's runtime,
 * whose calls are split-phase (pbx_port_send, then pbx_port_route_recv
 * when the route is readable). It sends req (and a
 * copy of cap_slot unless PBX_PORT_SLOT_NONE), then waits at most
 * timeout_ms (1 or more; 0 counts as 1) for the reply, which is stored in
 * resp (cap_bytes long) with its receipts staged exactly as
 * pbx_port_public_recv does. When no reply arrives in time it returns
 * PBX_E_PORT_TIMEOUT with nothing staged: the request may still be
 * answered later, so the caller must not use route for another call
 * unless it can tell a late reply from the next one (the portcheck driver
 * makes one call per route and process).
 */
pbx_err pbx_port_call(pbx_port_ctx *ctx, int32_t route, const uint8_t *req,
                      uint32_t req_bytes, int32_t cap_slot, uint8_t *resp,
                      uint32_t cap_bytes, pbx_port_msg *msg,
                      uint32_t timeout_ms);

/**
 * pbx_port_call_send sends the request half of a split-phase call on slot
 * (a startup peer route or a held scope) without blocking, optionally
 * transferring a copy of cap_slot, exactly as pbx_port_send does, and
 * arranges for the reply to come back as a message pbx_port_route_recv
 * takes from slot (Linux: the same connection; EriX: a one-shot reply
 * capability to slot's endpoint minted by the kernel, ERIX_IPC_REPLY_TO).
 * PBX_E_PORT_BACKPRESSURE: retry when slot is writable.
 */
pbx_err pbx_port_call_send(pbx_port_ctx *ctx, int32_t slot, const uint8_t *msg,
                           uint32_t len_bytes, int32_t cap_slot);

/**
 * pbx_port_route_recv receives one reply waiting on slot (a startup peer
 * route, or a scope the runtime sent a call through) without blocking,
 * into buf (cap_bytes long), staging its receipts exactly as
 * pbx_port_public_recv does. PBX_E_PORT_AGAIN: nothing is waiting;
 * PBX_E_PORT_PEER_CLOSED: the peer hung up. This is the receive half of a
 * split-phase call: the runtime calls it when pbx_port_wait reported the
 * slot readable, never to wait for a reply.
 */
pbx_err pbx_port_route_recv(pbx_port_ctx *ctx, int32_t slot, uint8_t *buf,
                            uint32_t cap_bytes, pbx_port_msg *msg);

/**
 * pbx_port_now_ms stores the port's monotonic clock in milliseconds in
 * *now_ms (a value that never goes back). The runtime turns it into the
 * core's time events; the core reads no clock. Returns PBX_OK or
 * PBX_E_PORT_SYSCALL.
 */
pbx_err pbx_port_now_ms(pbx_port_ctx *ctx, uint64_t *now_ms);

/**
 * pbx_port_notify sends an authority-free wake of len_bytes on datagram
 * route slot without blocking. PBX_E_PORT_BACKPRESSURE means the route is
 * full: keep the wake and retry when pbx_port_wait reports it writable.
 */
pbx_err pbx_port_notify(pbx_port_ctx *ctx, int32_t slot, const uint8_t *msg,
                        uint32_t len_bytes);

/**
 * pbx_port_slot_query describes what slot holds in *info without changing
 * it. An empty slot is a successful query with kind PBX_PORT_KIND_EMPTY.
 */
pbx_err pbx_port_slot_query(pbx_port_ctx *ctx, int32_t slot,
                            pbx_port_slot_info *info);

/**
 * pbx_port_slot_identity stores in *identity the identity the kernel
 * vouches for the object behind the capability in slot, without changing
 * the slot: the same value through every copy of that capability (a copy
 * passed by SCM_RIGHTS on Linux, a derived child on EriX), a different
 * one for any other live object, never zero. Linux: the inode number of a
 * socket (fstat st_ino; every socket lives on the one sockfs, so st_dev
 * adds nothing). EriX: ERIX_SYS_SLOT_IDENTIFY. *identity is 0 on error:
 * PBX_E_PORT_SLOT_RANGE, PBX_E_PORT_NO_IDENTITY (empty, a placeholder,
 * not a socket, or no identity from the kernel) or PBX_E_PORT_SYSCALL.
 */
pbx_err pbx_port_slot_identity(pbx_port_ctx *ctx, int32_t slot,
                               uint64_t *identity);

/**
 * Deletion results. Every deletion below (and pbx_port_receipts_delete)
 * answers PBX_OK with proof, PBX_E_PORT_DELETE_AGAIN when the kernel was
 * interrupted or asked for a retry and the port proved that the slot
 * still holds what it held (the capability, or the reservation, is still
 * there: the caller keeps it counted and calls again later), or another
 * error, which is a permanent rejection (PBX_E_PORT_DELETE_UNPROVEN: the
 * slot could not be proven empty; PBX_E_PORT_NOT_RESERVED and the like:
 * the slot does not hold what the caller believes). Only a permanent
 * rejection may end the service (exit 65, docs/PORTS.md).
 *
 * pbx_port_slot_delete deletes the capability in slot and proves that the
 * slot is empty afterwards (PBX_E_PORT_DELETE_UNPROVEN otherwise).
 */
pbx_err pbx_port_slot_delete(pbx_port_ctx *ctx, int32_t slot);

/**
 * pbx_port_slot_restore deletes the capability in reserved slot by putting
 * the placeholder back over it atomically, and proves the slot holds the
 * placeholder again. The reservation itself stays. PBX_E_PORT_DELETE_AGAIN:
 * the capability is still in slot; call again later.
 */
pbx_err pbx_port_slot_restore(pbx_port_ctx *ctx, int32_t slot);

/**
 * pbx_port_slot_copy derives a second capability to the object held in
 * from_slot into dest_slot, which must hold a reservation placeholder (it
 * is replaced atomically). On Linux the copy shares the open connection,
 * so the provider's revocation of that connection ends both; on EriX it is
 * a kernel-derived child capability.
 */
pbx_err pbx_port_slot_copy(pbx_port_ctx *ctx, int32_t from_slot,
                           int32_t dest_slot);

/**
 * pbx_port_reserve places a placeholder at the exact empty slot (inside the
 * reservable range) so that it is held for a later receipt. A slot that
 * holds anything is refused with PBX_E_PORT_SLOT_OCCUPIED and left as it
 * was.
 */
pbx_err pbx_port_reserve(pbx_port_ctx *ctx, int32_t slot);

/**
 * pbx_port_unreserve releases a reservation: slot must hold the placeholder
 * (never a receipt); it is deleted and proven empty. PBX_E_PORT_DELETE_AGAIN:
 * the reservation is still held; call again later.
 */
pbx_err pbx_port_unreserve(pbx_port_ctx *ctx, int32_t slot);

/**
 * pbx_port_pbx1_read copies the whole PBX1 object held in slot into buf
 * (cap_bytes long) and stores its length in *len_bytes, after verifying it
 * is a memory object sealed against writing, growing, shrinking and further
 * sealing. The bytes are untrusted until the bootstrap layer authenticates
 * them.
 */
pbx_err pbx_port_pbx1_read(pbx_port_ctx *ctx, int32_t slot, uint8_t *buf,
                           uint32_t cap_bytes, uint32_t *len_bytes);

/**
 * pbx_port_arena_map maps the one zero-filled, read-write arena of exactly
 * bytes (rounded up to whole pages) and stores its address in *base. It
 * succeeds at most once per context; the arena lives until exit.
 */
pbx_err pbx_port_arena_map(pbx_port_ctx *ctx, uint64_t bytes, void **base);

/**
 * pbx_port_log writes one diagnostic line of len_bytes (no NUL needed,
 * at most 4096 so that a pipe takes it whole) to the process's
 * diagnostic output, never blocking: Linux writes it to slot 2 only when
 * slot 2 can take it whole at once (one pwritev2 with RWF_NOWAIT; where
 * the kernel refuses that flag, a regular file is written plainly and
 * anything else after a poll with no wait), and drops it otherwise, also
 * when the reader is gone (SIGPIPE is ignored from the first line on; a
 * pipe's file status flags are never changed, as the starter shares
 * them). The EriX ABI has no console yet, so there it
 * drops every line. Returns whether the whole line was written; it
 * carries no authority and never fails the caller.
 */
bool pbx_port_log(const uint8_t *msg, uint32_t len_bytes);

/**
 * pbx_port_print writes len_bytes to the process's standard output
 * (Linux: slot 1), blocking as an ordinary write does: only for
 * `powerboxd -h`, before any startup check. Returns whether every byte
 * was written; EriX has no console and returns false.
 */
bool pbx_port_print(const uint8_t *msg, uint32_t len_bytes);

/** pbx_port_exit ends the process with status; it never returns. */
_Noreturn void pbx_port_exit(uint8_t status);

#endif /* PBX_PORT_H */
