/*
 * pbx_peer_proc.h: procd's pure decisions. The staged processes (id and
 * generation) that may receive grants, and the install table: which grant
 * occupies which exact slot of which staged process generation, and which
 * manage-only revocation handle ends it. A staged process is either
 * simulated (--stage PID:GEN, no connection) or registered: a real
 * process that staged itself over procd's stage socket, named by the
 * kernel (SO_PEERCRED), with a fresh generation procd chose and the
 * connection its installed objects are delivered on.
 */
#ifndef PBX_PEER_PROC_H
#define PBX_PEER_PROC_H

#include "ipc/pbx_ipc.h"
#include "peers/lib/pbx_peer_proc_index.h"

/** PBX_PEER_PROC_STAGED_MAX bounds the staged processes: launchd's
 * (LAUNCHD_STAGE_MAX), so every job a stack binds can be installed into. */
#define PBX_PEER_PROC_STAGED_MAX 64U
/** PBX_PEER_PROC_INSTALLS_MAX is the install table's default capacity
 * (what pbx_peer_proctab_init gives; procd's --installs chooses another). */
#define PBX_PEER_PROC_INSTALLS_MAX 64U
/** PBX_PEER_PROC_INSTALLS_CAP is the most rows an install table can have:
 * its static storage, so no table grows after startup. */
#define PBX_PEER_PROC_INSTALLS_CAP 4096U
/** PBX_PEER_PROC_SLOT_LIMIT is one past the highest installable slot. */
#define PBX_PEER_PROC_SLOT_LIMIT 1024U

/** pbx_peer_install_row is one installed grant; plain data. */
typedef struct pbx_peer_install_row {
    /** live is true while the grant is installed. */
    bool live;
    /** target is the staged process generation and its exact slot. */
    pbx_ipc_target target;
    /** grant is powerboxd's grant identity. */
    pbx_ipc_id grant;
    /** operation, object_class, lifetime are the INSTALL discriminants. */
    uint16_t operation;
    /** object_class is the installed object's class. */
    uint16_t object_class;
    /** lifetime is the grant's lifetime. */
    uint8_t lifetime;
    /** object is the I/O main's handle of the installed object (an fd). */
    int object;
    /** handle is procd's end of the revocation handle (an fd). */
    int handle;
    /** route is the I/O main's handle of the route the INSTALL came on
     * (-1: none recorded). */
    int route;
} pbx_peer_install_row;

/** pbx_peer_proctab is procd's caller-allocated state. */
typedef struct pbx_peer_proctab {
    /** staged_count is the number of used entries in staged. */
    size_t staged_count;
    /** staged are the staged process generations (slot field unused). */
    pbx_ipc_target staged[PBX_PEER_PROC_STAGED_MAX];
    /** conns are the staged processes' stage connections (an fd, -1 for
     * a simulated one), index for index with staged. */
    int conns[PBX_PEER_PROC_STAGED_MAX];
    /** next_gen is the generation the next registration gets (nonzero,
     * above every simulated generation staged so far). */
    uint32_t next_gen;
    /** cap is the install rows in use, 1..PBX_PEER_PROC_INSTALLS_CAP,
     * fixed at init: rows[cap..] are never touched. */
    size_t cap;
    /** rows are the install table entries (the first cap of them). */
    pbx_peer_install_row rows[PBX_PEER_PROC_INSTALLS_CAP];
    /** ix indexes the rows (pbx_peer_proc_index.c), changed only with
     * them, so no event walks the table. */
    pbx_peer_procix ix;
} pbx_peer_proctab;

/** pbx_peer_proctab_init empties t (old contents ignored) with the
 * default capacity, PBX_PEER_PROC_INSTALLS_MAX installs. */
void pbx_peer_proctab_init(pbx_peer_proctab *t);

/** pbx_peer_proctab_init_cap empties t with room for cap live installs;
 * cap must be 1..PBX_PEER_PROC_INSTALLS_CAP (the caller checks an
 * option's value before). Touches only the header and the first cap
 * rows. */
void pbx_peer_proctab_init_cap(pbx_peer_proctab *t, size_t cap);

/**
 * pbx_peer_proctab_stage adds the staged process (process_id, gen); gen
 * must be nonzero. A process id already staged gets its generation
 * replaced only when it has no live install. Returns 0, PBX_PEER_E_BUSY
 * (table full), PBX_PEER_E_CONFLICT or PBX_PEER_E_MISMATCH (gen 0).
 */
uint32_t pbx_peer_proctab_stage(pbx_peer_proctab *t, uint64_t process_id,
                                uint32_t gen);

/**
 * pbx_peer_proctab_register stages the real process the kernel named
 * cred_pid (the stage connection's SO_PEERCRED pid) on connection conn
 * (an fd, kept by the table until pbx_peer_proctab_unstage) with a fresh
 * generation, returned in *gen. claimed is the pid the STAGE names: it
 * must be cred_pid (PBX_PEER_E_NOT_YOURS: only process P stages P) and
 * nonzero (PBX_PEER_E_MISMATCH). A pid staged already is restaged with
 * the new generation when it has no live install and no connection
 * (PBX_PEER_E_CONFLICT otherwise). Returns 0 or PBX_PEER_E_BUSY (full).
 */
uint32_t pbx_peer_proctab_register(pbx_peer_proctab *t, uint64_t claimed,
                                   uint64_t cred_pid, int conn, uint32_t *gen);

