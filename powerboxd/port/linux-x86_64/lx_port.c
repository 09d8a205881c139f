/*
 * lx_port.c: context setup, the public endpoint, event waiting, PBX1 and
 * the arena for the linux-x86_64 port.
 */
#include "powerboxd/port/linux-x86_64/lx_int.h"

/** LX_LISTEN_BACKLOG bounds connections queued before accept. */
#define LX_LISTEN_BACKLOG 16

/** LX_ARENA_BYTES_MAX bounds the arena request (1 TiB) before rounding. */
#define LX_ARENA_BYTES_MAX (1ULL << 40)

/** LX_PBX1_SEALS is the seal set a PBX1 memfd must carry, all of it. */
#define LX_PBX1_SEALS                                                          \
    (LX_F_SEAL_SEAL | LX_F_SEAL_SHRINK | LX_F_SEAL_GROW | LX_F_SEAL_WRITE)

pbx_err lx_epoll_set(const pbx_port_ctx *ctx, int32_t op, int32_t slot,
                     uint32_t tag, uint32_t events)
{
    struct lx_epoll_event ev;
    ev.events = events;
    ev.data = ((uint64_t)tag << 32) | (uint32_t)slot;
    if (lx_sys6(LX_SYS_EPOLL_CTL, ctx->wait_slot, op, slot, lx_ptr(&ev), 0,
                0) != 0) {
        return PBX_E_PORT_SYSCALL;
    }
    return PBX_OK;
}

int32_t lx_to_private(const pbx_port_ctx *ctx, int64_t fd)
{
    int64_t moved;
    if (fd < 0 || fd > LX_SLOT_LIMIT) {
        return -1;
    }
    if (fd >= PBX_PORT_STARTUP_SLOTS) {
        moved = fd;
    } else {
        moved = lx_sys3(LX_SYS_FCNTL, fd, LX_F_DUPFD_CLOEXEC,
                        PBX_PORT_STARTUP_SLOTS);
        (void)lx_close_proven((int32_t)fd);
    }
    if (moved < 0) {
        return -1;
    }
    if (moved >= ctx->slot_min) {
        (void)lx_close_proven((int32_t)moved);
        return -1;
    }
    return (int32_t)moved;
}

/* Creates the sealed, empty memfd that every placeholder duplicates and
 * records its identity, so a placeholder can never be mistaken for a
 * receipt. */
static pbx_err lx_placeholder_create(pbx_port_ctx *ctx)
{
    static const char name[] = "pbx-placeholder";
    uint32_t mode = 0;
    int32_t fd =
        lx_to_private(ctx, lx_sys3(LX_SYS_MEMFD_CREATE, lx_ptr(name),
                                   LX_MFD_CLOEXEC | LX_MFD_ALLOW_SEALING, 0));
    if (fd < 0) {
        return PBX_E_PORT_SYSCALL;
    }
    ctx->placeholder_slot = fd;
    if (lx_sys3(LX_SYS_FCNTL, fd, LX_F_ADD_SEALS,
                LX_F_SEAL_SEAL | LX_F_SEAL_SHRINK | LX_F_SEAL_GROW |
                    LX_F_SEAL_WRITE) != 0) {
        return PBX_E_PORT_SYSCALL;
    }
    return lx_identity(ctx->placeholder_slot, &ctx->placeholder_space,
                       &ctx->placeholder_id, &mode);
}

/* Releases what a failed init created, so a failure holds nothing. */
static pbx_err lx_init_undo(pbx_port_ctx *ctx, pbx_err err)
{
    if (ctx->placeholder_slot >= 0) {
        (void)lx_close_proven(ctx->placeholder_slot);
        ctx->placeholder_slot = PBX_PORT_SLOT_NONE;
    }
    if (ctx->wait_slot >= 0) {
        (void)lx_close_proven(ctx->wait_slot);
        ctx->wait_slot = PBX_PORT_SLOT_NONE;
    }
    return err;
}

