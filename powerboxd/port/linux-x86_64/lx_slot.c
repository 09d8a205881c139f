/*
 * lx_slot.c: slot query, exact deletion with proof, and reservation
 * placeholders for the linux-x86_64 port. A slot is a file descriptor
 * number; the port is single-threaded, so nothing can claim a number
 * between a deletion and its proof.
 *
 * The port keeps one bit per reservable slot saying its placeholder is
 * there (lx_placed_note), and takes close(2) answering 0 as the proof of
 * an empty number, so a reservation, a receipt move and a deletion ask the
 * kernel nothing beyond the dup3 or close itself (issue 23 item 4); the
 * port tests (tests/port/test_port.c) drive every such path for real.
 *
 * Transient deletion results (PBX_E_PORT_DELETE_AGAIN): close(2) releases
 * the descriptor even when it answers EINTR, so delete, unreserve and the
 * receipt deletions never answer AGAIN; their proof either holds or is a
 * permanent rejection. Only restore's dup3 can in principle leave the
 * receipt in place (EINTR, or EBUSY in a race with another thread's
 * open); it answers AGAIN then, after proving the receipt is still there.
 * powerboxd installs no signal handler and runs one thread, so neither
 * happens in practice.
 */
#include "powerboxd/port/linux-x86_64/lx_int.h"

/** LX_EBUSY is dup3's "racing with open(2)" errno (asm-generic). */
#define LX_EBUSY 16

int lx_slot_open(int32_t slot)
{
    return lx_slot_valid(slot) &&
           lx_sys3(LX_SYS_FCNTL, slot, LX_F_GETFD, 0) >= 0;
}

/* Reports whether slot lies in the context's reservable range. */
static int lx_in_range(const pbx_port_ctx *ctx, int32_t slot)
{
    return lx_slot_valid(slot) && slot >= ctx->slot_min &&
           slot <= ctx->slot_max;
}

void lx_placed_note(pbx_port_ctx *ctx, int32_t slot, int note)
{
    if (!lx_in_range(ctx, slot)) {
        return;
    }
    uint32_t i = (uint32_t)(slot - ctx->slot_min);
    uint64_t bit = UINT64_C(1) << (i % 64U);
    ctx->placed[i / 64U] &= ~bit;
    ctx->moved[i / 64U] &= ~bit;
    if (note == LX_NOTE_PLACED) {
        ctx->placed[i / 64U] |= bit;
    } else if (note == LX_NOTE_MOVED) {
        ctx->moved[i / 64U] |= bit;
    }
}

/* Whether the record says reservable slot holds a receipt the port moved
 * or copied there. */
static int lx_moved(const pbx_port_ctx *ctx, int32_t slot)
{
    uint32_t i = (uint32_t)(slot - ctx->slot_min);
    return (int)((ctx->moved[i / 64U] >> (i % 64U)) & 1U);
}

/* Whether the record says reservable slot holds the placeholder. */
static int lx_placed(const pbx_port_ctx *ctx, int32_t slot)
{
    uint32_t i = (uint32_t)(slot - ctx->slot_min);
    return (int)((ctx->placed[i / 64U] >> (i % 64U)) & 1U);
}

pbx_err lx_close_proven(int32_t slot)
{
    if (!lx_slot_valid(slot)) {
        return PBX_E_PORT_SLOT_RANGE;
    }
    /* close(2) answering 0 is the kernel's statement that the number is
     * free; any other answer is proven by asking for the number. */
    if (lx_sys1(LX_SYS_CLOSE, slot) == 0) {
        return PBX_OK;
    }
    if (lx_sys3(LX_SYS_FCNTL, slot, LX_F_GETFD, 0) != -LX_EBADF) {
        return PBX_E_PORT_DELETE_UNPROVEN;
    }
    return PBX_OK;
}

