/*
 * pbx_peer_vfs.c: vfsd's selector confinement, RESOLVE verdicts and object
 * table (the object connections' codec: pbx_peer_vfs_obj.c). Pure: no I/O.
 */
#include "peers/lib/pbx_peer_vfs.h"

#include "ipc/pbx_ipc.h"
#include "peers/lib/pbx_peer.h"

/* Judges one component [start, end) of sel. */
static pbx_peer_sel vfs_component(const uint8_t *sel, size_t start, size_t end)
{
    size_t n = end - start;
    if (n == 0U) {
        return PBX_PEER_SEL_EMPTY_COMPONENT;
    }
    if (n == 1U && sel[start] == '.') {
        return PBX_PEER_SEL_DOT;
    }
    if (n == 2U && sel[start] == '.' && sel[start + 1U] == '.') {
        return PBX_PEER_SEL_DOTDOT;
    }
    return PBX_PEER_SEL_OK;
}

pbx_peer_sel pbx_peer_vfs_selector_check(const uint8_t *sel, size_t len,
                                         char *out, size_t out_len)
{
    if (len == 0U) {
        return PBX_PEER_SEL_EMPTY;
    }
    if (sel[0] == '/') {
        return PBX_PEER_SEL_ABSOLUTE;
    }
    size_t start = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && sel[i] == '\0') {
            return PBX_PEER_SEL_NUL;
        }
        if (i == len || sel[i] == '/') {
            pbx_peer_sel c = vfs_component(sel, start, i);
            if (c != PBX_PEER_SEL_OK) {
                return c;
            }
            start = i + 1U;
        }
    }
    if (len >= out_len) {
        return PBX_PEER_SEL_TOO_LONG;
    }
    for (size_t i = 0; i < len; i++) {
        out[i] = (char)sel[i];
    }
    out[len] = '\0';
    return PBX_PEER_SEL_OK;
}

const char *pbx_peer_sel_text(pbx_peer_sel s)
{
    switch (s) {
    case PBX_PEER_SEL_OK:
        return "clean relative path";
    case PBX_PEER_SEL_EMPTY:
        return "empty selector";
    case PBX_PEER_SEL_ABSOLUTE:
        return "absolute path";
    case PBX_PEER_SEL_DOTDOT:
        return "'..' component";
    case PBX_PEER_SEL_DOT:
        return "'.' component";
    case PBX_PEER_SEL_EMPTY_COMPONENT:
        return "empty component";
    case PBX_PEER_SEL_NUL:
        return "NUL byte";
    case PBX_PEER_SEL_TOO_LONG:
        return "too long";
    default:
        return "unknown selector verdict";
    }
}

bool pbx_peer_vfs_class_allows(uint16_t operation, uint16_t object_class)
{
    bool data = object_class == PBX_IPC_CLASS_FILE ||
                object_class == PBX_IPC_CLASS_DEVICE ||
                object_class == PBX_IPC_CLASS_ENDPOINT;
    switch (operation) {
    case PBX_IPC_OPERATION_READ:
        return data || object_class == PBX_IPC_CLASS_DIRECTORY;
    case PBX_IPC_OPERATION_WRITE:
        return data;
    case PBX_IPC_OPERATION_EXECUTE:
    case PBX_IPC_OPERATION_CREATE:
        return object_class == PBX_IPC_CLASS_FILE;
    case PBX_IPC_OPERATION_LIST:
        return object_class == PBX_IPC_CLASS_DIRECTORY;
    case PBX_IPC_OPERATION_ENTRY_METADATA_READ:
    case PBX_IPC_OPERATION_ENTRY_TOUCH:
        return object_class == PBX_IPC_CLASS_DIRECTORY_ENTRY;
    default:
        return false;
    }
}

bool pbx_peer_vfs_follow_final(uint16_t object_class)
{
    return object_class != PBX_IPC_CLASS_DIRECTORY_ENTRY;
}

