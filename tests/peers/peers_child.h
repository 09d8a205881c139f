/*
 * peers_child.h: helpers for the peers' process tests: start a peer binary
 * from $PBX_PEERS_BIN with chosen descriptors inherited, wait for its
 * readiness line, stop it, and make scratch directories.
 */
#ifndef PEERS_CHILD_H
#define PEERS_CHILD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/** TP_ARGS_MAX bounds the arguments of one spawned peer. */
#define TP_ARGS_MAX 32

/**
 * tp_spawn starts peer "pbx-<name>" with the NULL-terminated args (not
 * counting argv[0]), keeping the nkeep descriptors in keep open at their
 * numbers, and "--ready-fd N" appended. stdin is /dev/null unless
 * stdin_fd >= 0. stderr goes to $TMPDIR-or-/tmp/pbx-peer-<name>.log. Waits
 * up to 5 s for readiness; returns the pid, or -1 (the child is reaped).
 */
pid_t tp_spawn(const char *name, const char *const *args, const int *keep,
               size_t nkeep, int stdin_fd);

/** tp_stop sends SIGTERM to pid (then SIGCONT, in case it was stopped)
 * and reaps it; returns its wait status. A pid still alive 20 s later is
 * killed (SIGKILL) and reaped, so a stuck peer fails its test rather than
 * holding the run. */
int tp_stop(pid_t pid);

/**
 * tp_wait_exit waits up to timeout_ms for pid to exit and returns its exit
 * status, or -1 when it did not exit (it is then killed and reaped).
 */
int tp_wait_exit(pid_t pid, int timeout_ms);

/**
 * tp_tmpdir creates a fresh scratch directory and returns its path in a
 * static buffer (one per call slot: valid until the 8th next call). It
 * exits the test run when no directory can be made, so it never fails.
 */
const char *tp_tmpdir(void);

/** tp_fd_count returns how many descriptors the process pid has open. */
int tp_fd_count(pid_t pid);

/**
 * tp_fd_settle waits up to timeout_ms for pid's descriptor count to equal
 * want (a peer may close after the event the test saw) and returns the
 * last count observed.
 */
int tp_fd_settle(pid_t pid, int want, int timeout_ms);

/**
 * tp_hung_up waits up to timeout_ms for fd's peer to close (POLLHUP) and
 * reports whether it did.
 */
bool tp_hung_up(int fd, int timeout_ms);

/** tp_seqpair makes a close-on-exec SOCK_SEQPACKET socketpair in sv. */
bool tp_seqpair(int sv[2]);

/**
 * tp_stall stops (SIGSTOP, stop true) or continues (SIGCONT) the process
 * pid, as an operator or a debugger would; returns whether the signal was
 * sent.
 */
bool tp_stall(pid_t pid, bool stop);

/** tp_sleep_ms sleeps for ms milliseconds. */
void tp_sleep_ms(int ms);

/**
 * tp_readable waits up to timeout_ms for fd to have something to read (or
 * a hang-up) and reports whether it does.
 */
bool tp_readable(int fd, int timeout_ms);

/**
 * tp_read_file reads up to cap-1 bytes of path into buf, NUL-terminated;
 * returns the length or -1.
 */
long tp_read_file(const char *path, char *buf, size_t cap);

/**
 * tp_logged reports whether the file at path (a peer's log) holds the
 * NUL-terminated text what, read again every 10 ms for at most 2 s.
 */
bool tp_logged(const char *path, const char *what);

/**
 * tp_attach_send sends the one-byte op with the nfds descriptors fds
 * (copies: the caller keeps its own) on the attach channel chan and
 * returns the status byte of the two-byte answer: 0xFF when the send
 * failed or no such answer came within 3 s, 0xFE when the answer's op
 * byte is not want (so a check for 0 or 1 fails either way).
 */
uint8_t tp_attach_send(int chan, uint8_t op, const int *fds, size_t nfds,
                       uint8_t want);

/**
 * tp_exec_peer replaces the calling (child) process with "pbx-<name>" from
 * $PBX_PEERS_BIN (default build/bin), argv[0] its path, then the
 * NULL-terminated args (at most TP_ARGS_MAX; the caller's, only read). It
 * returns only by exiting 127, when the program cannot be run. Call it
 * only in a child after fork.
 */
_Noreturn void tp_exec_peer(const char *name, const char *const *args);

/**
 * tp_cli runs "pbx-<name>" with the NULL-terminated args (not counting
 * argv[0]; at most TP_ARGS_MAX), stdin /dev/null, and waits up to 5 s for
 * it to exit. Its stdout and stderr, up to cap-1 bytes each, are copied
 * NUL-terminated into out and err (both cap bytes, the caller's). Returns
 * its exit status, or -1 when it could not be run or did not exit.
 */
int tp_cli(const char *name, const char *const *args, char *out, char *err,
           size_t cap);

/**
 * tp_send_fd sends fd on the connected socket sock as one SCM_RIGHTS
 * message with a one-byte body; the caller keeps fd (the kernel adds a
 * copy in flight). Returns false when the send fails.
 */
bool tp_send_fd(int sock, int fd);

/**
 * tp_recv_fd receives one message from sock and returns the descriptor it
 * carried (close-on-exec, now the caller's to close), or -1 when the
 * message was not one byte or carried none.
 */
int tp_recv_fd(int sock);

#endif /* PEERS_CHILD_H */