pbx_err pbx_port_init(pbx_port_ctx *ctx, int32_t slot_min, int32_t slot_max)
{
    int32_t ep;
    pbx_err err;
    pbx_mem_set(ctx, 0, sizeof(*ctx));
    ctx->public_slot = PBX_PORT_SLOT_NONE;
    ctx->broker_slot = PBX_PORT_SLOT_NONE;
    ctx->supervisor_slot = PBX_PORT_SLOT_NONE;
    ctx->wait_slot = PBX_PORT_SLOT_NONE;
    ctx->placeholder_slot = PBX_PORT_SLOT_NONE;
    for (uint32_t i = 0; i < PBX_PORT_RECEIPTS_MAX; i++) {
        ctx->staged[i] = PBX_PORT_SLOT_NONE;
    }
    if (slot_min < PBX_PORT_STARTUP_SLOTS + LX_PRIVATE_SLOTS ||
        slot_max < slot_min || slot_max > LX_SLOT_LIMIT) {
        return PBX_E_PORT_SLOT_RANGE;
    }
    ctx->slot_min = slot_min;
    ctx->slot_max = slot_max;
    ep = lx_to_private(ctx, lx_sys1(LX_SYS_EPOLL_CREATE1, LX_EPOLL_CLOEXEC));
    if (ep < 0) {
        return PBX_E_PORT_SYSCALL;
    }
    ctx->wait_slot = ep;
    err = lx_placeholder_create(ctx);
    if (err != PBX_OK) {
        return lx_init_undo(ctx, err);
    }
    /* Before any slot of the range is used: the descriptor limit must
     * reach its last slot (lx_nofile.c). */
    err = lx_nofile_fit(slot_max);
    if (err != PBX_OK) {
        return lx_init_undo(ctx, err);
    }
    ctx->flags = LX_FLAG_INIT;
    return PBX_OK;
}

/* Fills addr from name; returns the address length, or 0 if name does not
 * fit. A leading '@' selects the abstract namespace (no filesystem entry). */
static uint32_t lx_addr_fill(struct lx_sockaddr_un *addr, const uint8_t *name,
                             uint32_t name_len)
{
    pbx_mem_set(addr, 0, sizeof(*addr));
    addr->family = LX_AF_UNIX;
    if (name_len == 0U || name_len >= sizeof(addr->path)) {
        return 0;
    }
    pbx_mem_copy(addr->path, name, name_len);
    if (name[0] == (uint8_t)'@') {
        addr->path[0] = '\0';
        return (uint32_t)sizeof(addr->family) + name_len;
    }
    return (uint32_t)sizeof(addr->family) + name_len + 1U;
}

/* Moves the freshly created endpoint fd to the exact requested slot, which
 * must be empty and outside the port's own and the reservable ranges.
 * Returns the slot now holding it, or -1 with everything closed. */
static int32_t lx_public_place(const pbx_port_ctx *ctx, int32_t fd,
                               int32_t slot)
{
    if (slot == PBX_PORT_SLOT_NONE) {
        return fd;
    }
    if (slot < 0 || slot >= PBX_PORT_STARTUP_SLOTS || lx_slot_open(slot) ||
        lx_sys3(LX_SYS_DUP3, fd, slot, LX_O_CLOEXEC) != slot) {
        (void)lx_close_proven(fd);
        return -1;
    }
    (void)ctx;
    if (lx_close_proven(fd) != PBX_OK) {
        (void)lx_close_proven(slot);
        return -1;
    }
    return slot;
}

pbx_err pbx_port_public_open(pbx_port_ctx *ctx, int32_t slot,
                             const uint8_t *name, uint32_t name_len)
{
    struct lx_sockaddr_un addr;
    uint32_t addr_len = lx_addr_fill(&addr, name, name_len);
    int32_t fd;
    if ((ctx->flags & LX_FLAG_INIT) == 0U || ctx->public_slot >= 0) {
        return PBX_E_PORT_STATE;
    }
    if (addr_len == 0U) {
        return PBX_E_PORT_NAME;
    }
    if (slot != PBX_PORT_SLOT_NONE &&
        (slot < 0 || slot >= PBX_PORT_STARTUP_SLOTS)) {
        return PBX_E_PORT_SLOT_RANGE;
    }
    if (slot != PBX_PORT_SLOT_NONE && lx_slot_open(slot)) {
        return PBX_E_PORT_SLOT_OCCUPIED;
    }
    fd = lx_to_private(
        ctx,
        lx_sys3(LX_SYS_SOCKET, LX_AF_UNIX,
                LX_SOCK_SEQPACKET | LX_SOCK_NONBLOCK | LX_SOCK_CLOEXEC, 0));
    if (fd < 0) {
        return PBX_E_PORT_SYSCALL;
    }
    if (lx_sys3(LX_SYS_BIND, fd, lx_ptr(&addr), addr_len) != 0 ||
        lx_sys3(LX_SYS_LISTEN, fd, LX_LISTEN_BACKLOG, 0) != 0) {
        (void)lx_close_proven(fd);
        return PBX_E_PORT_SYSCALL;
    }
    fd = lx_public_place(ctx, fd, slot);
    if (fd < 0) {
        return PBX_E_PORT_SYSCALL;
    }
    if (lx_epoll_set(ctx, LX_EPOLL_CTL_ADD, fd, LX_TAG_LISTEN,
                     LX_LISTEN_EVENTS) != PBX_OK) {
        (void)lx_close_proven(fd);
        return PBX_E_PORT_SYSCALL;
    }
    ctx->public_slot = fd;
    ctx->flags |= LX_FLAG_LISTEN_ARMED;
    return PBX_OK;
}

