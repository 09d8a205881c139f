/*
 * pbx_ids.h: the one spelling of powerboxd's request and grant ids that
 * `pbx grants`, `pbx cancel` and `pbx log` share with powerboxd's log:
 * "N-I.G", N the powerboxd incarnation `pbx up` numbered (1, 2, ...), I.G
 * the id on the wire (index, generation). Also the few facts of
 * DIR/stack.log these commands read: how a line splits, and which
 * incarnation is live (the latest "powerboxd incarnation N starting"
 * note of `pbx up`). Pure text work plus one file read; no allocation.
 */
#ifndef PBX_IDS_H
#define PBX_IDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** pbx_ids_id is one id as written N-I.G. */
typedef struct pbx_ids_id {
    /** inc is the incarnation N (1 or more). */
    uint32_t inc;
    /** index is the wire index I. */
    uint32_t index;
    /** gen is the wire generation G. */
    uint32_t gen;
} pbx_ids_id;

/**
 * pbx_ids_parse parses s (NUL-terminated) as "N-I.G", each a decimal
 * number below 2^32, N and G not 0, into *out. Returns false for any
 * other text (an old two-part "I.G" or "I:G" among them); *out is then
 * untouched.
 */
bool pbx_ids_parse(const char *s, pbx_ids_id *out);

/**
 * pbx_ids_line is one stack.log line split as `pbx up` writes it, "TIME
 * NAME[PID]: REST": name and rest point into the caller's line, which
 * must outlive the struct; name is not NUL-terminated (name_len bytes).
 */
typedef struct pbx_ids_line {
    /** name is the process name (up, powerboxd, vfsd, ...). */
    const char *name;
    /** name_len is its length. */
    size_t name_len;
    /** pid is the process id in brackets. */
    long pid;
    /** rest is what the process wrote (NUL-terminated with the line). */
    const char *rest;
} pbx_ids_line;

/**
 * pbx_ids_split splits line into *out. Returns false when line is not
 * of that form (no "NAME[PID]: " after the first word).
 */
bool pbx_ids_split(const char *line, pbx_ids_line *out);

/** pbx_ids_is returns whether l's process name is exactly name. */
bool pbx_ids_is(const pbx_ids_line *l, const char *name);

/**
 * pbx_ids_note returns N when l is `pbx up`'s "powerboxd incarnation N
 * starting" line, else 0.
 */
uint32_t pbx_ids_note(const pbx_ids_line *l);

/**
 * pbx_ids_live reads the stack log at path and stores in *inc the
 * incarnation of its latest "powerboxd incarnation N starting" line: the
 * live powerboxd's (or the last one's, when the stack stopped), 1 when
 * the log names none (a powerboxd started without --incarnation is 1).
 * Returns false when the log cannot be read (*inc is then 1).
 */
bool pbx_ids_live(const char *path, uint32_t *inc);

#endif /* PBX_IDS_H */
