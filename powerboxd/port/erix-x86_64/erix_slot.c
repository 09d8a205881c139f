/*
 * erix_slot.c: setup, slot query, exact deletion with proof, reservations,
 * PBX1 and the arena for the erix-x86_64 port. EriX keeps reservations in
 * the kernel (a reserved empty slot), so no placeholder object exists.
 */
#include "powerboxd/port/erix-x86_64/erix_int.h"

/** ERIX_PAGE_BYTES is the allocation granule of the arena. */
#define ERIX_PAGE_BYTES 4096U
/** ERIX_ARENA_BYTES_MAX bounds the arena request (1 TiB). */
#define ERIX_ARENA_BYTES_MAX (1ULL << 40)

/* Queries slot into *si; returns the kernel status. */
static int64_t erix_query(int32_t slot, struct erix_slot_info *si)
{
    pbx_mem_set(si, 0, sizeof(*si));
    if (slot < 0 || slot > ERIX_SLOT_LIMIT) {
        return ERIX_E_RANGE;
    }
    return erix_sys(ERIX_SYS_SLOT_QUERY, (uint64_t)slot, (uintptr_t)si, 0, 0,
                    (uint64_t *)0);
}

uint32_t erix_type(int32_t slot)
{
    struct erix_slot_info si;
    return erix_query(slot, &si) == ERIX_OK ? si.type : ERIX_OBJ_EMPTY;
}

/* Judges a deletion or release the kernel answered ERIX_E_INTERRUPTED.
 * The assumed ABI (erix_abi.h) says it then took no effect; the port does
 * not take that on trust: a slot still of type before is a transient
 * result (the capability or reservation is still held), one of type want
 * was finished after all, anything else is unproven. */
static pbx_err erix_interrupted(int32_t slot, uint32_t before, uint32_t want)
{
    uint32_t now = erix_type(slot);
    if (now == want) {
        return PBX_OK;
    }
    return now == before ? PBX_E_PORT_DELETE_AGAIN : PBX_E_PORT_DELETE_UNPROVEN;
}

pbx_err erix_delete_to(int32_t slot, uint32_t want)
{
    uint32_t before = erix_type(slot);
    int64_t st =
        erix_sys(ERIX_SYS_SLOT_DELETE, (uint64_t)slot, 0, 0, 0, (uint64_t *)0);
    if (st == ERIX_E_INTERRUPTED) {
        return erix_interrupted(slot, before, want);
    }
    if (st != ERIX_OK) {
        return PBX_E_PORT_SYSCALL;
    }
    return erix_type(slot) == want ? PBX_OK : PBX_E_PORT_DELETE_UNPROVEN;
}

/* Releases the reservation of reserved-empty slot and proves it empty. */
static pbx_err erix_unreserve_proven(int32_t slot)
{
    int64_t st = erix_sys(ERIX_SYS_SLOT_UNRESERVE, (uint64_t)slot, 0, 0, 0,
                          (uint64_t *)0);
    if (st == ERIX_E_INTERRUPTED) {
        return erix_interrupted(slot, ERIX_OBJ_RESERVED, ERIX_OBJ_EMPTY);
    }
    if (st != ERIX_OK) {
        return PBX_E_PORT_SYSCALL;
    }
    return erix_type(slot) == ERIX_OBJ_EMPTY ? PBX_OK
                                             : PBX_E_PORT_DELETE_UNPROVEN;
}