pbx_err pbx_port_broker_open(pbx_port_ctx *ctx, int32_t slot)
{
    if ((ctx->flags & LX_FLAG_INIT) == 0U || ctx->broker_slot >= 0 ||
        slot == ctx->public_slot) {
        return PBX_E_PORT_STATE;
    }
    if (slot < 0 || slot >= PBX_PORT_STARTUP_SLOTS) {
        return PBX_E_PORT_SLOT_RANGE;
    }
    if (!lx_slot_open(slot) ||
        lx_epoll_set(ctx, LX_EPOLL_CTL_ADD, slot, LX_TAG_BROKER, LX_EPOLLIN) !=
            PBX_OK) {
        return PBX_E_PORT_SYSCALL;
    }
    ctx->broker_slot = slot;
    ctx->flags |= LX_FLAG_BROKER_ARMED;
    return PBX_OK;
}

void lx_broker_unwatch(pbx_port_ctx *ctx)
{
    if ((ctx->flags & LX_FLAG_BROKER_ARMED) == 0U || ctx->broker_slot < 0) {
        return;
    }
    (void)lx_epoll_set(ctx, LX_EPOLL_CTL_DEL, ctx->broker_slot, LX_TAG_BROKER,
                       0);
    ctx->flags &= ~LX_FLAG_BROKER_ARMED;
}

/* Reports whether slot is one of the open public connections, and where. */
static int lx_client_find(const pbx_port_ctx *ctx, int32_t slot, uint32_t *at)
{
    for (uint32_t i = 0; i < ctx->client_count && i < PBX_PORT_CLIENTS_MAX;
         i++) {
        if (ctx->clients[i] == slot) {
            *at = i;
            return 1;
        }
    }
    return 0;
}

pbx_err pbx_port_watch(pbx_port_ctx *ctx, int32_t slot, uint32_t want)
{
    uint32_t at = 0;
    uint32_t events = 0;
    if (!lx_slot_valid(slot) || slot == ctx->public_slot ||
        slot == ctx->wait_slot || slot == ctx->broker_slot ||
        slot == ctx->supervisor_slot || lx_client_find(ctx, slot, &at) ||
        (want & ~(PBX_PORT_WANT_READ | PBX_PORT_WANT_WRITE)) != 0U) {
        return PBX_E_PORT_STATE;
    }
    if (want == 0U) {
        struct lx_epoll_event ev = {0, 0};
        int64_t r = lx_sys6(LX_SYS_EPOLL_CTL, ctx->wait_slot, LX_EPOLL_CTL_DEL,
                            slot, lx_ptr(&ev), 0, 0);
        return (r == 0 || r == -2 /* ENOENT: not watched */)
                   ? PBX_OK
                   : PBX_E_PORT_SYSCALL;
    }
    events |= (want & PBX_PORT_WANT_READ) != 0U ? LX_EPOLLIN : 0U;
    events |= (want & PBX_PORT_WANT_WRITE) != 0U ? LX_EPOLLOUT : 0U;
    if (lx_epoll_set(ctx, LX_EPOLL_CTL_MOD, slot, LX_TAG_ROUTE, events) ==
        PBX_OK) {
        return PBX_OK;
    }
    return lx_epoll_set(ctx, LX_EPOLL_CTL_ADD, slot, LX_TAG_ROUTE, events);
}

/* The peer pid of the just-accepted socket fd (SO_PEERCRED), or 0 when the
 * kernel does not say; 0 is never counted against the per-process bound. */
