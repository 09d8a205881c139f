/*
 * lx_msg.c: message transport for the linux-x86_64 port: receive with
 * SCM_RIGHTS receipts staged, exact receipt moves, surplus deletion, send
 * with an optional capability, synchronous peer calls and datagram wakes.
 */
#include "powerboxd/port/linux-x86_64/lx_int.h"
#include "powerboxd/port/linux-x86_64/lx_vdso.h"

/** LX_SYS_POLL is poll(fds, n, timeout), used only inside a peer call. */
#define LX_SYS_POLL 7
/** LX_CLOCK_MONOTONIC never jumps with the wall clock. */
#define LX_CLOCK_MONOTONIC 1
/** LX_POLLIN asks poll for readability. */
#define LX_POLLIN 1
/** LX_EPIPE: the peer closed the connection. */
#define LX_EPIPE 32
/** LX_ECONNRESET: the peer reset the connection. */
#define LX_ECONNRESET 104
/** LX_CALL_WAITS_MAX bounds the wake-ups one peer call tolerates. */
#define LX_CALL_WAITS_MAX 64U

/** lx_timespec is struct timespec; only the kernel writes it. */
struct lx_timespec {
    /** Seconds. */
    int64_t sec;
    /** Nanoseconds. */
    int64_t nsec;
};

/** LX_CTRL_BYTES holds exactly PBX_PORT_RECEIPTS_MAX descriptors (one
 * control message header plus the descriptors, rounded to 8 bytes). */
#define LX_CTRL_BYTES                                                          \
    ((LX_CMSG_HDR_BYTES + 4U * PBX_PORT_RECEIPTS_MAX + 7U) & ~7U)

/** lx_pollfd is struct pollfd; only the kernel reads its members, which
 * cppcheck cannot see. */
struct lx_pollfd {
    /** Descriptor. */
    // cppcheck-suppress unusedStructMember
    int32_t fd;
    /** Requested events. */
    // cppcheck-suppress unusedStructMember
    int16_t events;
    /** Returned events. */
    // cppcheck-suppress unusedStructMember
    int16_t revents;
};

/* Reports whether any staged receipt still awaits a move or deletion. */
static int lx_staged_pending(const pbx_port_ctx *ctx)
{
    for (uint32_t i = 0; i < ctx->staged_count && i < PBX_PORT_RECEIPTS_MAX;
         i++) {
        if (ctx->staged[i] != PBX_PORT_SLOT_NONE) {
            return 1;
        }
    }
    return 0;
}

pbx_err pbx_port_receipts_delete(pbx_port_ctx *ctx, uint32_t *deleted)
{
    pbx_err first = PBX_OK;
    uint32_t n = 0;
    for (uint32_t i = 0; i < ctx->staged_count && i < PBX_PORT_RECEIPTS_MAX;
         i++) {
        if (ctx->staged[i] != PBX_PORT_SLOT_NONE) {
            pbx_err err = lx_close_proven(ctx->staged[i]);
            if (err != PBX_OK && first == PBX_OK) {
                first = err;
            }
            ctx->staged[i] = PBX_PORT_SLOT_NONE;
            n++;
        }
    }
    ctx->staged_count = 0;
    if (deleted != NULL) {
        *deleted = n;
    }
    return first;
}

/* Stages the descriptors of one SCM_RIGHTS message at ctrl[off]. Returns 0
 * when they do not fit, which cannot happen with an honest kernel because
 * the buffer holds no more than the staging area. */
static int lx_stage_rights(pbx_port_ctx *ctx, const uint8_t *data,
                           uint64_t count)
{
    for (uint64_t i = 0; i < count; i++) {
        int32_t fd;
        if (ctx->staged_count >= PBX_PORT_RECEIPTS_MAX) {
            return 0;
        }
        pbx_mem_copy(&fd, data + 4U * i, sizeof(fd));
        ctx->staged[ctx->staged_count] = fd;
        ctx->staged_count++;
    }
    return 1;
}

/* Walks the received control messages and stages every descriptor. Any
 * control message other than SCM_RIGHTS makes the whole receive malformed
 * (its descriptors are still staged so the caller can delete them). */