/* The class an object of file type ft has when asked as want_class. */
static uint16_t vfs_class_of(uint16_t want_class, pbx_peer_ftype ft)
{
    if (want_class == PBX_IPC_CLASS_DIRECTORY_ENTRY) {
        return ft == PBX_PEER_FT_OTHER ? 0U : PBX_IPC_CLASS_DIRECTORY_ENTRY;
    }
    switch (ft) {
    case PBX_PEER_FT_REGULAR:
        return PBX_IPC_CLASS_FILE;
    case PBX_PEER_FT_DIRECTORY:
        return PBX_IPC_CLASS_DIRECTORY;
    case PBX_PEER_FT_DEVICE:
        return PBX_IPC_CLASS_DEVICE;
    case PBX_PEER_FT_SOCKET:
        return PBX_IPC_CLASS_ENDPOINT;
    default:
        return 0U;
    }
}

pbx_peer_vfs_verdict pbx_peer_vfs_judge(uint16_t operation, uint16_t want_class,
                                        pbx_peer_sel sel,
                                        pbx_peer_lookup lookup,
                                        pbx_peer_ftype ftype)
{
    pbx_peer_vfs_verdict v = {PBX_IPC_RESOLVE_DENIED, 0U};
    if (sel != PBX_PEER_SEL_OK ||
        !pbx_peer_vfs_class_allows(operation, want_class)) {
        return v;
    }
    if (lookup == PBX_PEER_LOOKUP_MISSING) {
        v.result = PBX_IPC_RESOLVE_NOT_FOUND;
        v.object_class = want_class;
        return v;
    }
    if (lookup != PBX_PEER_LOOKUP_OK) {
        return v;
    }
    if (vfs_class_of(want_class, ftype) != want_class) {
        return v;
    }
    v.result = PBX_IPC_RESOLVE_FOUND;
    v.object_class = want_class;
    return v;
}

void pbx_peer_objtab_init(pbx_peer_objtab *t)
{
    pbx_peer_objtab_init_cap(t, PBX_PEER_VFS_OBJECTS_MAX);
}

void pbx_peer_objtab_init_cap(pbx_peer_objtab *t, size_t cap)
{
    PBX_ASSERT(cap >= 1U && cap <= PBX_PEER_VFS_OBJECTS_CAP);
    /* Only the rows in use are cleared: the rest of the static storage
     * stays untouched (and, in a fresh process, unmapped). */
    pbx_mem_set(t, 0, offsetof(pbx_peer_objtab, rows));
    pbx_mem_set(t->rows, 0, cap * sizeof(t->rows[0]));
    t->next_gen = 1U;
    t->cap = cap;
    uint32_t nb = 1U;
    while ((size_t)nb < cap) {
        nb <<= 1U;
    }
    t->mask = nb - 1U;
    for (size_t i = 0; i < cap; i++) {
        t->rows[i].provider = -1;
        t->next[i] = -1;
    }
    for (uint32_t b = 0; b < nb; b++) {
        t->head[b] = -1;
    }
}

/* Takes row out of its generation's chain (it is in one: gen nonzero). */
static void objtab_unlink(pbx_peer_objtab *t, size_t row)
{
    int32_t *link = &t->head[t->rows[row].gen & t->mask];
    for (size_t i = 0; i < t->cap && *link >= 0; i++) {
        if ((size_t)*link == row) {
            *link = t->next[row];
            t->next[row] = -1;
            return;
        }
        link = &t->next[*link];
    }
}

/* Puts row, just given its generation, at the head of that chain. */
static void objtab_link(pbx_peer_objtab *t, size_t row)
{
    uint32_t b = t->rows[row].gen & t->mask;
    t->next[row] = t->head[b];
    t->head[b] = (int32_t)row;
}

/* The state each ring holds rows of, by ring index. */
static const uint8_t objtab_ring_state[3] = {
    PBX_PEER_OBJ_FREE, PBX_PEER_OBJ_RETIRED, PBX_PEER_OBJ_HUNG};

/* Appends row to ring k unless it is there already (then its older entry
 * stands): a ring never holds more than cap entries. */
static void objtab_ring_push(pbx_peer_objtab *t, size_t k, size_t row)
{
    pbx_peer_obj_ring *q = &t->rings[k];
    if (q->in[row] || (size_t)q->count >= t->cap) {
        return;
    }
    q->at[((size_t)q->first + q->count) % t->cap] = (uint32_t)row;
    q->count++;
    q->in[row] = true;
}