static uint32_t lx_peer_pid(int64_t fd)
{
    struct lx_ucred cred = {0, 0, 0};
    uint32_t len = (uint32_t)sizeof(cred);
    if (lx_sys6(LX_SYS_GETSOCKOPT, fd, LX_SOL_SOCKET, LX_SO_PEERCRED,
                lx_ptr(&cred), lx_ptr(&len), 0) != 0 ||
        len != (uint32_t)sizeof(cred) || cred.pid <= 0) {
        return 0U;
    }
    return (uint32_t)cred.pid;
}

/* Whether process pid already holds PBX_PORT_CLIENTS_PER_PID public
 * connections; an unknown pid (0) is never at the bound. */
static bool lx_pid_full(const pbx_port_ctx *ctx, uint32_t pid)
{
    uint32_t held = 0;
    if (pid == 0U) {
        return false;
    }
    for (uint32_t i = 0; i < ctx->client_count && i < PBX_PORT_CLIENTS_MAX;
         i++) {
        held += ctx->client_pids[i] == pid ? 1U : 0U;
    }
    return held >= PBX_PORT_CLIENTS_PER_PID;
}

/* Records accepted connection fd of process pid in the client table. */
static void lx_client_add(pbx_port_ctx *ctx, int32_t fd, uint32_t pid)
{
    ctx->clients[ctx->client_count] = fd;
    /* A fresh badge per accepted connection, never reused before the
     * counter wraps, so a recycled fd number inherits nothing. */
    ctx->next_badge = ctx->next_badge >= LX_BADGE_LAST || ctx->next_badge == 0U
                          ? 1U
                          : ctx->next_badge + 1U;
    ctx->client_badges[ctx->client_count] = ctx->next_badge;
    ctx->client_seen_ms[ctx->client_count] = lx_now_ms();
    ctx->client_pids[ctx->client_count] = pid;
    ctx->client_count++;
}

/* Accepts one pending public connection and starts watching it. When the
 * table is full, or the connecting process already holds
 * PBX_PORT_CLIENTS_PER_PID, the connection is accepted and closed at once,
 * and the refusal reported (PBX_PORT_EV_PUBLIC_REFUSED or
 * PBX_PORT_EV_PUBLIC_REFUSED_PID): a caller is never left waiting in the
 * backlog behind connections that may stay idle until
 * pbx_port_clients_idle closes them. */
static pbx_err lx_accept(pbx_port_ctx *ctx, pbx_port_event *ev)
{
    int64_t got;
    int32_t fd;
    uint32_t pid;
    got = lx_sys6(LX_SYS_ACCEPT4, ctx->public_slot, 0, 0,
                  LX_SOCK_NONBLOCK | LX_SOCK_CLOEXEC, 0, 0);
    if (got == -LX_EAGAIN || got == -LX_EINTR) {
        return PBX_E_PORT_AGAIN;
    }
    pid = got >= 0 ? lx_peer_pid(got) : 0U;
    if (got >= 0 &&
        (ctx->client_count >= PBX_PORT_CLIENTS_MAX || lx_pid_full(ctx, pid))) {
        ev->kind = ctx->client_count >= PBX_PORT_CLIENTS_MAX
                       ? PBX_PORT_EV_PUBLIC_REFUSED
                       : PBX_PORT_EV_PUBLIC_REFUSED_PID;
        /* Nothing was received on it: closing it deletes no authority. */
        (void)lx_sys1(LX_SYS_CLOSE, got);
        ev->slot = PBX_PORT_SLOT_NONE;
        ev->pid = pid;
        return PBX_OK;
    }
    fd = lx_to_private(ctx, got);
    if (fd < 0) {
        return PBX_E_PORT_SYSCALL;
    }
    if (lx_epoll_set(ctx, LX_EPOLL_CTL_ADD, fd, LX_TAG_CLIENT, LX_EPOLLIN) !=
        PBX_OK) {
        (void)lx_close_proven(fd);
        return PBX_E_PORT_SYSCALL;
    }
    lx_client_add(ctx, fd, pid);
    ev->kind = PBX_PORT_EV_PUBLIC_CONNECT;
    ev->slot = fd;
    return PBX_OK;
}

