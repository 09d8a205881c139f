/*
 * vfsd.h: the reference vfsd's private state, shared by its files
 * (vfsd.c: the command line, the poll loop and the attach channel;
 * vfsd_resolve.c: lookups and RESOLVE; vfsd_objects.c: serving and
 * cutting minted objects; vfsd_fuse.c and vfsd_fuse_server.c: OPEN's
 * revocable descriptors; vfsd_route.c: routes, scope connections,
 * DETACH and RETIRE). Usage is documented at the top of vfsd.c and in
 * docs/HOST.md.
 */
#ifndef VFSD_H
#define VFSD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ipc/pbx_ipc.h"
#include "peers/common/pbx_peer_io.h"
#include "peers/lib/pbx_peer.h"
#include "peers/lib/pbx_peer_vfs.h"
#include "peers/vfsd/vfsd_fuse.h"

/* Scope listeners (--scope, --lie-scope): vfsd listens for nothing else. */
#define VFSD_LISTEN_MAX 9U
/* Scope and route connections: every scope handed out stays one until
 * the last copy of it is closed, so 64 concurrent clients with a scope
 * each need more than 64 (run.py many-clients). */
#define VFSD_CONNS_MAX 256U
/* The scopes one process (SO_PEERCRED pid of its connection to a scope
 * socket) may hold at once by default (--scopes-per-pid): well below
 * VFSD_CONNS_MAX, so that no one process fills the table others need. */
#define VFSD_SCOPES_PER_PID 32U
#define VFSD_COMPONENTS_MAX 256U
/* The longest name a CREATE object's file may have, NUL included. */
#define VFSD_CREATE_NAME_MAX 256U
/* Calls served per object per poll round: a holder that floods its object
 * delays only itself, the rest waits for the next round. */
#define VFSD_OBJ_CALLS_PER_ROUND 8U
/* Calls still queued on an object at RETIRE that get an error reply. */
#define VFSD_OBJ_DRAIN_MAX 64U
/* Rounds of refusals or drops logged per object before it goes quiet. */
#define VFSD_OBJ_LOGS_MAX 8U
/* Directory entries one LIST call may step over (its cookie included). */
#define VFSD_LIST_SCAN_MAX (1U << 20)
/* Short transfers one READ or WRITE call retries before it answers. */
#define VFSD_IO_TRIES 8U
/* The local part of an object id (the provider socket's inode); the top
 * 16 bits carry the incarnation. */
#define VFSD_LOCAL_ID_MAX ((UINT64_C(1) << 48) - 1U)

/* Descriptors the object table's size is added to at startup (stdio,
 * root, listeners, attach and FUSE channels, a margin), and the most one
 * live object holds (its provider end and its file, or a CREATE's
 * directory). */
#define VFSD_FDS_BASE       64U
#define VFSD_FDS_PER_OBJECT 2U

/* What a listening socket or connection serves. */
enum { VFSD_KIND_ROUTE = 1, VFSD_KIND_SCOPE = 2 };

/* One listening socket or connection. */
typedef struct vfsd_conn {
    int fd;
    int kind;
    int dirfd;         /* the scope's subtree (scopes only; shared) */
    uint64_t scope_id; /* scope connections: inode of the end handed out */
    bool lie;          /* fault switch (--lie-scope): misname the scope */
    pid_t pid;         /* routes: the one process served RESOLVE on it; scopes:
                        * the process it was handed to (SO_PEERCRED) */
    uint64_t serial;   /* routes: which route this is (never reused) */
} vfsd_conn;

/* The whole daemon state (static storage). */
typedef struct vfsd {
    int root_fd;
    vfsd_conn listens[VFSD_LISTEN_MAX];
    size_t nlistens;
    vfsd_conn conns[VFSD_CONNS_MAX];
    size_t nconns;
    /* --objects: the object table's rows (PBX_PEER_VFS_OBJECTS_MAX by
     * default), fixed at startup (objs.cap from then on). */
    size_t objects;
    pbx_peer_objtab objs;
    /* What each row's object names, observed when vfsd opened it. */
    pbx_peer_vfs_stat stats[PBX_PEER_VFS_OBJECTS_CAP];
    /* Rows whose holders shut their writing side: no call can come any
     * more, so the provider end is watched for hang-up only. */
    bool mute[PBX_PEER_VFS_OBJECTS_CAP];
    /* Rounds whose refusals or drops were logged, per row: a holder that
     * floods its object cannot flood the log beyond VFSD_OBJ_LOGS_MAX. */
    uint32_t logs[PBX_PEER_VFS_OBJECTS_CAP];
    /* What each row's object was granted, the file opened for it (-1:
     * none, STAT only) and the route it was minted for. */
    pbx_peer_vfs_grant grant[PBX_PEER_VFS_OBJECTS_CAP];
    int data[PBX_PEER_VFS_OBJECTS_CAP];
    uint64_t owner[PBX_PEER_VFS_OBJECTS_CAP];
    /* A CREATE object's file to be (vfsd_create.c): its directory (O_PATH,
     * -1: none) and its name, until the first call that needs data. */
    int create_dir[PBX_PEER_VFS_OBJECTS_CAP];
    char create_name[PBX_PEER_VFS_OBJECTS_CAP][VFSD_CREATE_NAME_MAX];
    uint64_t routes_made;
    /* This vfsd's incarnation: --incarnation's, else random; nonzero,
     * chosen at start, carried
     * in the top 16 bits of every object id it mints, so a RETIRE or
     * DETACH of another incarnation's object is known absent, exactly. */
    uint16_t incarnation;
    /* --route-pid: the process at the far end of a --route-fd pair the
     * supervisor had this vfsd make (a restart), or 0: SO_PEERCRED. */
    pid_t route_pid;
    /* --attach-fd: the supervisor's attach channel (-1: none, or closed
     * at its end); its 'P' makes a route pair for a named pid. */
    int attach;
    /* --scopes-per-pid: the most scopes one process may hold at once. */
    uint32_t scopes_per_pid;
    /* The revocable descriptors' FUSE server (vfsd_fuse.c). */
    vfsd_fuse fuse;
    pbx_peer_msg msg;
    uint8_t out[PBX_IPC_FRAME_BYTES_MAX];
    uint8_t obj_in[PBX_PEER_VFS_CALL_BYTES_MAX + 1U];
    uint8_t obj_out[PBX_PEER_VFS_REPLY_BYTES_MAX];
} vfsd;