static pbx_err lx_stage_control(pbx_port_ctx *ctx, const uint8_t *ctrl,
                                uint64_t ctrl_len)
{
    pbx_err err = PBX_OK;
    uint64_t off = 0;
    /* Every control message occupies at least a header, which bounds the
     * walk to LX_CTRL_BYTES / LX_CMSG_HDR_BYTES steps. */
    for (uint32_t step = 0; step < LX_CTRL_BYTES / LX_CMSG_HDR_BYTES &&
                            off + LX_CMSG_HDR_BYTES <= ctrl_len;
         step++) {
        uint64_t len;
        int32_t level;
        int32_t type;
        pbx_mem_copy(&len, ctrl + off, sizeof(len));
        pbx_mem_copy(&level, ctrl + off + 8U, sizeof(level));
        pbx_mem_copy(&type, ctrl + off + 12U, sizeof(type));
        if (len < LX_CMSG_HDR_BYTES || len > ctrl_len - off) {
            return PBX_E_PORT_CONTROL_MALFORMED;
        }
        if (level != LX_SOL_SOCKET || type != LX_SCM_RIGHTS ||
            !lx_stage_rights(ctx, ctrl + off + LX_CMSG_HDR_BYTES,
                             (len - LX_CMSG_HDR_BYTES) / 4U)) {
            err = PBX_E_PORT_CONTROL_MALFORMED;
        }
        off += (len + 7U) & ~(uint64_t)7U;
    }
    return err;
}

/* Refuses a receive whose receipts landed inside the reservable range:
 * such a number could later be mistaken for a reservation. */
static pbx_err lx_staged_range(const pbx_port_ctx *ctx)
{
    for (uint32_t i = 0; i < ctx->staged_count && i < PBX_PORT_RECEIPTS_MAX;
         i++) {
        if (ctx->staged[i] >= ctx->slot_min) {
            return PBX_E_PORT_SLOT_RANGE;
        }
    }
    return PBX_OK;
}

/* Judges a completed recvmsg: truncation of data or receipts, or foreign
 * control data, fails the receive after deleting everything that arrived,
 * with a deletion failure taking precedence over the original status. */
static pbx_err lx_recv_judge(pbx_port_ctx *ctx, const struct lx_msghdr *mh,
                             const uint8_t *ctrl)
{
    pbx_err err = lx_stage_control(ctx, ctrl, mh->controllen);
    pbx_err del;
    if ((mh->flags & LX_MSG_CTRUNC) != 0) {
        err = PBX_E_PORT_CTRUNC;
    } else if ((mh->flags & LX_MSG_TRUNC) != 0) {
        err = PBX_E_PORT_MSG_TRUNC;
    } else if (err == PBX_OK) {
        err = lx_staged_range(ctx);
    }
    if (err == PBX_OK) {
        return PBX_OK;
    }
    del = pbx_port_receipts_delete(ctx, NULL);
    return del != PBX_OK ? del : err;
}

/* One recvmsg into buf with the staging control buffer. Returns the byte
 * count, or a negated errno exactly as the kernel reported it. */
static int64_t lx_recvmsg(int32_t slot, struct lx_iovec *iov, uint64_t *ctrl,
                          struct lx_msghdr *mh, int32_t flags)
{
    /* Every field is set here, none cleared only to be written next. */
    mh->name = NULL;
    mh->namelen = 0;
    mh->pad0 = 0;
    mh->iov = iov;
    mh->iovlen = 1;
    mh->control = ctrl;
    mh->controllen = LX_CTRL_BYTES;
    mh->flags = 0;
    mh->pad1 = 0;
    return lx_sys3(LX_SYS_RECVMSG, slot, lx_ptr(mh),
                   LX_MSG_CMSG_CLOEXEC | flags);
}

/* Receives one message on slot and stages its receipts; shared by public
 * receives (non-blocking), peer-call replies and the supervisor. */
pbx_err lx_recv(pbx_port_ctx *ctx, int32_t slot, uint8_t *buf,
                uint32_t cap_bytes, pbx_port_msg *msg, int32_t flags)
{
    uint64_t ctrl[LX_CTRL_BYTES / 8U];
    struct lx_iovec iov;
    struct lx_msghdr mh;
    int64_t r;
    pbx_err err;
    msg->from_slot = slot;
    msg->len_bytes = 0;
    msg->receipts = 0;
    msg->badge = 0;
    if (lx_staged_pending(ctx)) {
        return PBX_E_PORT_RECEIPTS_PENDING;
    }
    ctx->staged_count = 0;
    iov.base = buf;
    iov.len = cap_bytes;
    r = lx_recvmsg(slot, &iov, ctrl, &mh, flags);
    if (r == -LX_EAGAIN || r == -LX_EINTR) {
        return PBX_E_PORT_AGAIN;
    }
    if (r == -LX_ECONNRESET) {
        return PBX_E_PORT_PEER_CLOSED;
    }
    if (r < 0) {
        return PBX_E_PORT_SYSCALL;
    }
    err = lx_recv_judge(ctx, &mh, (const uint8_t *)ctrl);
    if (err != PBX_OK) {
        return err;
    }
    if (r == 0 && ctx->staged_count == 0U) {
        /* A sequenced-packet end of stream: the protocol has no empty
         * messages, so an empty read without receipts is the hang-up. */
        return PBX_E_PORT_PEER_CLOSED;
    }
    msg->len_bytes = (uint32_t)r;
    msg->receipts = ctx->staged_count;
    return PBX_OK;
}