pbx_err lx_identity(int32_t slot, uint64_t *space, uint64_t *id, uint32_t *mode)
{
    /* Cleared first so no path reads what the kernel did not write (a
     * few word stores now; the byte-wise clear cost 8.2k instructions a
     * lifecycle over its 14 calls, which are 4 since issue 23 item 4). */
    struct lx_stat st;
    const uint8_t *raw = (const uint8_t *)&st;
    pbx_mem_set(&st, 0, sizeof(st));
    if (!lx_slot_valid(slot) ||
        lx_sys3(LX_SYS_FSTAT, slot, lx_ptr(&st), 0) != 0) {
        return PBX_E_PORT_SYSCALL;
    }
    /* The kernel wrote its own layout: decode the three fields at their
     * pinned offsets (x86_64 is little-endian). */
    *space = pbx_le_get64(raw + LX_STAT_OFF_DEV);
    *id = pbx_le_get64(raw + LX_STAT_OFF_INO);
    *mode = pbx_le_get32(raw + LX_STAT_OFF_MODE);
    return PBX_OK;
}

int lx_is_placeholder(const pbx_port_ctx *ctx, int32_t slot)
{
    uint64_t space = 0;
    uint64_t id = 0;
    uint32_t mode = 0;
    if (lx_in_range(ctx, slot)) {
        return lx_placed(ctx, slot);
    }
    if (lx_identity(slot, &space, &id, &mode) != PBX_OK) {
        return 0;
    }
    return space == ctx->placeholder_space && id == ctx->placeholder_id;
}

/* Reads one int-sized socket option; returns -1 when it cannot. */
static int32_t lx_sockopt_int(int32_t slot, int32_t name)
{
    int32_t v = 0;
    uint32_t len = sizeof(v);
    if (lx_sys6(LX_SYS_GETSOCKOPT, slot, LX_SOL_SOCKET, name, lx_ptr(&v),
                lx_ptr(&len), 0) != 0) {
        return -1;
    }
    return v;
}

/* Fills the socket part of a query: kind by SO_TYPE, listening state, and
 * the peer's credentials when the socket is connected. */
static void lx_query_socket(int32_t slot, pbx_port_slot_info *info)
{
    struct lx_ucred cred = {0, 0, 0};
    uint32_t len = sizeof(cred);
    int32_t type = lx_sockopt_int(slot, LX_SO_TYPE);
    if (type == LX_SOCK_SEQPACKET) {
        info->kind = PBX_PORT_KIND_ENDPOINT;
    } else if (type == LX_SOCK_DGRAM) {
        info->kind = PBX_PORT_KIND_NOTIFY;
    } else if (type == LX_SOCK_STREAM) {
        info->kind = PBX_PORT_KIND_STREAM;
    } else {
        info->kind = PBX_PORT_KIND_OTHER;
    }
    /* The test pbx_port_slot_identity makes, with the same answers: a
     * socket (the caller saw S_IFSOCK) that answers SO_TYPE, inode not 0.
     * The runtime keeps it with the judgment instead of asking again. */
    if (type >= 0 && info->object_id != 0U) {
        info->flags |= PBX_PORT_INFO_IDENTITY;
    }
    if (lx_sockopt_int(slot, LX_SO_ACCEPTCONN) == 1) {
        info->flags |= PBX_PORT_INFO_LISTENING;
    }
    if (lx_sys6(LX_SYS_GETSOCKOPT, slot, LX_SOL_SOCKET, LX_SO_PEERCRED,
                lx_ptr(&cred), lx_ptr(&len), 0) == 0 &&
        cred.pid > 0) {
        info->flags |= PBX_PORT_INFO_PEER;
        info->peer_pid = cred.pid;
        info->peer_uid = cred.uid;
        info->peer_gid = cred.gid;
    }
}

