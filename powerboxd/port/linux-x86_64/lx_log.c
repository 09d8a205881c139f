/*
 * lx_log.c: powerboxd's diagnostic lines on slot 2 for the linux-x86_64
 * port, never blocking and never raising SIGPIPE (docs/PORTS.md, "The
 * log"; tests/port/test_port_log.c).
 *
 * Slot 2 is shared: it is the terminal, the file or the pipe powerboxd's
 * starter gave it, and the starter (and under `pbx up` every other stack
 * process) holds the same open file description. O_NONBLOCK is a flag of
 * that description, so setting it would make the other holders' writes
 * fail with EAGAIN too; the port never sets it. Instead each line is one
 * pwritev2 with RWF_NOWAIT, a flag of that one call: a pipe or socket that
 * cannot take the whole line at once answers EAGAIN, one whose reader is
 * gone answers EPIPE (SIGPIPE is ignored from the first line on). The
 * port learns slot 2's type once, at the first line: only a pipe or a
 * socket is written that way; a regular file is written with a plain
 * write (a file never waits for a reader), anything else (a terminal) as
 * before this change, a poll with no wait, then the write, as is a pipe
 * on a kernel that refuses the flag (EOPNOTSUPP).
 */
#include "powerboxd/port/linux-x86_64/lx_int.h"

/** LX_LOG_SYS_POLL is poll(fds, n, timeout). */
#define LX_LOG_SYS_POLL 7
/** LX_LOG_SYS_RT_SIGACTION is rt_sigaction(sig, act, oact, setsize). */
#define LX_LOG_SYS_RT_SIGACTION 13
/** LX_LOG_SYS_PWRITEV2 is pwritev2(fd, iov, n, pos_l, pos_h, flags). */
#define LX_LOG_SYS_PWRITEV2 328
/** LX_LOG_RWF_NOWAIT asks one read or write not to wait. */
#define LX_LOG_RWF_NOWAIT 0x8
/** LX_LOG_EOPNOTSUPP: the file does not take RWF_NOWAIT. */
#define LX_LOG_EOPNOTSUPP 95
/** LX_LOG_S_IFIFO is the mode type of a pipe. */
#define LX_LOG_S_IFIFO 0010000U
/** LX_LOG_SIGPIPE is the signal a write to a reader-less pipe raises. */
#define LX_LOG_SIGPIPE 13
/** LX_LOG_SIG_IGN is the "ignore" disposition. */
#define LX_LOG_SIG_IGN 1
/** LX_LOG_POLLOUT asks poll for writability. */
#define LX_LOG_POLLOUT 0x004
/** LX_LOG_POLL_BAD is POLLERR | POLLHUP | POLLNVAL: no reader, or no
 * descriptor. */
#define LX_LOG_POLL_BAD 0x038
/** LX_LOG_LINE_MAX is PIPE_BUF: a pipe takes a line this long whole. */
#define LX_LOG_LINE_MAX 4096U
/** LX_LOG_SLOT is the diagnostic output's slot. */
#define LX_LOG_SLOT 2

/** How slot 2 is written, learnt at the first line. */
enum lx_log_way {
    LX_LOG_UNKNOWN = 0, /**< no line yet */
    LX_LOG_NOWAIT,      /**< pwritev2 with RWF_NOWAIT */
    LX_LOG_FILE,        /**< a regular file: plain write */
    LX_LOG_POLL         /**< poll with no wait, then write */
};

/** lx_log_sigaction is the kernel's struct sigaction on x86_64. */
struct lx_log_sigaction {
    /** Handler or disposition. */
    // cppcheck-suppress unusedStructMember
    uint64_t handler;
    /** SA_* flags. */
    // cppcheck-suppress unusedStructMember
    uint64_t flags;
    /** Restorer (unused for a disposition). */
    // cppcheck-suppress unusedStructMember
    uint64_t restorer;
    /** Signals blocked while a handler runs. */
    // cppcheck-suppress unusedStructMember
    uint64_t mask;
};

/** lx_log_pollfd is struct pollfd. */
struct lx_log_pollfd {
    /** Descriptor. */
    // cppcheck-suppress unusedStructMember
    int32_t fd;
    /** Requested events. */
    // cppcheck-suppress unusedStructMember
    int16_t events;
    /** Returned events. */
    int16_t revents;
};

/** lx_log_iovec is struct iovec. */
struct lx_log_iovec {
    /** Start of the bytes. */
    // cppcheck-suppress unusedStructMember
    uint64_t base;
    /** Their count. */
    // cppcheck-suppress unusedStructMember
    uint64_t len;
};