pbx_err pbx_port_client_close(pbx_port_ctx *ctx, int32_t slot)
{
    uint32_t at = 0;
    pbx_err err;
    if (!lx_client_find(ctx, slot, &at)) {
        return PBX_E_PORT_NOT_CLIENT;
    }
    (void)lx_epoll_set(ctx, LX_EPOLL_CTL_DEL, slot, LX_TAG_CLIENT, 0);
    err = lx_close_proven(slot);
    ctx->client_count--;
    ctx->clients[at] = ctx->clients[ctx->client_count];
    ctx->client_badges[at] = ctx->client_badges[ctx->client_count];
    ctx->client_seen_ms[at] = ctx->client_seen_ms[ctx->client_count];
    ctx->client_pids[at] = ctx->client_pids[ctx->client_count];
    ctx->clients[ctx->client_count] = PBX_PORT_SLOT_NONE;
    ctx->client_badges[ctx->client_count] = 0U;
    ctx->client_seen_ms[ctx->client_count] = 0U;
    ctx->client_pids[ctx->client_count] = 0U;
    if ((ctx->flags & (LX_FLAG_LISTEN_ARMED | LX_FLAG_HELD)) == 0U &&
        ctx->public_slot >= 0 &&
        lx_epoll_set(ctx, LX_EPOLL_CTL_ADD, ctx->public_slot, LX_TAG_LISTEN,
                     LX_LISTEN_EVENTS) == PBX_OK) {
        ctx->flags |= LX_FLAG_LISTEN_ARMED;
    }
    return err;
}

/* Stops (op DEL) or resumes (op ADD) epoll reports for every public
 * connection, the listener and the broker; returns the first error. */
static pbx_err lx_public_watch(pbx_port_ctx *ctx, int32_t op)
{
    pbx_err first = PBX_OK;
    for (uint32_t i = 0; i < ctx->client_count && i < PBX_PORT_CLIENTS_MAX;
         i++) {
        pbx_err err =
            lx_epoll_set(ctx, op, ctx->clients[i], LX_TAG_CLIENT, LX_EPOLLIN);
        first = first == PBX_OK ? err : first;
    }
    bool add = op == LX_EPOLL_CTL_ADD;
    if (ctx->public_slot >= 0 &&
        (add ? (ctx->flags & LX_FLAG_LISTEN_ARMED) == 0U
             : (ctx->flags & LX_FLAG_LISTEN_ARMED) != 0U)) {
        pbx_err err = lx_epoll_set(ctx, op, ctx->public_slot, LX_TAG_LISTEN,
                                   LX_LISTEN_EVENTS);
        first = first == PBX_OK ? err : first;
        ctx->flags = add ? ctx->flags | LX_FLAG_LISTEN_ARMED
                         : ctx->flags & ~LX_FLAG_LISTEN_ARMED;
    }
    uint32_t had = add ? LX_FLAG_BROKER_HELD : LX_FLAG_BROKER_ARMED;
    if ((ctx->flags & had) != 0U && ctx->broker_slot >= 0) {
        pbx_err err =
            lx_epoll_set(ctx, op, ctx->broker_slot, LX_TAG_BROKER, LX_EPOLLIN);
        first = first == PBX_OK ? err : first;
        ctx->flags = (ctx->flags & ~had) |
                     (add ? LX_FLAG_BROKER_ARMED : LX_FLAG_BROKER_HELD);
    }
    return first;
}

pbx_err pbx_port_clients_idle(pbx_port_ctx *ctx, uint64_t now_ms,
                              uint64_t idle_ms, uint64_t *next_ms,
                              uint32_t *closed)
{
    pbx_err first = PBX_OK;
    uint32_t i = 0;
    *next_ms = UINT64_MAX;
    *closed = 0U;
    /* Closing swaps the last entry into i, so i advances only past a
     * connection that stays; each pass closes one or advances one. */
    for (uint32_t n = 0; n < PBX_PORT_CLIENTS_MAX && i < ctx->client_count;
         n++) {
        uint64_t due = ctx->client_seen_ms[i] + idle_ms;
        if (due > now_ms) {
            *next_ms = due < *next_ms ? due : *next_ms;
            i++;
            continue;
        }
        pbx_err err = pbx_port_client_close(ctx, ctx->clients[i]);
        first = first == PBX_OK ? err : first;
        (*closed)++;
    }
    return first;
}