pbx_err pbx_port_public_recv(pbx_port_ctx *ctx, int32_t slot, uint8_t *buf,
                             uint32_t cap_bytes, pbx_port_msg *msg)
{
    uint32_t i;
    uint32_t badge = 0U;
    int known = 0;
    pbx_err err;
    uint32_t at = PBX_PORT_CLIENTS_MAX;
    for (i = 0; i < ctx->client_count && i < PBX_PORT_CLIENTS_MAX; i++) {
        if (ctx->clients[i] == slot) {
            known = 1;
            badge = ctx->client_badges[i];
            at = i;
        }
    }
    known |= slot >= 0 && slot == ctx->broker_slot;
    if (!known) {
        pbx_mem_set(msg, 0, sizeof(*msg));
        return PBX_E_PORT_NOT_CLIENT;
    }
    err = lx_recv(ctx, slot, buf, cap_bytes, msg, LX_MSG_DONTWAIT);
    msg->badge = badge;
    if (err == PBX_OK && at < PBX_PORT_CLIENTS_MAX) {
        /* A message is activity: the idle clock starts again. */
        ctx->client_seen_ms[at] = lx_now_ms();
    }
    if (slot == ctx->broker_slot && err == PBX_E_PORT_PEER_CLOSED) {
        /* The broker's sender is gone: a level-triggered hang-up would
         * be reported for ever, so stop watching; the slot stays. */
        lx_broker_unwatch(ctx);
    }
    return err;
}

pbx_err pbx_port_receipt_move(pbx_port_ctx *ctx, uint32_t index,
                              int32_t dest_slot)
{
    int32_t from;
    if (index >= ctx->staged_count || index >= PBX_PORT_RECEIPTS_MAX ||
        ctx->staged[index] == PBX_PORT_SLOT_NONE) {
        return PBX_E_PORT_RECEIPT_INDEX;
    }
    if (dest_slot < ctx->slot_min || dest_slot > ctx->slot_max) {
        return PBX_E_PORT_SLOT_RANGE;
    }
    if (!lx_is_placeholder(ctx, dest_slot)) {
        return PBX_E_PORT_NOT_RESERVED;
    }
    from = ctx->staged[index];
    /* dup3 swaps the placeholder for the receipt in one step; then the
     * staging number is deleted with proof, so exactly one slot holds it. */
    lx_placed_note(ctx, dest_slot, LX_NOTE_UNKNOWN);
    if (lx_sys3(LX_SYS_DUP3, from, dest_slot, LX_O_CLOEXEC) != dest_slot) {
        return PBX_E_PORT_SYSCALL;
    }
    lx_placed_note(ctx, dest_slot, LX_NOTE_MOVED);
    ctx->staged[index] = PBX_PORT_SLOT_NONE;
    return lx_close_proven(from);
}

/* Sends msg with an optional single descriptor; never blocks. */
static pbx_err lx_send(int32_t slot, const uint8_t *msg, uint32_t len_bytes,
                       int32_t cap_slot)
{
    uint64_t ctrl[3] = {0, 0, 0};
    struct lx_iovec iov;
    struct lx_msghdr mh;
    int64_t r;
    iov.base = (void *)msg;
    iov.len = len_bytes;
    /* Every field is set here, none cleared only to be written next. */
    mh.name = NULL;
    mh.namelen = 0;
    mh.pad0 = 0;
    mh.iov = &iov;
    mh.iovlen = 1;
    mh.control = NULL;
    mh.controllen = 0;
    mh.flags = 0;
    mh.pad1 = 0;
    if (cap_slot != PBX_PORT_SLOT_NONE) {
        /* One control message: length 20 (header + one int), padded to 24. */
        uint32_t lvl_type[2] = {LX_SOL_SOCKET, LX_SCM_RIGHTS};
        ctrl[0] = LX_CMSG_HDR_BYTES + 4U;
        pbx_mem_copy(&ctrl[1], lvl_type, sizeof(lvl_type));
        pbx_mem_copy(&ctrl[2], &cap_slot, sizeof(cap_slot));
        mh.control = ctrl;
        mh.controllen = sizeof(ctrl);
    }
    r = lx_sys3(LX_SYS_SENDMSG, slot, lx_ptr(&mh),
                LX_MSG_DONTWAIT | LX_MSG_NOSIGNAL);
    if (r == -LX_EAGAIN) {
        return PBX_E_PORT_BACKPRESSURE;
    }
    if (r == -LX_EPIPE || r == -LX_ECONNRESET) {
        return PBX_E_PORT_PEER_CLOSED;
    }
    return r == (int64_t)len_bytes ? PBX_OK : PBX_E_PORT_SYSCALL;
}