pbx_err pbx_port_init(pbx_port_ctx *ctx, int32_t slot_min, int32_t slot_max)
{
    pbx_mem_set(ctx, 0, sizeof(*ctx));
    ctx->public_slot = PBX_PORT_SLOT_NONE;
    ctx->broker_slot = PBX_PORT_SLOT_NONE;
    ctx->supervisor_slot = PBX_PORT_SLOT_NONE;
    ctx->wait_slot = PBX_PORT_SLOT_NONE;
    ctx->placeholder_slot = PBX_PORT_SLOT_NONE;
    for (uint32_t i = 0; i < PBX_PORT_RECEIPTS_MAX; i++) {
        ctx->staged[i] = PBX_PORT_SLOT_NONE;
    }
    if (slot_min < ERIX_SLOT_PRIVATE_END || slot_max < slot_min ||
        slot_max > ERIX_SLOT_LIMIT) {
        return PBX_E_PORT_SLOT_RANGE;
    }
    ctx->slot_min = slot_min;
    ctx->slot_max = slot_max;
    if (erix_sys(ERIX_SYS_WAITSET_CREATE, ERIX_SLOT_WAITSET, 0, 0, 0,
                 (uint64_t *)0) != ERIX_OK) {
        return PBX_E_PORT_SYSCALL;
    }
    ctx->wait_slot = ERIX_SLOT_WAITSET;
    ctx->flags = ERIX_FLAG_INIT;
    return PBX_OK;
}

/* Maps a kernel slot description to the port's portable one. */
static void erix_info_fill(const struct erix_slot_info *si,
                           pbx_port_slot_info *info)
{
    static const uint32_t kinds[] = {
        PBX_PORT_KIND_EMPTY,  PBX_PORT_KIND_PLACEHOLDER, PBX_PORT_KIND_ENDPOINT,
        PBX_PORT_KIND_NOTIFY, PBX_PORT_KIND_MEMORY,
    };
    info->kind =
        si->type < PBX_ARRAY_LEN(kinds) ? kinds[si->type] : PBX_PORT_KIND_OTHER;
    info->object_id = si->object_id;
    /* EriX identifies a caller by the badge of the capability it invoked;
     * there is no process credential, so PBX_PORT_INFO_PEER stays clear. */
    info->object_space = si->badge;
    if ((si->rights & ERIX_RIGHT_RECV) != 0U && si->type == ERIX_OBJ_ENDPOINT) {
        info->flags |= PBX_PORT_INFO_LISTENING;
    }
    if (si->type == ERIX_OBJ_FRAME &&
        (si->flags & ERIX_SLOTF_IMMUTABLE) != 0U) {
        info->flags |= PBX_PORT_INFO_SEALED;
    }
    /* The kernel keeps real rights: report them exactly. */
    info->flags |= PBX_PORT_INFO_RIGHTS;
    info->rights =
        ((si->rights & ERIX_RIGHT_READ) != 0U ? PBX_PORT_RIGHT_READ : 0U) |
        ((si->rights & ERIX_RIGHT_WRITE) != 0U ? PBX_PORT_RIGHT_WRITE : 0U) |
        ((si->rights & ERIX_RIGHT_SEND) != 0U ? PBX_PORT_RIGHT_SEND : 0U) |
        ((si->rights & ERIX_RIGHT_RECV) != 0U ? PBX_PORT_RIGHT_RECEIVE : 0U) |
        ((si->rights & ERIX_RIGHT_MANAGE) != 0U ? PBX_PORT_RIGHT_MANAGE : 0U) |
        ((si->rights & ERIX_RIGHT_GRANT) != 0U ? PBX_PORT_RIGHT_GRANT : 0U);
}

pbx_err pbx_port_slot_query(pbx_port_ctx *ctx, int32_t slot,
                            pbx_port_slot_info *info)
{
    struct erix_slot_info si;
    int64_t st = erix_query(slot, &si);
    (void)ctx;
    pbx_mem_set(info, 0, sizeof(*info));
    if (st == ERIX_E_RANGE) {
        return PBX_E_PORT_SLOT_RANGE;
    }
    if (st == ERIX_E_EMPTY) {
        return PBX_OK;
    }
    if (st != ERIX_OK) {
        return PBX_E_PORT_SYSCALL;
    }
    erix_info_fill(&si, info);
    return PBX_OK;
}