/* Drops from each ring's front the rows no longer in its state (minted
 * since, or moved on), so a ring's oldest entry is a row it may hand out.
 * Each entry is dropped once: the cost is bounded by the entries pushed. */
static void objtab_settle(pbx_peer_objtab *t)
{
    for (size_t k = 0; k < 3U; k++) {
        pbx_peer_obj_ring *q = &t->rings[k];
        for (size_t n = 0; n < t->cap && q->count != 0U; n++) {
            uint32_t r = q->at[q->first];
            if (t->rows[r].state == objtab_ring_state[k]) {
                break;
            }
            q->in[r] = false;
            q->first = (uint32_t)(((size_t)q->first + 1U) % t->cap);
            q->count--;
        }
    }
}

/* The O(1) pick: the first never-minted row, else the oldest row of the
 * free, retired and hung-up rings, in that order, when it still holds its
 * ring's state (only a change behind the table's back makes it not). */
static bool objtab_quick(const pbx_peer_objtab *t, size_t *row)
{
    if (t->fresh < t->cap && t->rows[t->fresh].state == PBX_PEER_OBJ_FREE) {
        *row = t->fresh;
        return true;
    }
    for (size_t k = 0; k < 3U; k++) {
        const pbx_peer_obj_ring *q = &t->rings[k];
        if (q->count != 0U &&
            t->rows[q->at[q->first]].state == objtab_ring_state[k]) {
            *row = q->at[q->first];
            return true;
        }
    }
    return false;
}

uint32_t pbx_peer_objtab_reserve(const pbx_peer_objtab *t, size_t *row)
{
    if (objtab_quick(t, row)) {
        return 0U;
    }
    size_t retired = t->cap;
    size_t hung = t->cap;
    for (size_t i = 0; i < t->cap; i++) {
        uint8_t st = t->rows[i].state;
        if (st == PBX_PEER_OBJ_FREE) {
            *row = i;
            return 0U;
        }
        if (st == PBX_PEER_OBJ_RETIRED && retired == t->cap) {
            retired = i;
        }
        if (st == PBX_PEER_OBJ_HUNG && hung == t->cap) {
            hung = i;
        }
    }
    /* A hung-up row may still be named by a RETIRE powerboxd has not sent
     * yet; a retired one was acknowledged already, so it goes first. */
    size_t pick = retired != t->cap ? retired : hung;
    if (pick == t->cap) {
        return PBX_PEER_E_BUSY;
    }
    *row = pick;
    return 0U;
}

uint32_t pbx_peer_objtab_mint(pbx_peer_objtab *t, size_t row, uint64_t id,
                              uint64_t scope_id, uint16_t object_class,
                              int provider)
{
    PBX_ASSERT(row < t->cap);
    PBX_ASSERT(t->rows[row].state != PBX_PEER_OBJ_LIVE);
    pbx_peer_obj *o = &t->rows[row];
    if (o->gen != 0U) {
        objtab_unlink(t, row);
    }
    o->state = PBX_PEER_OBJ_LIVE;
    o->object_class = object_class;
    o->gen = t->next_gen;
    objtab_link(t, row);
    o->id = id;
    o->scope_id = scope_id;
    o->provider = provider;
    o->detached = 0U;
    if (row == t->fresh) {
        t->fresh++;
    }
    objtab_settle(t);
    /* Generations never repeat zero: wrap from UINT32_MAX to 1. */
    if (t->next_gen == UINT32_MAX) {
        t->next_gen = 1U;
        t->wrapped = true;
    } else {
        t->next_gen++;
    }
    return o->gen;
}

/* The first row of gen's chain holding gen (and id, when any_id is
 * false) in a non-free state, or -1. Every row holding gen is in that
 * chain (after a wrap of the generations two may be); the walk is bounded
 * by cap. */
static int32_t objtab_by_gen(const pbx_peer_objtab *t, uint32_t gen,
                             uint64_t id, bool any_id)
{
    int32_t r = t->head[gen & t->mask];
    for (size_t i = 0; i < t->cap && r >= 0; i++) {
        const pbx_peer_obj *o = &t->rows[r];
        if (o->gen == gen && o->state != PBX_PEER_OBJ_FREE &&
            (any_id || o->id == id)) {
            return r;
        }
        r = t->next[r];
    }
    return -1;
}

