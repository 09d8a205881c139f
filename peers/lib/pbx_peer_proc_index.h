/*
 * pbx_peer_proc_index.h: the indexes of procd's install table, kept in
 * step with its rows by pbx_peer_proc.c so that no INSTALL, REVOKE or
 * hang-up walks the table (issue 23 item 3): a stack of the free rows, a
 * hash from a grant (index, gen) to its live row, a hash from a target
 * (process id, slot) to its live row, and a count of live rows per
 * process id. pbx_peer_procix_check recomputes all of them by walking the
 * rows (a test aid: procd runs it only under PBX_PROCD_CHECK_INDEX).
 * Pure: no I/O.
 */
#ifndef PBX_PEER_PROC_INDEX_H
#define PBX_PEER_PROC_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** PBX_PEER_PROCIX_ROWS is the most rows indexed (the table's storage,
 * PBX_PEER_PROC_INSTALLS_CAP, which pbx_peer_proc.h checks equal). */
#define PBX_PEER_PROCIX_ROWS 4096U
/** PBX_PEER_PROCIX_BUCKETS is the hash storage: twice the rows, so the
 * process-id table (open addressing) is never more than half full. */
#define PBX_PEER_PROCIX_BUCKETS 8192U
/** PBX_PEER_PROCIX_NONE is the "no row" link. */
#define PBX_PEER_PROCIX_NONE 0xFFFFU

/** pbx_peer_procix is the index state, embedded in pbx_peer_proctab; it
 * is changed only by pbx_peer_proc.c (plain data). */
typedef struct pbx_peer_procix {
    /** mask is the buckets in use minus one (a power of two minus one,
     * at least twice the table's rows). */
    uint32_t mask;
    /** nfree is the free rows on free_stack (its top is the next row). */
    size_t nfree;
    /** free_stack holds the free rows, the next one last. */
    uint16_t free_stack[PBX_PEER_PROCIX_ROWS];
    /** free_pos is each free row's place in free_stack. */
    uint16_t free_pos[PBX_PEER_PROCIX_ROWS];
    /** grant_head is each grant bucket's first live row (or NONE). */
    uint16_t grant_head[PBX_PEER_PROCIX_BUCKETS];
    /** grant_next and grant_prev chain the live rows of one bucket. */
    uint16_t grant_next[PBX_PEER_PROCIX_ROWS];
    /** grant_prev is the row before in the bucket (NONE: the head). */
    uint16_t grant_prev[PBX_PEER_PROCIX_ROWS];
    /** target_head is each target bucket's first live row (or NONE). */
    uint16_t target_head[PBX_PEER_PROCIX_BUCKETS];
    /** target_next and target_prev chain one target bucket's rows. */
    uint16_t target_next[PBX_PEER_PROCIX_ROWS];
    /** target_prev is the row before in the bucket (NONE: the head). */
    uint16_t target_prev[PBX_PEER_PROCIX_ROWS];
    /** pid_key and pid_count are an open-addressing table (linear
     * probing) of the process ids with live rows; count 0 is empty. */
    uint64_t pid_key[PBX_PEER_PROCIX_BUCKETS];
    /** pid_count is the live rows of pid_key in that place. */
    uint16_t pid_count[PBX_PEER_PROCIX_BUCKETS];
} pbx_peer_procix;

#endif /* PBX_PEER_PROC_INDEX_H */