pbx_err pbx_port_public_hold(pbx_port_ctx *ctx, uint32_t hold)
{
    bool held = (ctx->flags & LX_FLAG_HELD) != 0U;
    if ((ctx->flags & LX_FLAG_INIT) == 0U) {
        return PBX_E_PORT_STATE;
    }
    if (held == (hold != 0U)) {
        return PBX_OK;
    }
    ctx->flags =
        hold != 0U ? ctx->flags | LX_FLAG_HELD : ctx->flags & ~LX_FLAG_HELD;
    return lx_public_watch(ctx,
                           hold != 0U ? LX_EPOLL_CTL_DEL : LX_EPOLL_CTL_ADD);
}

/* Turns one epoll report on a route or scope into an event: readable,
 * else hang-up or error, else writable. */
static void lx_route_event(uint32_t bits, int32_t slot, pbx_port_event *ev)
{
    ev->slot = slot;
    /* A reply waiting is reported first: epoll is level-triggered, so a
     * writability or hang-up seen at the same time is reported by the
     * next wait, after the replies queued before it were taken. */
    if ((bits & LX_EPOLLIN) != 0U) {
        ev->kind = PBX_PORT_EV_ROUTE_READABLE;
    } else if ((bits & (LX_EPOLLERR | LX_EPOLLHUP)) != 0U) {
        ev->kind = PBX_PORT_EV_ROUTE_ERROR;
    } else {
        ev->kind = PBX_PORT_EV_ROUTE_WRITABLE;
    }
}

/* Takes one epoll report, waiting up to timeout_ms (-1: forever, 0: not
 * at all), and turns it into an event. */
static pbx_err lx_wait(pbx_port_ctx *ctx, pbx_port_event *ev,
                       int64_t timeout_ms)
{
    struct lx_epoll_event got;
    int64_t n;
    uint32_t tag;
    int32_t slot;
    ev->kind = 0;
    ev->slot = PBX_PORT_SLOT_NONE;
    if ((ctx->flags & LX_FLAG_INIT) == 0U) {
        return PBX_E_PORT_STATE;
    }
    got.events = 0;
    got.data = 0;
    n = lx_sys6(LX_SYS_EPOLL_WAIT, ctx->wait_slot, lx_ptr(&got), 1, timeout_ms,
                0, 0);
    if (n == 0 || n == -LX_EINTR) {
        return PBX_E_PORT_AGAIN;
    }
    if (n < 0) {
        return PBX_E_PORT_SYSCALL;
    }
    tag = (uint32_t)(got.data >> 32);
    slot = (int32_t)(uint32_t)(got.data & 0xFFFFFFFFU);
    if (tag == LX_TAG_LISTEN) {
        /* A listener whose receive side was shut down (through a copy of
         * it someone else holds) refuses every new caller and stays
         * readable while accept finds nothing: it is a failed public
         * endpoint, reported as such instead of being waited on for ever. */
        if ((got.events & (LX_EPOLLERR | LX_EPOLLHUP | LX_EPOLLRDHUP)) != 0U) {
            return PBX_E_PORT_PUBLIC_DOWN;
        }
        return lx_accept(ctx, ev);
    }
    if (tag == LX_TAG_ROUTE) {
        lx_route_event(got.events, slot, ev);
        return PBX_OK;
    }
    ev->slot = slot;
    if (tag == LX_TAG_SUPERVISOR) {
        /* A waiting message is taken first; a hang-up or error with
         * nothing left to read ends the watch, never the slot. */
        if ((got.events & LX_EPOLLIN) != 0U) {
            ev->kind = PBX_PORT_EV_SUPERVISOR_READABLE;
            return PBX_OK;
        }
        lx_supervisor_unwatch(ctx);
        ev->kind = PBX_PORT_EV_SUPERVISOR_CLOSED;
        return PBX_OK;
    }
    if (tag == LX_TAG_BROKER && (got.events & LX_EPOLLIN) == 0U) {
        /* Hung up with nothing left to read: unwatch, never close. */
        lx_broker_unwatch(ctx);
        ev->kind = PBX_PORT_EV_BROKER_CLOSED;
        return PBX_OK;
    }
    if ((got.events & LX_EPOLLIN) != 0U) {
        ev->kind = PBX_PORT_EV_PUBLIC_READABLE;
        return PBX_OK;
    }
    ev->kind = PBX_PORT_EV_PUBLIC_CLOSED;
    return pbx_port_client_close(ctx, slot);
}

pbx_err pbx_port_wait(pbx_port_ctx *ctx, pbx_port_event *ev)
{
    return lx_wait(ctx, ev, -1);
}