pbx_err pbx_port_slot_query(pbx_port_ctx *ctx, int32_t slot,
                            pbx_port_slot_info *info)
{
    uint32_t mode = 0;
    pbx_mem_set(info, 0, sizeof(*info));
    if (!lx_slot_valid(slot)) {
        return PBX_E_PORT_SLOT_RANGE;
    }
    if (lx_in_range(ctx, slot) && lx_placed(ctx, slot)) {
        info->kind = PBX_PORT_KIND_PLACEHOLDER;
        info->object_space = ctx->placeholder_space;
        info->object_id = ctx->placeholder_id;
        return PBX_OK;
    }
    if (lx_identity(slot, &info->object_space, &info->object_id, &mode) !=
        PBX_OK) {
        /* fstat fails on an open descriptor only for want of memory: an
         * empty slot is the one that answers EBADF to F_GETFD too. */
        if (!lx_slot_open(slot)) {
            info->object_space = 0U;
            info->object_id = 0U;
            info->kind = PBX_PORT_KIND_EMPTY;
            return PBX_OK;
        }
        return PBX_E_PORT_SYSCALL;
    }
    if (info->object_space == ctx->placeholder_space &&
        info->object_id == ctx->placeholder_id) {
        info->kind = PBX_PORT_KIND_PLACEHOLDER;
    } else if ((mode & LX_S_IFMT) == LX_S_IFSOCK) {
        lx_query_socket(slot, info);
    } else if ((mode & LX_S_IFMT) == LX_S_IFREG) {
        int64_t seals = lx_sys3(LX_SYS_FCNTL, slot, LX_F_GET_SEALS, 0);
        info->kind = PBX_PORT_KIND_MEMORY;
        if (seals >= 0 && (seals & LX_SEALS_ALL) == LX_SEALS_ALL) {
            info->flags |= PBX_PORT_INFO_SEALED;
        }
    } else {
        info->kind = PBX_PORT_KIND_OTHER;
    }
    return PBX_OK;
}

pbx_err pbx_port_slot_identity(pbx_port_ctx *ctx, int32_t slot,
                               uint64_t *identity)
{
    uint64_t space = 0;
    uint64_t id = 0;
    uint32_t mode = 0;
    *identity = 0U;
    if (!lx_slot_valid(slot)) {
        return PBX_E_PORT_SLOT_RANGE;
    }
    if (lx_in_range(ctx, slot) && lx_placed(ctx, slot)) {
        return PBX_E_PORT_NO_IDENTITY;
    }
    if (lx_identity(slot, &space, &id, &mode) != PBX_OK) {
        return lx_slot_open(slot) ? PBX_E_PORT_SYSCALL : PBX_E_PORT_NO_IDENTITY;
    }
    if (space == ctx->placeholder_space && id == ctx->placeholder_id) {
        return PBX_E_PORT_NO_IDENTITY;
    }
    /* Only a real socket has an identity here: its inode lives on the one
     * sockfs superblock, so st_ino alone names it among every live socket
     * (st_dev is the same for all of them). An O_PATH descriptor of a
     * socket file has the mode too, but it names a filesystem inode and
     * answers no socket option, so SO_TYPE tells it apart. */
    if ((mode & LX_S_IFMT) != LX_S_IFSOCK ||
        lx_sockopt_int(slot, LX_SO_TYPE) < 0 || id == 0U) {
        return PBX_E_PORT_NO_IDENTITY;
    }
    *identity = id;
    return PBX_OK;
}

pbx_err pbx_port_slot_delete(pbx_port_ctx *ctx, int32_t slot)
{
    int64_t r;
    if (!lx_slot_valid(slot)) {
        return PBX_E_PORT_SLOT_RANGE;
    }
    lx_placed_note(ctx, slot, LX_NOTE_UNKNOWN);
    /* One close: 0 proves the number free, EBADF says nothing was there
     * to delete, anything else is proven by asking for the number. */
    r = lx_sys1(LX_SYS_CLOSE, slot);
    if (r == 0) {
        return PBX_OK;
    }
    if (r == -LX_EBADF ||
        lx_sys3(LX_SYS_FCNTL, slot, LX_F_GETFD, 0) != -LX_EBADF) {
        return PBX_E_PORT_DELETE_UNPROVEN;
    }
    return PBX_OK;
}