pbx_err pbx_port_send(pbx_port_ctx *ctx, int32_t slot, const uint8_t *msg,
                      uint32_t len_bytes, int32_t cap_slot)
{
    (void)ctx;
    if (!lx_slot_valid(slot) ||
        (cap_slot != PBX_PORT_SLOT_NONE && !lx_slot_valid(cap_slot))) {
        return PBX_E_PORT_SLOT_RANGE;
    }
    return lx_send(slot, msg, len_bytes, cap_slot);
}

pbx_err pbx_port_call_send(pbx_port_ctx *ctx, int32_t slot, const uint8_t *msg,
                           uint32_t len_bytes, int32_t cap_slot)
{
    /* A connected sequenced-packet socket carries the reply back on the
     * same connection: a call is an ordinary send. */
    return pbx_port_send(ctx, slot, msg, len_bytes, cap_slot);
}

pbx_err pbx_port_notify(pbx_port_ctx *ctx, int32_t slot, const uint8_t *msg,
                        uint32_t len_bytes)
{
    (void)ctx;
    if (!lx_slot_valid(slot)) {
        return PBX_E_PORT_SLOT_RANGE;
    }
    return lx_send(slot, msg, len_bytes, PBX_PORT_SLOT_NONE);
}

/* Milliseconds on the monotonic clock; 0 if the clock cannot be read,
 * which makes every deadline already past (fail closed). */
uint64_t lx_now_ms(void)
{
    struct lx_timespec ts = {0, 0};
    /* Through the vDSO where there is one (lx_clock.c). */
    if (lx_clock_gettime(LX_CLOCK_MONOTONIC, &ts.sec, &ts.nsec) != 0 ||
        ts.sec < 0 || ts.nsec < 0) {
        return 0U;
    }
    return (uint64_t)ts.sec * 1000U + (uint64_t)ts.nsec / 1000000U;
}

pbx_err pbx_port_route_recv(pbx_port_ctx *ctx, int32_t slot, uint8_t *buf,
                            uint32_t cap_bytes, pbx_port_msg *msg)
{
    if (!lx_slot_valid(slot)) {
        pbx_mem_set(msg, 0, sizeof(*msg));
        return PBX_E_PORT_SLOT_RANGE;
    }
    return lx_recv(ctx, slot, buf, cap_bytes, msg, LX_MSG_DONTWAIT);
}

pbx_err pbx_port_now_ms(pbx_port_ctx *ctx, uint64_t *now_ms)
{
    (void)ctx;
    *now_ms = lx_now_ms();
    return *now_ms == 0U ? PBX_E_PORT_SYSCALL : PBX_OK;
}

pbx_err pbx_port_call(pbx_port_ctx *ctx, int32_t route, const uint8_t *req,
                      uint32_t req_bytes, int32_t cap_slot, uint8_t *resp,
                      uint32_t cap_bytes, pbx_port_msg *msg,
                      uint32_t timeout_ms)
{
    pbx_err err;
    uint64_t start;
    uint64_t limit = timeout_ms == 0U ? 1U : timeout_ms;
    pbx_mem_set(msg, 0, sizeof(*msg));
    if (lx_staged_pending(ctx)) {
        return PBX_E_PORT_RECEIPTS_PENDING;
    }
    err = pbx_port_send(ctx, route, req, req_bytes, cap_slot);
    if (err != PBX_OK) {
        return err;
    }
    start = lx_now_ms();
    /* Never a blocking receive: the route may be a caller's scope, a
     * descriptor whose blocking mode the caller chose. Wait for
     * readability with poll until the deadline, a bounded number of times
     * (early wake-ups come only from signals). */
    for (uint32_t i = 0; i < LX_CALL_WAITS_MAX; i++) {
        struct lx_pollfd p = {route, LX_POLLIN, 0};
        uint64_t now;
        err = lx_recv(ctx, route, resp, cap_bytes, msg, LX_MSG_DONTWAIT);
        if (err != PBX_E_PORT_AGAIN) {
            return err;
        }
        now = lx_now_ms();
        if (now == 0U || now < start || now - start >= limit) {
            return PBX_E_PORT_TIMEOUT;
        }
        (void)lx_sys3(LX_SYS_POLL, lx_ptr(&p), 1,
                      (int64_t)(limit - (now - start)));
    }
    return PBX_E_PORT_TIMEOUT;
}
