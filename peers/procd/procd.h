/*
 * procd.h: what the reference procd's files share: its limits, the reader
 * table of the --query socket and the whole daemon state (procd.c: the
 * routes, installs, handles, stage connections and main; procd_query.c:
 * the query socket).
 */
#ifndef PBX_PEERS_PROCD_H
#define PBX_PEERS_PROCD_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "peers/common/pbx_peer_io.h"
#include "peers/common/pbx_peer_origin.h"
#include "peers/lib/pbx_peer.h"
#include "peers/lib/pbx_peer_proc.h"

#define PROCD_ROUTES_MAX 8U
/* Query connections served at once (more wait in the listen backlog). */
#define PROCD_READERS_MAX 4U
/* Query readers one process (SO_PEERCRED pid) may hold at once, unless
 * --max-per-pid says otherwise: below PROCD_READERS_MAX, so no single
 * process takes the table others need. */
#define PROCD_READERS_PER_PID 2U
/* How long a query connection may take to read its rows. */
#define PROCD_READER_MS 2000U
/* How long a hung-up handle waits for its route to hang up too before it
 * counts as a revocation: a dying powerboxd's descriptors are released in
 * no fixed order, so its handles may end a moment before its route. */
#define PROCD_HANDLE_GRACE_MS 250U
/* One row: "process P gen G slot S grant I.G object O\n". */
#define PROCD_ROW_BYTES 128U
/* Stage connections open at once (registered or not yet). */
#define PROCD_STAGES_MAX 16U
/* Descriptors the install table's size is added to at startup (stdio,
 * routes, stages, readers, the epoll set, a margin), and those one
 * install holds (the installed object and procd's handle end). */
#define PROCD_FDS_BASE        64U
#define PROCD_FDS_PER_INSTALL 2U

/* One query connection: the rows as they were when it connected, and how
 * much of them it has taken. */
typedef struct procd_reader {
    int fd;    /* -1: free */
    pid_t pid; /* the reader's SO_PEERCRED pid (0: free) */
    size_t off;
    size_t len;
    uint64_t deadline_ms;
    char text[PBX_PEER_PROC_INSTALLS_CAP * PROCD_ROW_BYTES];
} procd_reader;

/* The whole daemon state (static storage). */
typedef struct procd {
    int routes[PROCD_ROUTES_MAX];
    size_t nroutes;
    int query_fd;                 /* the --query listener, or -1 */
    int stage_fd;                 /* the --stage-sock listener, or -1 */
    int attach_fd;                /* the --attach-fd channel, or -1 */
    int stages[PROCD_STAGES_MAX]; /* stage connections, -1: free */
    uint32_t deliver_seq;
    procd_reader readers[PROCD_READERS_MAX];
    pbx_peer_admit admit; /* who the query socket answers */
    pbx_peer_proctab tab;
    /* Per install row: when its handle hung up while its route had not,
     * the time (monotonic ms) from which that counts as a revocation;
     * 0 while its handle is open. */
    uint64_t hung_ms[PBX_PEER_PROC_INSTALLS_CAP];
    /* The rows whose hung_ms is set, in hung[0..nhung) (procd_hung.c),
     * each knowing its place in hung_pos: a sweep looks at those rows
     * only, never the table. */
    size_t nhung;
    uint16_t hung[PBX_PEER_PROC_INSTALLS_CAP];
    uint16_t hung_pos[PBX_PEER_PROC_INSTALLS_CAP];
    /* --installs: the install table's rows (PBX_PEER_PROC_INSTALLS_MAX by
     * default), fixed at startup (tab.cap from then on). */
    size_t installs;
    pbx_peer_msg msg;
    uint8_t out[PBX_IPC_FRAME_BYTES_MAX];
} procd;

/* The daemon's one state (static storage), defined in procd.c. */
extern procd g_procd;

/* procd.c */

/* The monotonic clock in milliseconds (query deadlines, handle grace). */
uint64_t procd_mono_ms(void);

/* procd_hung.c */

/* Marks live row hung up until until_ms (nonzero, monotonic ms): it joins
 * the hung list (at once, O(1)); a row hung already gets the new time. */
void procd_hang(size_t row, uint64_t until_ms);
/* Clears row's hang-up time and takes it off the hung list (O(1)); a row
 * not hung up is left as it is. */
void procd_unhang(size_t row);
/* Recomputes the install table's indexes and the hung list by walking
 * (a test aid, run after each round under PBX_PROCD_CHECK_INDEX);
 * returns what drifted, NULL when nothing did. */
const char *procd_index_check(void);

/* procd_query.c */

/* Fills q[0..PROCD_READERS_MAX] with the query listener (only while a
 * reader entry is free) and the readers; returns whether one is busy. */
bool procd_poll_readers(struct pollfd *q);
/* Serves the readers (dropping those past their deadline) and the query
 * listener after poll. */
void procd_serve_readers(const struct pollfd *q);

#endif