pbx_err pbx_port_slot_restore(pbx_port_ctx *ctx, int32_t slot)
{
    if (!lx_in_range(ctx, slot)) {
        return PBX_E_PORT_SLOT_RANGE;
    }
    /* A slot the record says holds the port's placeholder or a receipt it
     * moved there is not empty; only an unknown one is asked about. */
    if (!lx_placed(ctx, slot) && !lx_moved(ctx, slot) && !lx_slot_open(slot)) {
        return PBX_E_PORT_NOT_RESERVED;
    }
    /* dup3 replaces the receipt atomically: the number is never empty, so
     * no other allocation can take the reservation meanwhile. */
    int64_t r = lx_sys3(LX_SYS_DUP3, ctx->placeholder_slot, slot, LX_O_CLOEXEC);
    if ((r == -LX_EINTR || r == -LX_EBUSY) && lx_slot_open(slot) &&
        !lx_is_placeholder(ctx, slot)) {
        /* Nothing was replaced: the receipt is still held. */
        return PBX_E_PORT_DELETE_AGAIN;
    }
    if (r != slot) {
        lx_placed_note(ctx, slot, LX_NOTE_UNKNOWN);
        return PBX_E_PORT_SYSCALL;
    }
    /* dup3 answering slot proves the placeholder is there now. */
    lx_placed_note(ctx, slot, LX_NOTE_PLACED);
    return PBX_OK;
}

pbx_err pbx_port_slot_copy(pbx_port_ctx *ctx, int32_t from_slot,
                           int32_t dest_slot)
{
    if (!lx_in_range(ctx, dest_slot) || !lx_slot_valid(from_slot) ||
        from_slot == dest_slot) {
        return PBX_E_PORT_SLOT_RANGE;
    }
    if (!lx_slot_open(from_slot) || lx_is_placeholder(ctx, from_slot)) {
        return PBX_E_PORT_STATE;
    }
    if (!lx_is_placeholder(ctx, dest_slot)) {
        return PBX_E_PORT_NOT_RESERVED;
    }
    /* dup3 replaces the placeholder atomically; both numbers then name
     * the same open connection. */
    lx_placed_note(ctx, dest_slot, LX_NOTE_UNKNOWN);
    if (lx_sys3(LX_SYS_DUP3, from_slot, dest_slot, LX_O_CLOEXEC) != dest_slot) {
        return PBX_E_PORT_SYSCALL;
    }
    lx_placed_note(ctx, dest_slot, LX_NOTE_MOVED);
    return PBX_OK;
}

pbx_err pbx_port_reserve(pbx_port_ctx *ctx, int32_t slot)
{
    if (!lx_in_range(ctx, slot)) {
        return PBX_E_PORT_SLOT_RANGE;
    }
    /* F_DUPFD_CLOEXEC copies the placeholder to the lowest free number at
     * or above slot, never replacing anything: answering slot itself
     * proves the number was empty and fills it, one call where F_GETFD
     * then dup3 took two (issue 23 item 4). A higher answer proves slot
     * occupied; that copy sits on a number that was free and is closed
     * again (close frees the number whatever it answers), so every
     * number is as it was. */
    int64_t got =
        lx_sys3(LX_SYS_FCNTL, ctx->placeholder_slot, LX_F_DUPFD_CLOEXEC, slot);
    if (got == slot) {
        lx_placed_note(ctx, slot, LX_NOTE_PLACED);
        return PBX_OK;
    }
    if (got < 0) {
        return PBX_E_PORT_SYSCALL;
    }
    (void)lx_sys1(LX_SYS_CLOSE, got);
    return PBX_E_PORT_SLOT_OCCUPIED;
}

pbx_err pbx_port_unreserve(pbx_port_ctx *ctx, int32_t slot)
{
    if (!lx_in_range(ctx, slot)) {
        return PBX_E_PORT_SLOT_RANGE;
    }
    if (!lx_is_placeholder(ctx, slot)) {
        return PBX_E_PORT_NOT_RESERVED;
    }
    lx_placed_note(ctx, slot, LX_NOTE_UNKNOWN);
    return lx_close_proven(slot);
}
