/*
 * pbx_peer_fdlimit.h: a peer's descriptor budget at startup (hosted;
 * Linux). vfsd and procd size their tables from their options; each row
 * holds descriptors, so each raises its soft RLIMIT_NOFILE to what a full
 * table holds before serving, and a table too large for the hard limit
 * fails at startup, never later with EMFILE. See docs/HOST.md.
 */
#ifndef PBX_PEER_FDLIMIT_H
#define PBX_PEER_FDLIMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/resource.h>

/**
 * pbx_peer_fdlimit_raise raises the calling process's soft RLIMIT_NOFILE
 * to want descriptors, at most to the hard limit (a soft limit already at
 * or above want is left as it is). The log lines name the peer (who), the
 * option that sized the table (opt, e.g. "--objects"), its value n and
 * what it counts (rows, e.g. "objects"); all are borrowed for the call
 * only. Returns true when want descriptors may be open; false after one
 * log line when the hard limit is below want or a call failed (nothing
 * changed then).
 */
bool pbx_peer_fdlimit_raise(const char *who, const char *opt, size_t n,
                            const char *rows, rlim_t want);

#endif /* PBX_PEER_FDLIMIT_H */
