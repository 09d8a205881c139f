/*
 * pbx_ids.c: the N-I.G id spelling and the stack.log facts `pbx grants`,
 * `pbx cancel` and `pbx log` read (pbx_ids.h). Every loop is bounded by
 * the text it walks or by a line count.
 */
#include "tools/pbx/pbx_ids.h"

#include "peers/lib/pbx_peer.h"

#include <stdio.h>
#include <string.h>

/* The longest stack.log line read whole; longer ones are read in pieces,
 * none of which is a note. */
#define IDS_LINE_MAX 8192U

/* Parses the decimal number of s[0..n) (at most 10 digits) below 2^32. */
static bool ids_number(const char *s, size_t n, uint32_t *out)
{
    char buf[12];
    uint64_t v = 0;
    if (n == 0U || n >= sizeof(buf)) {
        return false;
    }
    memcpy(buf, s, n);
    buf[n] = '\0';
    if (!pbx_peer_parse_u64(buf, UINT32_MAX, &v)) {
        return false;
    }
    *out = (uint32_t)v;
    return true;
}

bool pbx_ids_parse(const char *s, pbx_ids_id *out)
{
    const char *dash = strchr(s, '-');
    const char *dot = dash != NULL ? strchr(dash, '.') : NULL;
    pbx_ids_id id = {0, 0, 0};
    if (dot == NULL || !ids_number(s, (size_t)(dash - s), &id.inc) ||
        !ids_number(dash + 1, (size_t)(dot - dash - 1), &id.index) ||
        !ids_number(dot + 1, strlen(dot + 1), &id.gen) || id.inc == 0U ||
        id.gen == 0U) {
        return false;
    }
    *out = id;
    return true;
}

bool pbx_ids_split(const char *line, pbx_ids_line *out)
{
    const char *sp = strchr(line, ' ');
    const char *open = sp != NULL ? strchr(sp, '[') : NULL;
    const char *close = open != NULL ? strchr(open, ']') : NULL;
    uint32_t pid = 0;
    if (close == NULL || close[1] != ':' || close[2] != ' ' || open == sp + 1 ||
        memchr(sp + 1, ' ', (size_t)(open - sp - 1)) ||
        !ids_number(open + 1, (size_t)(close - open - 1), &pid)) {
        return false;
    }
    out->name = sp + 1;
    out->name_len = (size_t)(open - sp - 1);
    out->pid = (long)pid;
    out->rest = close + 3;
    return true;
}

bool pbx_ids_is(const pbx_ids_line *l, const char *name)
{
    return strlen(name) == l->name_len &&
           strncmp(l->name, name, l->name_len) == 0;
}

uint32_t pbx_ids_note(const pbx_ids_line *l)
{
    static const char head[] = "powerboxd incarnation ";
    static const char tail[] = " starting";
    size_t n = strlen(l->rest);
    while (n != 0U && (l->rest[n - 1U] == '\n' || l->rest[n - 1U] == '\r')) {
        n--;
    }
    uint32_t inc = 0;
    size_t h = sizeof(head) - 1U;
    size_t t = sizeof(tail) - 1U;
    if (!pbx_ids_is(l, "up") || n <= h + t || strncmp(l->rest, head, h) != 0 ||
        strncmp(l->rest + n - t, tail, t) != 0 ||
        !ids_number(l->rest + h, n - h - t, &inc)) {
        return 0U;
    }
    return inc;
}

bool pbx_ids_live(const char *path, uint32_t *inc)
{
    static char line[IDS_LINE_MAX];
    *inc = 1U;
    FILE *f = fopen(path, "re");
    if (f == NULL) {
        return false;
    }
    pbx_ids_line l;
    while (fgets(line, sizeof(line), f) != NULL) {
        uint32_t n = pbx_ids_split(line, &l) ? pbx_ids_note(&l) : 0U;
        *inc = n != 0U ? n : *inc;
    }
    (void)fclose(f);
    return true;
}
