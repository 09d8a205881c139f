/*
 * bench_fuse_floor.h: the zero-work FUSE server of pbx-bench-fd
 * (docs/BENCH.md, "Revocable descriptor"). It serves one file, with
 * direct I/O, and answers every READ from a static buffer with one reply
 * (libfuse3's fuse_reply_buf: a single writev to /dev/fuse), so that a
 * read through it costs the FUSE request's round trip and the copy of its
 * bytes, and nothing else: the floor under vfsd's revocable descriptor.
 * Used by the bench only.
 */
#ifndef BENCH_FUSE_FLOOR_H
#define BENCH_FUSE_FLOOR_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/** The one file's name in the mount. */
#define BENCH_FLOOR_NAME "data.bin"
/** How long bench_floor_start waits for the server to report (ms). */
#define BENCH_FLOOR_START_MS 10000

/** A running zero-work server (caller-allocated; filled by
 * bench_floor_start, emptied by bench_floor_stop). */
typedef struct bench_floor {
    pid_t pid;      /* the server process, or -1 */
    char mnt[4096]; /* its mount point (a fresh directory), or "" */
    char why[160];  /* why it is not up, when bench_floor_start failed */
} bench_floor;

/** Makes a fresh directory under dir and mounts the zero-work server on
 * it, in a child process that serves BENCH_FLOOR_NAME, whose len bytes
 * are those of bytes (the child's copy, taken at the fork; bytes stays
 * the caller's). Returns true once the server is mounted and serving;
 * false with f->why set (FUSE cannot be mounted here, or the server did
 * not report within BENCH_FLOOR_START_MS), with nothing left running or
 * mounted. */
bool bench_floor_start(bench_floor *f, const char *dir, const char *bytes,
                       size_t len);

/** Stops the server f (the caller has closed every descriptor it opened
 * on the mount): the server detaches its mount and ends; the directory
 * is removed. Safe on a server that never started. */
void bench_floor_stop(bench_floor *f);

#endif /* BENCH_FUSE_FLOOR_H */