bool pbx_peer_objtab_find(const pbx_peer_objtab *t, uint64_t id, uint32_t gen,
                          size_t *row)
{
    int32_t r = gen == 0U ? -1 : objtab_by_gen(t, gen, id, false);
    if (r < 0) {
        return false;
    }
    *row = (size_t)r;
    return true;
}

/* Finds the row with exactly id and gen in any non-free state. */
static bool objtab_find(const pbx_peer_objtab *t, uint64_t id, uint32_t gen,
                        size_t *row)
{
    return pbx_peer_objtab_find(t, id, gen, row);
}

uint32_t pbx_peer_objtab_detach_check(const pbx_peer_objtab *t, uint64_t id,
                                      uint32_t gen, uint64_t observed_id,
                                      size_t *row)
{
    size_t i = 0;
    if (gen == 0U || !objtab_find(t, id, gen, &i) ||
        t->rows[i].state != PBX_PEER_OBJ_LIVE) {
        return PBX_PEER_E_UNKNOWN;
    }
    if (observed_id != id) {
        return PBX_PEER_E_MISMATCH;
    }
    *row = i;
    return 0U;
}

/* Reports whether any non-free row holds generation gen. */
static bool objtab_gen_held(const pbx_peer_objtab *t, uint32_t gen)
{
    return objtab_by_gen(t, gen, 0U, true) >= 0;
}

uint32_t pbx_peer_objtab_retire(pbx_peer_objtab *t, uint64_t id, uint32_t gen,
                                uint64_t scope_id, uint16_t object_class,
                                int *provider)
{
    size_t i = 0;
    if (gen == 0U) {
        return PBX_PEER_E_UNKNOWN;
    }
    if (!objtab_find(t, id, gen, &i)) {
        if (objtab_gen_held(t, gen)) {
            return PBX_PEER_E_MISMATCH;
        }
        if (!t->wrapped && gen >= t->next_gen) {
            return PBX_PEER_E_UNKNOWN;
        }
        /* Minted once, no longer in the table: its row was reused, which
         * only happens to a retired or hung-up row (or one whose FOUND was
         * never delivered), so the object is dead and a repeated RETIRE is
         * acknowledged with nothing to cut. */
        *provider = -1;
        return 0U;
    }
    pbx_peer_obj *o = &t->rows[i];
    if (o->scope_id != scope_id || o->object_class != object_class) {
        return PBX_PEER_E_MISMATCH;
    }
    if (o->state != PBX_PEER_OBJ_LIVE) {
        /* Nothing is left to cut: a repeat, or every copy hung up. */
        *provider = -1;
        o->state = PBX_PEER_OBJ_RETIRED;
        objtab_ring_push(t, 1U, i);
        objtab_settle(t);
        return 0U;
    }
    *provider = o->provider;
    o->provider = -1;
    o->state = PBX_PEER_OBJ_RETIRED;
    objtab_ring_push(t, 1U, i);
    objtab_settle(t);
    return 0U;
}

uint32_t pbx_peer_objtab_hangup(pbx_peer_objtab *t, size_t row, int *provider)
{
    if (row >= t->cap || t->rows[row].state != PBX_PEER_OBJ_LIVE) {
        return PBX_PEER_E_UNKNOWN;
    }
    pbx_peer_obj *o = &t->rows[row];
    *provider = o->provider;
    o->provider = -1;
    o->state = PBX_PEER_OBJ_HUNG;
    objtab_ring_push(t, 2U, row);
    objtab_settle(t);
    return 0U;
}

void pbx_peer_objtab_unmint(pbx_peer_objtab *t, size_t row)
{
    PBX_ASSERT(row < t->cap);
    t->rows[row].state = PBX_PEER_OBJ_FREE;
    t->rows[row].provider = -1;
    objtab_ring_push(t, 0U, row);
    objtab_settle(t);
}

size_t pbx_peer_objtab_live(const pbx_peer_objtab *t)
{
    size_t n = 0;
    for (size_t i = 0; i < t->cap; i++) {
        n += t->rows[i].state == PBX_PEER_OBJ_LIVE ? 1U : 0U;
    }
    return n;
}
