/*
 * port_child.h: spawning and driving the freestanding powerboxd-portcheck
 * image from hosted tests, over real sockets with real descriptors.
 */
#ifndef PBX_PORT_CHILD_H
#define PBX_PORT_CHILD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>

/** What the PBX1 startup slot (fd 3) holds when the child starts. */
typedef enum t_pbx1_mode {
    T_PBX1_GOOD,     /**< a fully sealed memfd with a valid smoke record */
    T_PBX1_NONE,     /**< fd 3 is closed */
    T_PBX1_UNSEALED, /**< a memfd without any seal */
    T_PBX1_PARTIAL,  /**< sealed except against writing */
    T_PBX1_DEVNULL,  /**< not a memory object at all */
    T_PBX1_BADMAGIC  /**< sealed, but the record is not PBX1 */
} t_pbx1_mode;

/** A running (or exited) portcheck child and the harness's ends. */
typedef struct t_child {
    pid_t pid;      /**< child process id, 0 once reaped */
    int supervisor; /**< our end of fd 4 (SOCK_SEQPACKET) */
    int notify;     /**< our end of fd 5 (SOCK_DGRAM) */
    int peer;       /**< our end of fd 6 (SOCK_SEQPACKET) */
    int client;     /**< one connected public client, or -1 */
    char name[64];  /**< the public endpoint name ("@...") */
} t_child;

/** T_REPLY_WORDS is the number of u32 words in every portcheck reply. */
#define T_REPLY_WORDS 8

/**
 * t_spawn starts the image named by $PBX_PORTCHECK with the given PBX1 and
 * fresh routes. Returns false (with every harness descriptor closed) when
 * the image cannot be started.
 */
bool t_spawn(t_child *c, t_pbx1_mode mode);

/**
 * t_spawn_err is t_spawn with err_fd (when not negative) as the child's
 * standard error, slot 2, the port's diagnostic output; the caller keeps
 * and closes err_fd.
 */
bool t_spawn_err(t_child *c, t_pbx1_mode mode, int err_fd);

/**
 * t_spawn_nofile makes the next t_spawn's child run with RLIMIT_NOFILE
 * soft and hard (set just before exec); hard 0 keeps the harness's own.
 * It applies to that one spawn.
 */
void t_spawn_nofile(rlim_t soft, rlim_t hard);

/** t_wait_ready waits up to 5 s for "READY" on the supervisor route. */
bool t_wait_ready(t_child *c);

/** t_exit_status reaps the child (5 s limit) and returns its exit status,
 * -1 when killed by a signal, -2 on timeout (the child is then killed). */
int t_exit_status(t_child *c);

/** t_connect opens a new public connection; returns its fd or -1. */
int t_connect(const t_child *c);

/** t_close_all closes the harness ends and kills a child still running. */
void t_close_all(t_child *c);

/**
 * t_send sends len bytes on fd with nfds descriptors attached (nfds may
 * exceed what the receiver accepts: that is what some tests check).
 */
bool t_send(int fd, const void *msg, size_t len, const int *fds, int nfds);

/**
 * t_recv_reply waits up to ms for one reply on fd, stores its words in w
 * (zero-filled first) and a received descriptor in *fd_out (or -1; may be
 * NULL, in which case any descriptor is closed). Returns false on timeout.
 */
bool t_recv_reply(int fd, uint32_t *w, int *fd_out, int ms);

/** t_request sends op/arg with fds on the child's client and waits 5 s. */
bool t_request(t_child *c, char op, uint8_t arg, const int *fds, int nfds,
               uint32_t *w, int *fd_out);

/** t_fd_count counts the entries of /proc/<pid>/fd, or -1. */
int t_fd_count(pid_t pid);

/** t_same_object reports whether the child's fd slot and our fd are one
 * kernel object (same device and inode through /proc/<pid>/fd). */
bool t_same_object(pid_t pid, int slot, int fd);

/** t_memfd creates an unsealed memfd named name holding len bytes. */
int t_memfd(const char *name, const void *data, size_t len);

#endif /* PBX_PORT_CHILD_H */