pbx_err pbx_port_slot_identity(pbx_port_ctx *ctx, int32_t slot,
                               uint64_t *identity)
{
    uint64_t id = 0;
    int64_t st;
    (void)ctx;
    *identity = 0U;
    if (slot < 0 || slot > ERIX_SLOT_LIMIT) {
        return PBX_E_PORT_SLOT_RANGE;
    }
    st = erix_sys(ERIX_SYS_SLOT_IDENTIFY, (uint64_t)slot, 0, 0, 0, &id);
    if (st == ERIX_E_EMPTY || (st == ERIX_OK && id == 0U)) {
        return PBX_E_PORT_NO_IDENTITY;
    }
    if (st != ERIX_OK) {
        return st == ERIX_E_RANGE ? PBX_E_PORT_SLOT_RANGE : PBX_E_PORT_SYSCALL;
    }
    *identity = id;
    return PBX_OK;
}

pbx_err pbx_port_slot_delete(pbx_port_ctx *ctx, int32_t slot)
{
    struct erix_slot_info si;
    (void)ctx;
    if (erix_query(slot, &si) != ERIX_OK || si.type == ERIX_OBJ_EMPTY) {
        return PBX_E_PORT_DELETE_UNPROVEN;
    }
    if ((si.flags & ERIX_SLOTF_RESERVED) == 0U) {
        return erix_delete_to(slot, ERIX_OBJ_EMPTY);
    }
    /* As on Linux, deleting a reserved slot leaves it empty, not reserved.
     * Interrupted half-way, the slot is reserved-empty: a retry finds it
     * so and only releases the reservation. */
    if (si.type != ERIX_OBJ_RESERVED) {
        pbx_err err = erix_delete_to(slot, ERIX_OBJ_RESERVED);
        if (err != PBX_OK) {
            return err == PBX_E_PORT_DELETE_AGAIN ? err
                                                  : PBX_E_PORT_DELETE_UNPROVEN;
        }
    }
    return erix_unreserve_proven(slot);
}

/* Reports whether slot lies in the context's reservable range. */
static int erix_in_range(const pbx_port_ctx *ctx, int32_t slot)
{
    return slot >= ctx->slot_min && slot <= ctx->slot_max;
}

pbx_err pbx_port_slot_restore(pbx_port_ctx *ctx, int32_t slot)
{
    struct erix_slot_info si;
    if (!erix_in_range(ctx, slot)) {
        return PBX_E_PORT_SLOT_RANGE;
    }
    if (erix_query(slot, &si) != ERIX_OK ||
        (si.flags & ERIX_SLOTF_RESERVED) == 0U ||
        si.type == ERIX_OBJ_RESERVED) {
        return PBX_E_PORT_NOT_RESERVED;
    }
    return erix_delete_to(slot, ERIX_OBJ_RESERVED);
}

pbx_err pbx_port_slot_copy(pbx_port_ctx *ctx, int32_t from_slot,
                           int32_t dest_slot)
{
    if (!erix_in_range(ctx, dest_slot) || from_slot < 0 ||
        from_slot > ERIX_SLOT_LIMIT || from_slot == dest_slot) {
        return PBX_E_PORT_SLOT_RANGE;
    }
    if (erix_type(dest_slot) != ERIX_OBJ_RESERVED) {
        return PBX_E_PORT_NOT_RESERVED;
    }
    /* A derived child: revoking the parent's object ends it too. */
    if (erix_sys(ERIX_SYS_SLOT_DERIVE, (uint64_t)from_slot, (uint64_t)dest_slot,
                 ERIX_RIGHT_SEND, 0, (uint64_t *)0) != ERIX_OK) {
        return PBX_E_PORT_SYSCALL;
    }
    return erix_type(dest_slot) == erix_type(from_slot) ? PBX_OK
                                                        : PBX_E_PORT_SYSCALL;
}

pbx_err pbx_port_reserve(pbx_port_ctx *ctx, int32_t slot)
{
    if (!erix_in_range(ctx, slot)) {
        return PBX_E_PORT_SLOT_RANGE;
    }
    if (erix_type(slot) != ERIX_OBJ_EMPTY) {
        return PBX_E_PORT_SLOT_OCCUPIED;
    }
    if (erix_sys(ERIX_SYS_SLOT_RESERVE, (uint64_t)slot, 0, 0, 0,
                 (uint64_t *)0) != ERIX_OK) {
        return PBX_E_PORT_SYSCALL;
    }
    return erix_type(slot) == ERIX_OBJ_RESERVED ? PBX_OK : PBX_E_PORT_SYSCALL;
}