/**
 * pbx_peer_proctab_unstage ends the registered stage whose connection is
 * conn: the process is no longer staged (a later INSTALL for it is
 * UNKNOWN); its live installs stay until revoked. Returns true and its
 * pid in *pid when conn was a stage connection.
 */
bool pbx_peer_proctab_unstage(pbx_peer_proctab *t, int conn, uint64_t *pid);

/**
 * pbx_peer_proctab_conn returns the stage connection of the process
 * target names (its generation is not compared here), -1 when it is
 * simulated or not staged.
 */
int pbx_peer_proctab_conn(const pbx_peer_proctab *t,
                          const pbx_ipc_target *target);

/**
 * pbx_peer_proctab_install_check decides an INSTALL without changing t:
 * the target process must be staged with exactly that generation
 * (PBX_PEER_E_UNKNOWN / PBX_PEER_E_MISMATCH), the slot below the limit and
 * free in that generation (PBX_PEER_E_SLOT), the grant not installed
 * anywhere (PBX_PEER_E_CONFLICT), and a row free (PBX_PEER_E_BUSY).
 * When both a grant and a slot conflict, CONFLICT is returned. Returns 0
 * and the row to use in *row. Costs the same whatever the live rows
 * (the indexes, never a walk).
 */
uint32_t pbx_peer_proctab_install_check(const pbx_peer_proctab *t,
                                        const pbx_ipc_install *rq, size_t *row);

/**
 * pbx_peer_proctab_install_apply records the checked install in row with
 * the object and handle descriptors, and no route (-1). Cannot fail.
 */
void pbx_peer_proctab_install_apply(pbx_peer_proctab *t, size_t row,
                                    const pbx_ipc_install *rq, int object,
                                    int handle);

/**
 * pbx_peer_proctab_install_apply_on is pbx_peer_proctab_install_apply
 * that also records route, the I/O main's handle of the route the INSTALL
 * came on, so that the install can be ended when that route closes
 * (pbx_peer_proctab_by_route). Cannot fail.
 */
void pbx_peer_proctab_install_apply_on(pbx_peer_proctab *t, size_t row,
                                       const pbx_ipc_install *rq, int object,
                                       int handle, int route);

/**
 * pbx_peer_proctab_by_route finds a live row whose INSTALL came on route
 * (never one recorded without a route, -1); returns true and its index
 * in *row. A caller ending every install of a closed route drops each row
 * found and asks again, at most t->cap times.
 */
bool pbx_peer_proctab_by_route(const pbx_peer_proctab *t, int route,
                               size_t *row);

/**
 * pbx_peer_proctab_by_handle finds the live row whose handle is handle;
 * returns true and its index in *row.
 */
bool pbx_peer_proctab_by_handle(const pbx_peer_proctab *t, int handle,
                                size_t *row);

/**
 * pbx_peer_proctab_revoke_check judges a REVOKE that arrived through row's
 * handle: grant, process id, generation and installed slot must all match
 * exactly. Returns 0 or PBX_PEER_E_MISMATCH.
 */
uint32_t pbx_peer_proctab_revoke_check(const pbx_peer_proctab *t, size_t row,
                                       const pbx_ipc_revoke *rq);

/**
 * pbx_peer_proctab_drop ends row: stores its object and handle descriptors
 * in *object and *handle (the caller closes both) and frees it.
 */
void pbx_peer_proctab_drop(pbx_peer_proctab *t, size_t row, int *object,
                           int *handle);

/** pbx_peer_proctab_live counts the installed grants (O(1)). */
size_t pbx_peer_proctab_live(const pbx_peer_proctab *t);

/*
 * The indexes (pbx_peer_proc_index.c). pbx_peer_proc.c keeps them in step
 * with the rows; callers only read them.
 */

/** pbx_peer_procix_init empties t->ix for t->cap rows, all free (row 0
 * taken first); touches only the parts those rows use. */
void pbx_peer_procix_init(pbx_peer_proctab *t);

/** pbx_peer_procix_free_top returns the next free row, t->cap when none. */
size_t pbx_peer_procix_free_top(const pbx_peer_proctab *t);

/** pbx_peer_procix_grant returns the live row holding grant g, t->cap
 * when none. */
size_t pbx_peer_procix_grant(const pbx_peer_proctab *t, const pbx_ipc_id *g);

/** pbx_peer_procix_target returns the live row installed in slot of
 * process_id (any generation), t->cap when none. */
size_t pbx_peer_procix_target(const pbx_peer_proctab *t, uint64_t process_id,
                              uint32_t slot);

/** pbx_peer_procix_pid_busy reports whether process_id has a live row. */
bool pbx_peer_procix_pid_busy(const pbx_peer_proctab *t, uint64_t process_id);

/** pbx_peer_procix_add indexes row, just made live with its keys set; it
 * must be free and its grant and target unindexed (install_check said
 * so). Cannot fail. */
void pbx_peer_procix_add(pbx_peer_proctab *t, size_t row);

/** pbx_peer_procix_remove unindexes live row (its keys still set) and
 * makes it the next free row. Cannot fail. */
void pbx_peer_procix_remove(pbx_peer_proctab *t, size_t row);

/** pbx_peer_procix_check recomputes every index by walking the rows and
 * returns what differs (a static string), NULL when all agree. A test
 * aid: O(rows + buckets), never on procd's own path unless a test sets
 * PBX_PROCD_CHECK_INDEX. */
const char *pbx_peer_procix_check(const pbx_peer_proctab *t);

#endif /* PBX_PEER_PROC_H */
