/*
 * ttyd.h: what the reference ttyd's files share: its limits, the reader
 * table of the --query socket and the whole daemon state (ttyd.c: the
 * routes, the terminal and main; ttyd_query.c: the query socket).
 */
#ifndef PBX_PEERS_TTYD_H
#define PBX_PEERS_TTYD_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <termios.h>

#include "peers/common/pbx_peer_io.h"
#include "peers/common/pbx_peer_origin.h"
#include "peers/lib/pbx_peer.h"
#include "peers/lib/pbx_peer_tty.h"
#include "peers/lib/pbx_peer_tty_keys.h"

#define TTYD_ROUTES_MAX 8U
/* How long a terminal that takes no output (flow control) may hold a
 * write in all, and the step of that wait. */
#define TTYD_WRITE_WAIT_MS 1000
#define TTYD_WRITE_STEP_MS 50
/* Query readers served at once (more wait in the listen backlog), and how
 * long one may take to read every row before it is dropped. */
#define TTYD_READERS_MAX 8U
#define TTYD_READER_MS   2000U
/* Query readers one process (SO_PEERCRED pid) may hold at once, unless
 * --max-per-pid says otherwise: below TTYD_READERS_MAX, so no single
 * process takes the table others need. */
#define TTYD_READERS_PER_PID 2U
/* Rows formatted for one reader per poll round, so that a long list never
 * holds up the routes. */
#define TTYD_READER_ROWS 64U

/* One query connection being served: the next row slot to list and the
 * part of the current row not yet written. */
typedef struct ttyd_reader {
    int fd;    /* -1: free */
    pid_t pid; /* the reader's SO_PEERCRED pid (0: free) */
    size_t slot;
    size_t off;
    size_t len;
    uint64_t deadline_ms;
    char line[PBX_PEER_TTY_ROW_BYTES_MAX];
} ttyd_reader;

/* Connections to launchd's hold socket (one launchd), how long ttyd waits for
 * all of them to acknowledge a HOLD before it answers the prompt RETRY (drawn
 * later, never over output that is not held), and the longest line on the hold
 * channel. */
#define TTYD_HOLDERS_MAX  1U
#define TTYD_HOLD_WAIT_MS 2000U
#define TTYD_HOLD_LINE    32U

/* Where the hold of launchd's job output stands. */
enum { TTYD_HOLD_NONE = 0, TTYD_HOLD_ASKED = 1, TTYD_HOLD_HELD = 2 };

/* One connection to launchd's hold socket: whether launchd acknowledged
 * the current HOLD, and the part of a line it sent so far. */
typedef struct ttyd_holder {
    int fd; /* -1: free */
    bool acked;
    size_t len;
    char in[TTYD_HOLD_LINE];
} ttyd_holder;

/* What a write to the terminal came to. */
enum { TTYD_OUT_OK = 0, TTYD_OUT_SLOW = 1, TTYD_OUT_FAILED = 2 };

/* The whole daemon state (static storage). */
typedef struct ttyd {
    int tty;     /* non-blocking: ttyd never waits on the terminal */
    bool is_tty; /* false (/dev/null, a file): every prompt is denied */
    int routes[TTYD_ROUTES_MAX];
    size_t nroutes;
    int query_fd;  /* the --query listener, or -1 */
    int attach_fd; /* the --attach-fd channel, or -1 */
    ttyd_reader readers[TTYD_READERS_MAX];
    pbx_peer_admit admit; /* who the query socket answers */
    pbx_peer_tty_policy policy;
    pbx_peer_tty_views views;
    pbx_peer_tty_queue queue; /* prompts held; the oldest may be showing */
    uint64_t shown;           /* prompts shown so far (a showing's name) */
    bool typed_ahead;       /* input came after the last answer, in its read */
    bool raw;               /* the terminal is in one-key mode (saved below) */
    pbx_peer_tty_keys keys; /* the terminal's input parser (a prompt's) */
    struct termios saved;
    const char *hold_path; /* launchd's --hold socket, or NULL */
    ttyd_holder holders[TTYD_HOLDERS_MAX];
    int hold_state;         /* TTYD_HOLD_* */
    uint32_t hold_serial;   /* the HOLD asked or held */
    uint64_t hold_deadline; /* monotonic ms: ASKED gives up then */
    pbx_peer_msg msg;
    uint8_t out[PBX_IPC_FRAME_BYTES_MAX];
    char text[32768]; /* a prompt's text: its fields escaped fit */
} ttyd;

/* The daemon's one state (static storage), defined in ttyd.c. */
extern ttyd g_ttyd;

/* ttyd.c: shows the oldest waiting prompt when none is showing (and the
 * hold allows it). */
void ttyd_next(void);
/* ttyd.c: answers the waiting head prompt RETRY and drops it (its hold
 * was not acknowledged in time). */
void ttyd_retry_head(const char *why);
/* ttyd_query.c: the monotonic clock in ms. */
uint64_t ttyd_mono_ms(void);

/* ttyd_hold.c: the hold channel (docs/PROTOCOL.md, "Prompt hold").
 * Fills p[0..TTYD_HOLDERS_MAX) with the connections to launchd; returns
 * whether a HOLD waits for its acks. */
bool ttyd_hold_poll(struct pollfd *p);
/* Serves the connections to launchd after poll (p as filled). */
void ttyd_hold_serve(const struct pollfd *p);
/* Whether a prompt may be drawn now: nothing listens at --hold, or
 * launchd acknowledged the HOLD. Otherwise a HOLD is sent (once) and
 * false. */
bool ttyd_hold_ready(void);
/* Releases the hold when no prompt shows or waits; gives up a HOLD not
 * acknowledged by its deadline (the waiting prompt RETRY). */
void ttyd_hold_settle(void);

/* ttyd_query.c */

/* Fills p[0..TTYD_READERS_MAX] with the query listener (only while a
 * reader entry is free) and the readers; returns whether any reader is
 * being served. */
bool ttyd_poll_readers(struct pollfd *p);
/* Serves the readers and the query listener after poll (q as filled by
 * ttyd_poll_readers). */
void ttyd_serve_readers(const struct pollfd *q);
/* Opens the --query listener at path (mode 0600); -1 with errno set. */
int ttyd_query_listen(const char *path);

#endif