pbx_err pbx_port_unreserve(pbx_port_ctx *ctx, int32_t slot)
{
    if (!erix_in_range(ctx, slot)) {
        return PBX_E_PORT_SLOT_RANGE;
    }
    if (erix_type(slot) != ERIX_OBJ_RESERVED) {
        return PBX_E_PORT_NOT_RESERVED;
    }
    return erix_unreserve_proven(slot);
}

/* Checks that slot is a readable, immutable frame and returns its size in
 * *size; the EriX equivalent of a fully sealed memfd. */
static pbx_err erix_pbx1_check(int32_t slot, uint32_t cap, uint64_t *size)
{
    struct erix_slot_info si;
    int64_t st = erix_query(slot, &si);
    if (st == ERIX_E_EMPTY || (st == ERIX_OK && si.type == ERIX_OBJ_EMPTY)) {
        return PBX_E_PORT_PBX1_MISSING;
    }
    if (st != ERIX_OK) {
        return PBX_E_PORT_SYSCALL;
    }
    if (si.type != ERIX_OBJ_FRAME || (si.rights & ERIX_RIGHT_READ) == 0U) {
        return PBX_E_PORT_PBX1_KIND;
    }
    if ((si.rights & ERIX_RIGHT_WRITE) != 0U ||
        (si.flags & ERIX_SLOTF_IMMUTABLE) == 0U) {
        return PBX_E_PORT_PBX1_UNSEALED;
    }
    if (si.size == 0U || si.size > cap) {
        return PBX_E_PORT_PBX1_SIZE;
    }
    *size = si.size;
    return PBX_OK;
}

pbx_err pbx_port_pbx1_read(pbx_port_ctx *ctx, int32_t slot, uint8_t *buf,
                           uint32_t cap_bytes, uint32_t *len_bytes)
{
    uint64_t size = 0;
    uint64_t got = 0;
    pbx_err err = erix_pbx1_check(slot, cap_bytes, &size);
    (void)ctx;
    *len_bytes = 0;
    if (err != PBX_OK) {
        return err;
    }
    /* The frame is immutable, so one read of the whole size is exact. */
    if (erix_sys(ERIX_SYS_FRAME_READ, (uint64_t)slot, 0, (uintptr_t)buf, size,
                 &got) != ERIX_OK ||
        got != size) {
        return PBX_E_PORT_PBX1_SIZE;
    }
    *len_bytes = (uint32_t)size;
    return PBX_OK;
}

pbx_err pbx_port_arena_map(pbx_port_ctx *ctx, uint64_t bytes, void **base)
{
    uint64_t len;
    uint64_t addr = 0;
    *base = (void *)0;
    if ((ctx->flags & ERIX_FLAG_ARENA) != 0U) {
        return PBX_E_PORT_ARENA_MAPPED;
    }
    if (bytes == 0U || bytes > ERIX_ARENA_BYTES_MAX) {
        return PBX_E_PORT_ARENA_SIZE;
    }
    len = (bytes + (ERIX_PAGE_BYTES - 1U)) & ~(uint64_t)(ERIX_PAGE_BYTES - 1U);
    if (erix_sys(ERIX_SYS_VM_ALLOC, len, 0, 0, 0, &addr) != ERIX_OK ||
        addr == 0U) {
        return PBX_E_PORT_SYSCALL;
    }
    ctx->flags |= ERIX_FLAG_ARENA;
    ctx->arena_base = addr;
    ctx->arena_bytes = len;
    /* The kernel returns the mapping as an integer; this is its address. */
    *base = (void *)(uintptr_t)addr; // NOLINT(performance-no-int-to-ptr)
    return PBX_OK;
}