/* The way slot 2 is written; powerboxd runs one thread and never changes
 * slot 2, so what the first line learnt holds for the process's life. */
static enum lx_log_way lx_log_way_g;

/* Writes the line without waiting; returns the kernel's answer. */
static int64_t lx_log_nowait(const uint8_t *msg, uint32_t len_bytes)
{
    struct lx_log_iovec iov = {(uint64_t)lx_ptr(msg), len_bytes};
    /* Position -1 is "the file's own position", which a pipe has. */
    return lx_sys6(LX_LOG_SYS_PWRITEV2, LX_LOG_SLOT, lx_ptr(&iov), 1, -1, 0,
                   LX_LOG_RWF_NOWAIT);
}

/* Learns how slot 2 is written, once, from its type: a regular file
 * plainly; a pipe or socket without waiting, SIGPIPE ignored first (a
 * write to a gone reader then answers EPIPE); anything else, or a slot
 * whose type cannot be read, after a poll. A file is never written with
 * RWF_NOWAIT: a filesystem that takes the flag may answer EAGAIN for a
 * page it would have to allocate, and a file never waits for a reader. */
static void lx_log_learn(void)
{
    struct lx_log_sigaction ign = {LX_LOG_SIG_IGN, 0, 0, 0};
    struct lx_stat st;
    const uint8_t *raw = (const uint8_t *)&st;
    uint32_t type;
    lx_log_way_g = LX_LOG_POLL;
    pbx_mem_set(&st, 0, sizeof(st));
    if (lx_sys3(LX_SYS_FSTAT, LX_LOG_SLOT, lx_ptr(&st), 0) != 0) {
        return;
    }
    type = pbx_le_get32(raw + LX_STAT_OFF_MODE) & LX_S_IFMT;
    if (type == LX_S_IFREG) {
        lx_log_way_g = LX_LOG_FILE;
    } else if ((type == LX_LOG_S_IFIFO || type == LX_S_IFSOCK) &&
               lx_sys6(LX_LOG_SYS_RT_SIGACTION, LX_LOG_SIGPIPE, lx_ptr(&ign), 0,
                       8, 0, 0) == 0) {
        /* Without the signal ignored a write could still kill the
         * process on a gone reader: the poll never writes to one. */
        lx_log_way_g = LX_LOG_NOWAIT;
    }
}

/* The way of a slot that takes no RWF_NOWAIT and is no regular file (a
 * terminal): written only when poll says it can take bytes at once. */
static bool lx_log_polled(const uint8_t *msg, uint32_t len_bytes)
{
    struct lx_log_pollfd p = {LX_LOG_SLOT, LX_LOG_POLLOUT, 0};
    if (lx_sys3(LX_LOG_SYS_POLL, lx_ptr(&p), 1, 0) != 1 ||
        (p.revents & LX_LOG_POLL_BAD) != 0 ||
        (p.revents & LX_LOG_POLLOUT) == 0) {
        return false;
    }
    return lx_sys3(LX_SYS_WRITE, LX_LOG_SLOT, lx_ptr(msg),
                   (int64_t)len_bytes) == (int64_t)len_bytes;
}

bool pbx_port_log(const uint8_t *msg, uint32_t len_bytes)
{
    int64_t r;
    if (len_bytes == 0U || len_bytes > LX_LOG_LINE_MAX) {
        return false;
    }
    if (lx_log_way_g == LX_LOG_UNKNOWN) {
        lx_log_learn();
    }
    /* Never wait: a full pipe or a slow terminal loses the line (the
     * runtime counts it), a gone reader answers EPIPE. A pipe takes a
     * line of at most PIPE_BUF bytes whole or not at all. */
    if (lx_log_way_g == LX_LOG_NOWAIT) {
        r = lx_log_nowait(msg, len_bytes);
        if (r != -LX_LOG_EOPNOTSUPP) {
            return r == (int64_t)len_bytes;
        }
        /* A kernel whose pipes refuse the flag: the poll from now on. */
        lx_log_way_g = LX_LOG_POLL;
    } else if (lx_log_way_g == LX_LOG_FILE) {
        r = lx_sys3(LX_SYS_WRITE, LX_LOG_SLOT, lx_ptr(msg), (int64_t)len_bytes);
        return r == (int64_t)len_bytes;
    }
    return lx_log_polled(msg, len_bytes);
}
