/*
 * obj_fd_harness.h: what the OPEN tests (test_obj_fd*.c) share: a live
 * pbx-vfsd with one scope on root/pub = {a.txt "hello\n", big.bin 10000
 * bytes of of_byte, w.txt "0123"} and a route held by the test.
 */
#ifndef OBJ_FD_HARNESS_H
#define OBJ_FD_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "../../ipc/pbx_ipc.h"

/* A running vfsd with one scope and a route held by this process. */
typedef struct of {
    pid_t pid;
    int scope;
    int route;
    char dir[256];
} of;

/* The byte at offset i of big.bin. */
char of_byte(size_t i);
/* Writes n bytes to dir/name: text, or big.bin's pattern (text NULL). */
void of_file(const char *dir, const char *name, const char *text, size_t n);
/* Builds a fresh root (tp_tmpdir) and starts vfsd on it with extra
 * arguments (NULL-terminated, at most 8, or NULL). */
void of_up(of *t, const char *const *extra);
/* Closes t's ends and stops its vfsd (unless t->pid is -1); checks that
 * vfsd's FUSE server (when it had one) then ends by itself. */
void of_down(of *t);
/* The pid of vfsd's FUSE server (its one child), or -1. */
pid_t of_server(pid_t vfsd);
/* Waits up to timeout_ms for the process of pidfd pfd to end (it is no
 * child of this one: poll says so, not waitpid). */
bool of_gone(int pfd, int timeout_ms);
/* Resolves sel for op through t's scope, which must be FOUND; returns the
 * object (owned by the caller) and stores its identity in *rep. */
int of_obj(const of *t, const char *sel, uint16_t op,
           pbx_ipc_resolve_reply *rep);
/* RETIREs rep's object on t's route; vfsd must acknowledge it. */
void of_retire(const of *t, const pbx_ipc_resolve_reply *rep);
/* Whether read(fd) now fails with EIO. */
bool of_read_eio(int fd);

#endif /* OBJ_FD_HARNESS_H */