/* The table entry of the object a FOUND answer mints. */
typedef struct vfsd_mint {
    pbx_peer_vfs_stat named; /* what the object names */
    pbx_peer_vfs_grant grant;
    int data;       /* the file opened for the grant, or -1 (owned) */
    uint64_t owner; /* the route the RESOLVE came from */
    int create_dir; /* CREATE: the directory (O_PATH, owned), else -1 */
    char create_name[VFSD_CREATE_NAME_MAX]; /* CREATE: the file's name */
} vfsd_mint;

/* The daemon's one state (vfsd.c). */
extern vfsd g_vfsd;

/* vfsd_resolve.c: replies on the current message, closing the files of a
 * row no longer live, and
 * RESOLVE through scope connection c whose message came from pid (its
 * answer goes on pid's route, never on c). */
void vfsd_send(int fd, size_t n, int cap);
void vfsd_fail(int fd, uint32_t status, const char *what);
void vfsd_row_files(size_t row);
void vfsd_resolve(vfsd_conn *c, pid_t pid);
/* The descriptor vfsd answers a message from pid on scope c on: pid's
 * route when pid is a route's process, else c's own. */
int vfsd_scope_reply_fd(const vfsd_conn *c, pid_t pid);

/* vfsd_create.c: RESOLVE of a CREATE (the file must be missing and its
 * directory present beneath the scope: fills *mt, true for FOUND; the
 * verdict in *v either way), and the file's creation on the first call of
 * row that needs its data (0, or the call's refusal status), and closing
 * the directory of a row no longer live. */
bool vfsd_create_resolve(int dirfd, char *path, vfsd_mint *mt,
                         pbx_peer_vfs_verdict *v);
uint32_t vfsd_create_now(size_t row);
void vfsd_create_release(size_t row);

/* vfsd_objects.c: the wire id of a local id, cutting a retired object's
 * provider end, serving one round of calls on a live row (true when its
 * queue was left empty), and a live row whose holders all hung up. */
unsigned long long vfsd_wire(uint64_t local);
void vfsd_obj_cut(int prov, uint64_t id, uint32_t gen);
bool vfsd_obj_serve(size_t row);
void vfsd_hangup(size_t row);

/* vfsd_route.c: serving one message on a connection (false: close it),
 * adding a connection (a route's one process is named, else SO_PEERCRED
 * of fd names it), dropping one, handing out one scope. */
bool vfsd_serve(vfsd_conn *c);
vfsd_conn *vfsd_add_conn(int fd, int kind, int dirfd, uint64_t scope_id,
                         pid_t named);
void vfsd_drop_conn(size_t i);
bool vfsd_hand_scope(int conn, int dirfd, bool lie);

/* vfsd.c: serves what waits on the attach channel (its 'P' messages);
 * at the channel's end it is closed and vfsd serves on. */
void vfsd_attach_input(void);

/* vfsd_loop.c: the event loop. One epoll set holds every descriptor vfsd
 * waits on, each tagged with its kind, table index and (objects) its
 * generation, so an event costs the same whatever the live objects. */
/* Makes the set and adds the listeners, the connections so far, the
 * attach channel and the FUSE channel; -1 with errno when it cannot. */
int vfsd_loop_start(void);
/* Waits once and serves what is ready; 0, or -1 with errno. */
int vfsd_loop_pass(void);
/* Adds connection i (just appended to g_vfsd.conns); a no-op before
 * vfsd_loop_start, which adds every connection made so far. */
void vfsd_loop_watch_conn(size_t i);
/* Re-tags connection i, moved to index i by a removal. */
void vfsd_loop_moved_conn(size_t i);
/* Adds live row's provider end, just minted (watched for calls). */
void vfsd_loop_watch_obj(size_t row);
/* Removes fd from the set; called before fd (a connection or provider
 * end) is closed. Events already fetched for it are not served. */
void vfsd_loop_unwatch(int fd);

#endif /* VFSD_H */