pbx_err pbx_port_poll(pbx_port_ctx *ctx, pbx_port_event *ev)
{
    return lx_wait(ctx, ev, 0);
}

pbx_err pbx_port_wait_for(pbx_port_ctx *ctx, pbx_port_event *ev,
                          uint32_t timeout_ms)
{
    pbx_err err = lx_wait(ctx, ev, timeout_ms == 0U ? 1 : (int64_t)timeout_ms);
    if (err == PBX_E_PORT_AGAIN) {
        /* Time ran out (or a signal ended the wait early): either way the
         * caller's bounded wait is over. */
        ev->kind = PBX_PORT_EV_TIMEOUT;
        ev->slot = PBX_PORT_SLOT_NONE;
        return PBX_OK;
    }
    return err;
}

pbx_err pbx_port_arena_map(pbx_port_ctx *ctx, uint64_t bytes, void **base)
{
    uint64_t len;
    int64_t addr;
    *base = NULL;
    if ((ctx->flags & LX_FLAG_ARENA) != 0U) {
        return PBX_E_PORT_ARENA_MAPPED;
    }
    if (bytes == 0U || bytes > LX_ARENA_BYTES_MAX) {
        return PBX_E_PORT_ARENA_SIZE;
    }
    len = (bytes + (LX_PAGE_BYTES - 1U)) & ~(uint64_t)(LX_PAGE_BYTES - 1U);
    addr = lx_sys6(LX_SYS_MMAP, 0, (int64_t)len, LX_PROT_RW,
                   LX_MAP_PRIVATE_ANON, -1, 0);
    if (addr < 0 && addr >= -4095) {
        return PBX_E_PORT_SYSCALL;
    }
    ctx->flags |= LX_FLAG_ARENA;
    ctx->arena_base = (uint64_t)addr;
    ctx->arena_bytes = len;
    /* The kernel returns the mapping as an integer; this is its address. */
    *base = (void *)(uintptr_t)addr; // NOLINT(performance-no-int-to-ptr)
    return PBX_OK;
}

/* Checks that slot is a fully sealed regular memory object and stores its
 * size; any weaker object is refused before a byte is read. */
static pbx_err lx_pbx1_check(int32_t slot, uint64_t *size)
{
    struct lx_stat st;
    int64_t seals;
    pbx_mem_set(&st, 0, sizeof(st));
    if (!lx_slot_open(slot)) {
        return PBX_E_PORT_PBX1_MISSING;
    }
    if (lx_sys3(LX_SYS_FSTAT, slot, lx_ptr(&st), 0) != 0) {
        return PBX_E_PORT_SYSCALL;
    }
    if ((st.mode & LX_S_IFMT) != LX_S_IFREG) {
        return PBX_E_PORT_PBX1_KIND;
    }
    seals = lx_sys3(LX_SYS_FCNTL, slot, LX_F_GET_SEALS, 0);
    if (seals < 0 || (seals & LX_PBX1_SEALS) != LX_PBX1_SEALS) {
        return PBX_E_PORT_PBX1_UNSEALED;
    }
    if (st.size <= 0) {
        return PBX_E_PORT_PBX1_SIZE;
    }
    *size = (uint64_t)st.size;
    return PBX_OK;
}

pbx_err pbx_port_pbx1_read(pbx_port_ctx *ctx, int32_t slot, uint8_t *buf,
                           uint32_t cap_bytes, uint32_t *len_bytes)
{
    uint64_t size = 0;
    uint64_t done = 0;
    pbx_err err = lx_pbx1_check(slot, &size);
    (void)ctx;
    *len_bytes = 0;
    if (err != PBX_OK) {
        return err;
    }
    if (size > cap_bytes) {
        return PBX_E_PORT_PBX1_SIZE;
    }
    /* Each pass reads at least one byte or stops, so size passes suffice. */
    for (uint64_t pass = 0; pass < size && done < size; pass++) {
        int64_t r = lx_sys6(LX_SYS_PREAD64, slot, lx_ptr(buf + done),
                            (int64_t)(size - done), (int64_t)done, 0, 0);
        if (r == -LX_EINTR) {
            continue;
        }
        if (r <= 0) {
            return PBX_E_PORT_PBX1_SIZE;
        }
        done += (uint64_t)r;
    }
    if (done != size) {
        return PBX_E_PORT_PBX1_SIZE;
    }
    *len_bytes = (uint32_t)size;
    return PBX_OK;
}
