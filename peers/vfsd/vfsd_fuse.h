/*
 * vfsd_fuse.h: vfsd's revocable descriptors (docs/HOST.md, "Revocable
 * descriptors"): OPEN on an object hands out a regular-file descriptor on
 * vfsd's private FUSE mount, served by a child process of vfsd
 * (vfsd_fuse_server.c) over a channel (vfsd_fuse.c is vfsd's side).
 */
#ifndef VFSD_FUSE_H
#define VFSD_FUSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "peers/lib/pbx_peer_vfs.h"

/* The hex digits of an entry's name: 128 random bits. */
#define VFSD_FUSE_NAME_BYTES 32U
/* The default bound of open descriptors (--fuse-open-max). */
#define VFSD_FUSE_OPEN_MAX 256U
/* The most --fuse-open-max may be. */
#define VFSD_FUSE_OPEN_CAP 65536U
/* How long vfsd waits at start for its FUSE server to report. */
#define VFSD_FUSE_START_MS 10000

/* One channel message. vfsd sends 'A' (add entry node in table slot with
 * mode and name, the object's file attached) and 'R' (revoke node: a
 * hint to free it early; the shared table below is what the server
 * checks). The server sends 'K' once mounted (its /dev/fuse descriptor
 * attached) or 'F' when the mount failed, then 'O' with node's open
 * descriptor attached (the answer to 'A', opened by the server's helper
 * thread), 'E' when that open failed, and 'C' with a node whose last
 * descriptor was closed. Every send of vfsd's is MSG_DONTWAIT: vfsd never
 * waits for its server. */
typedef struct vfsd_fuse_msg {
    char kind;
    uint32_t mode;
    uint32_t slot;
    uint64_t node;
    char name[VFSD_FUSE_NAME_BYTES];
} vfsd_fuse_msg;

/* One open descriptor vfsd handed out or is opening (pending: the OPEN
 * call waits for the server's 'O' or 'E', and is answered then). */
typedef struct vfsd_fuse_node {
    bool used;
    bool pending;
    uint64_t id;
    uint32_t gen;
    uint64_t node;
    size_t row;             /* the object's row (pending only) */
    pbx_peer_vfs_call call; /* the OPEN call to answer (pending only) */
} vfsd_fuse_node;

/* vfsd's side of its FUSE server (part of the vfsd state). */
typedef struct vfsd_fuse {
    const char *dir;       /* --fuse-dir, or NULL: a fresh one under /tmp */
    char made[64];         /* the mount point vfsd made (mkdtemp) */
    size_t max;            /* --fuse-open-max */
    bool up;               /* the server reported it mounted */
    bool told;             /* why it is not up was logged */
    int chan;              /* the channel to the server, or -1 */
    int dev;               /* the server's /dev/fuse (invalidations), or -1 */
    const char *mnt;       /* the mount point in use */
    uint64_t next_node;    /* the next node number (never reused) */
    vfsd_fuse_node *nodes; /* max rows */
    size_t npending;       /* rows pending */
    /* The revocation table, shared with the server (MAP_SHARED, made
     * before the fork): slot i holds the node row i serves, 0 once it is
     * revoked or closed. vfsd stores it without waiting on anyone, and the
     * server checks it before it serves every request: a revocation is in
     * force from the store on, whatever the channel's state. */
    uint64_t *live;
} vfsd_fuse;

/* Sends message kind (with node, and for 'A' mode and name from m) on
 * chan, with descriptor fd attached when fd >= 0. Returns 0 or -1. */
int vfsd_fuse_send_msg(int chan, const vfsd_fuse_msg *m, int fd);
/* vfsd_fuse_send_msg with sendmsg flags (MSG_DONTWAIT: never wait). */
int vfsd_fuse_send_msg_flags(int chan, const vfsd_fuse_msg *m, int fd,
                             int flags);
/* vfsd_fuse_send_msg of a message of kind and node alone, with flags. */
int vfsd_fuse_send(int chan, char kind, uint64_t node, int fd, int flags);
/* Receives one message from chan into *m (flags for recvmsg); a
 * descriptor that came with it is stored in *fd (else -1, owned by the
 * caller). Returns the bytes received, 0 at the end, -1 on a failure. */
ssize_t vfsd_fuse_recv(int chan, vfsd_fuse_msg *m, int *fd, int flags);

/* vfsd_fuse_server.c: forks the server (the child keeps chan_child and
 * closes everything else of vfsd's); returns its pid, or -1. */
pid_t vfsd_fuse_fork(int chan_child, int chan_parent, const char *mnt,
                     bool own_dir, size_t rows, uint64_t *live);

/* vfsd_fuse.c: starts the server at vfsd's start (logs why, once, when
 * it cannot); OPEN of live row's object for call (judged, mode in
 * call->mode): a status to answer now, or 0 with *queued set when the
 * server was asked and vfsd_fuse_input answers the call later (on the
 * object's provider end, with the descriptor); revocation of every
 * descriptor of object id.gen (RETIRE, the route's loss). */
void vfsd_fuse_start(void);
uint32_t vfsd_fuse_open(size_t row, const pbx_peer_vfs_call *call,
                        bool *queued);
void vfsd_fuse_revoke(uint64_t id, uint32_t gen);
/* Whether row's object has an OPEN waiting for the server: its later
 * calls wait too (poll leaves it alone), so replies keep their order. */
bool vfsd_fuse_pending(size_t row);
/* vfsd_fuse.c: what the server sent ('O' or 'E': a queued OPEN is
 * answered; 'C': a descriptor was closed, its row is freed), or its end:
 * queued OPENs are answered "no revocable descriptors", and so is every
 * later OPEN. Never waits. */
void vfsd_fuse_input(void);

#endif /* VFSD_FUSE_H */
