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
 * gone answers EPIPE (SIGPIPE is ignored from the first line on). Where
 * the kernel refuses the flag for slot 2 (EOPNOTSUPP: a terminal, a file
 * on most filesystems), the port learns the slot's type once: a regular
 * file is written with a plain write (a file never waits for a reader),
 * anything else as before this change, a poll with no wait, then the
 * write.
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

/* Learns how slot 2 is written: SIGPIPE ignored (a write to a gone reader
 * then answers EPIPE), then the RWF_NOWAIT attempt of the first line.
 * Returns that attempt's answer, or -LX_LOG_EOPNOTSUPP when another way
 * was chosen and the line is still to be written. */
static int64_t lx_log_learn(const uint8_t *msg, uint32_t len_bytes)
{
    struct lx_log_sigaction ign = {LX_LOG_SIG_IGN, 0, 0, 0};
    struct lx_stat st;
    const uint8_t *raw = (const uint8_t *)&st;
    int64_t r;
    /* Without the signal ignored a NOWAIT write could still kill the
     * process on a gone reader: then keep the poll, which never writes
     * to one. */
    lx_log_way_g = LX_LOG_POLL;
    if (lx_sys6(LX_LOG_SYS_RT_SIGACTION, LX_LOG_SIGPIPE, lx_ptr(&ign), 0, 8, 0,
                0) != 0) {
        return -LX_LOG_EOPNOTSUPP;
    }
    r = lx_log_nowait(msg, len_bytes);
    if (r != -LX_LOG_EOPNOTSUPP) {
        lx_log_way_g = LX_LOG_NOWAIT;
        return r;
    }
    pbx_mem_set(&st, 0, sizeof(st));
    if (lx_sys3(LX_SYS_FSTAT, LX_LOG_SLOT, lx_ptr(&st), 0) == 0 &&
        (pbx_le_get32(raw + LX_STAT_OFF_MODE) & LX_S_IFMT) == LX_S_IFREG) {
        lx_log_way_g = LX_LOG_FILE;
    }
    return r;
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
        r = lx_log_learn(msg, len_bytes);
        if (lx_log_way_g == LX_LOG_NOWAIT) {
            return r == (int64_t)len_bytes;
        }
    }
    /* Never wait: a full pipe or a slow terminal loses the line (the
     * runtime counts it), a gone reader answers EPIPE. A pipe takes a
     * line of at most PIPE_BUF bytes whole or not at all. */
    if (lx_log_way_g == LX_LOG_NOWAIT) {
        r = lx_log_nowait(msg, len_bytes);
    } else if (lx_log_way_g == LX_LOG_FILE) {
        r = lx_sys3(LX_SYS_WRITE, LX_LOG_SLOT, lx_ptr(msg), (int64_t)len_bytes);
    } else {
        return lx_log_polled(msg, len_bytes);
    }
    return r == (int64_t)len_bytes;
}
