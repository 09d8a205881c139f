/*
 * pbx_open.c: `pbx open`, run inside a launchd job: asks powerboxd for one
 * object in runtime-reply mode (the app library), and on approval
 * performs the operation on the object vfsd minted (the object library):
 * READ copies the file's bytes to stdout (or --out FILE), STAT prints its
 * size and identity, LIST its names, WRITE copies stdin into it. A
 * one-shot grant is consumed afterwards, so the object is retired. A
 * denial, NOT_FOUND, a cancellation or a wait that expired prints one line
 * on stderr and exits 1.
 */
#include "tools/pbx/pbx_tool.h"

#include "peers/app/pbx_app.h"
#include "peers/app/pbx_obj.h"
#include "peers/lib/pbx_peer.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

/* The bytes one object call moves; also the copy buffer's size. */
#define PBX_OPEN_CHUNK 4096U
/* Bounds the copy loops: 2^32 chunks is 16 TiB, beyond any file here. */
#define PBX_OPEN_CHUNKS_MAX ((uint64_t)1 << 32)
/* Bounds the LIST pages. */
#define PBX_OPEN_PAGES_MAX 1000000U

/* What the command line said. */
typedef struct pbx_open_opts {
    pbx_app_request rq;
    const char *out;
} pbx_open_opts;

/* One `--op` word and the request it makes. */
typedef struct pbx_open_op {
    const char *name;
    uint16_t operation;
} pbx_open_op;

static const pbx_open_op g_pbx_open_ops[] = {
    {"read", PBX_IPC_OPERATION_READ},
    {"stat", PBX_IPC_OPERATION_ENTRY_METADATA_READ},
    {"list", PBX_IPC_OPERATION_LIST},
    {"write", PBX_IPC_OPERATION_WRITE},
};

void pbx_tool_open_usage(FILE *fp)
{
    (void)fputs(
        "  pbx open [--op read|stat|list|write] [--lifetime "
        "one-shot|invocation|job]\n"
        "           [--urgency routine|exceptional] [--wait-ms N] "
        "[--label TEXT]\n"
        "           [--out FILE|-] SELECTOR\n"
        "    inside a launchd job: asks for SELECTOR and, approved, reads "
        "it to\n"
        "    stdout (read, the default), prints size= (stat), its names "
        "(list),\n"
        "    or writes stdin into it (write); a one-shot grant is then "
        "consumed.\n"
        "    Refused, not found, cancelled or timed out: one line, exit 1.\n",
        fp);
}

/* Parses the value v of option k into *o; returns false when it is
 * invalid (the caller names it). */
static bool pbx_open_value(pbx_open_opts *o, const char *k, const char *v)
{
    uint32_t x = 0;
    uint64_t ms = 0;
    if (strcmp(k, "--op") == 0) {
        for (size_t i = 0; i < PBX_ARRAY_LEN(g_pbx_open_ops); i++) {
            if (strcmp(v, g_pbx_open_ops[i].name) == 0) {
                o->rq.operation = g_pbx_open_ops[i].operation;
                return true;
            }
        }
        return false;
    }
    if (strcmp(k, "--lifetime") == 0) {
        bool ok = pbx_peer_name_parse(PBX_PEER_NAMES_LIFETIME, v, &x);
        o->rq.lifetime = (uint8_t)x;
        return ok;
    }
    if (strcmp(k, "--urgency") == 0) {
        bool ok = pbx_peer_name_parse(PBX_PEER_NAMES_URGENCY, v, &x);
        o->rq.urgency = (uint8_t)x;
        return ok;
    }
    if (strcmp(k, "--wait-ms") == 0) {
        bool ok = pbx_peer_parse_u64(v, 86400000U, &ms);
        o->rq.wait_ms = ms;
        return ok;
    }
    if (strcmp(k, "--label") == 0) {
        o->rq.label = v;
        return strlen(v) <= PBX_IPC_LABEL_LEN_BYTES_MAX;
    }
    o->out = v; /* --out */
    return v[0] != '\0';
}

/* Parses argv (argv[0] is "open") into *o; returns PBX_TOOL_EXIT_OK or
 * the usage error it printed. */
static int pbx_open_parse(int argc, char **argv, pbx_open_opts *o)
{
    static const char *const keys[] = {"--op",      "--lifetime", "--urgency",
                                       "--wait-ms", "--label",    "--out"};
    memset(o, 0, sizeof(*o));
    o->rq.operation = PBX_IPC_OPERATION_READ;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool known = false;
        for (size_t k = 0; k < PBX_ARRAY_LEN(keys); k++) {
            known = known || strcmp(a, keys[k]) == 0;
        }
        if (known && i + 1 >= argc) {
            return pbx_tool_usage_error("open", "missing value after", a);
        }
        if (known && !pbx_open_value(o, a, argv[i + 1])) {
            return pbx_tool_usage_error("open", "invalid value", argv[i + 1]);
        }
        if (known) {
            i++;
        } else if (a[0] == '-' && strcmp(a, "-") != 0) {
            return pbx_tool_usage_error("open", "unknown option", a);
        } else if (o->rq.selector != NULL) {
            return pbx_tool_usage_error("open", "unexpected argument", a);
        } else {
            o->rq.selector = a;
        }
    }
    if (o->rq.selector == NULL || o->rq.selector[0] == '\0') {
        return pbx_tool_usage_error("open", "no SELECTOR given", NULL);
    }
    if (strlen(o->rq.selector) > PBX_IPC_SELECTOR_LEN_BYTES_MAX) {
        return pbx_tool_usage_error("open", "SELECTOR too long", NULL);
    }
    return PBX_TOOL_EXIT_OK;
}

/* Writes buf[0..len) to fd whole; false on a failure. */
static bool pbx_open_write_all(int fd, const uint8_t *buf, size_t len)
{
    size_t done = 0;
    for (uint64_t i = 0; i < PBX_OPEN_CHUNKS_MAX && done < len; i++) {
        ssize_t n = write(fd, buf + done, len - done);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return false;
        }
        done += (size_t)n;
    }
    return done == len;
}

/* Prints the object failure of call what on selector sel. */
static int pbx_open_obj_fail(const char *sel, const char *what, int status)
{
    (void)fprintf(stderr, "pbx open: %s: %s failed: %s\n", sel, what,
                  pbx_obj_strerror(status));
    return PBX_TOOL_EXIT_FAIL;
}

/* READ: the whole file, chunk by chunk, into out_fd. */
static int pbx_open_read(int obj, const char *sel, int out_fd)
{
    static uint8_t buf[PBX_OPEN_CHUNK];
    uint64_t off = 0;
    for (uint64_t i = 0; i < PBX_OPEN_CHUNKS_MAX; i++) {
        size_t got = 0;
        int st = pbx_obj_read(obj, off, buf, sizeof(buf), &got);
        if (st != 0) {
            return pbx_open_obj_fail(sel, "read", st);
        }
        if (got == 0U) {
            return PBX_TOOL_EXIT_OK;
        }
        if (!pbx_open_write_all(out_fd, buf, got)) {
            (void)fprintf(stderr, "pbx open: %s: cannot write the bytes: %s\n",
                          sel, strerror(errno));
            return PBX_TOOL_EXIT_FAIL;
        }
        off += got;
    }
    return PBX_TOOL_EXIT_OK;
}

/* WRITE: standard input, chunk by chunk, into the object from offset 0. */
static int pbx_open_write(int obj, const char *sel)
{
    static uint8_t buf[PBX_OPEN_CHUNK];
    uint64_t off = 0;
    for (uint64_t i = 0; i < PBX_OPEN_CHUNKS_MAX; i++) {
        ssize_t n = read(STDIN_FILENO, buf, sizeof(buf));
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            (void)fprintf(stderr, "pbx open: %s: cannot read stdin: %s\n", sel,
                          strerror(errno));
            return PBX_TOOL_EXIT_FAIL;
        }
        if (n == 0) {
            break;
        }
        size_t put = 0;
        int st = pbx_obj_write(obj, off, buf, (size_t)n, &put);
        if (st != 0) {
            return pbx_open_obj_fail(sel, "write", st);
        }
        off += put;
    }
    printf("written=%llu\n", (unsigned long long)off);
    return PBX_TOOL_EXIT_OK;
}

/* LIST: every page of names, one name per line. */
static int pbx_open_list(int obj, const char *sel)
{
    static char names[PBX_OPEN_CHUNK];
    uint32_t cookie = 0;
    for (uint32_t page = 0; page < PBX_OPEN_PAGES_MAX; page++) {
        size_t used = 0;
        uint32_t next = 0;
        int st = pbx_obj_list(obj, cookie, names, sizeof(names), &used, &next);
        if (st != 0) {
            return pbx_open_obj_fail(sel, "list", st);
        }
        for (size_t at = 0; at < used && at < sizeof(names);) {
            size_t len = strnlen(names + at, used - at);
            printf("%.*s\n", (int)len, names + at);
            at += len + 1U;
        }
        if (next == 0U) {
            return PBX_TOOL_EXIT_OK;
        }
        cookie = next;
    }
    return PBX_TOOL_EXIT_OK;
}

/* Performs the approved operation on obj. */
static int pbx_open_use(const pbx_open_opts *o, int obj)
{
    const char *sel = o->rq.selector;
    if (o->rq.operation == PBX_IPC_OPERATION_ENTRY_METADATA_READ) {
        pbx_obj_info info;
        int st = pbx_obj_stat(obj, &info);
        if (st != 0) {
            return pbx_open_obj_fail(sel, "stat", st);
        }
        printf("size=%llu\ndevice=%llu\ninode=%llu\n",
               (unsigned long long)info.size, (unsigned long long)info.dev,
               (unsigned long long)info.ino);
        return PBX_TOOL_EXIT_OK;
    }
    if (o->rq.operation == PBX_IPC_OPERATION_LIST) {
        return pbx_open_list(obj, sel);
    }
    if (o->rq.operation == PBX_IPC_OPERATION_WRITE) {
        return pbx_open_write(obj, sel);
    }
    bool to_file = o->out != NULL && strcmp(o->out, "-") != 0;
    int fd = to_file
                 ? open(o->out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)
                 : STDOUT_FILENO;
    if (fd < 0) {
        (void)fprintf(stderr, "pbx open: cannot create '%s': %s\n", o->out,
                      strerror(errno));
        return PBX_TOOL_EXIT_FAIL;
    }
    (void)fflush(stdout);
    int rc = pbx_open_read(obj, sel, fd);
    if (to_file && close(fd) != 0 && rc == PBX_TOOL_EXIT_OK) {
        (void)fprintf(stderr, "pbx open: cannot write '%s': %s\n", o->out,
                      strerror(errno));
        rc = PBX_TOOL_EXIT_FAIL;
    }
    return rc;
}

/* The words for a DENIED decision's reason (pbx_ipc_reason). */
static const char *pbx_open_reason(uint16_t reason)
{
    /* Plain words for the reasons a person meets most; every other one
     * (the peer-loss reasons included) by ipc's own name for it. */
    static const char *const words[] = {"no reason given", "by policy",
                                        "by the user", "the prompt timed out"};
    return reason < PBX_ARRAY_LEN(words) ? words[reason]
                                         : pbx_ipc_reason_name(reason);
}

/* Prints the one line that says why the request gave no object. */
static int pbx_open_refused(const pbx_open_opts *o, const pbx_app_grant *g,
                            int st)
{
    const char *sel = o->rq.selector;
    if (st == PBX_APP_E_DENIED) {
        (void)fprintf(stderr, "pbx open: %s: denied (%s)\n", sel,
                      pbx_open_reason(g->reason));
    } else if (st == PBX_APP_E_TIMEOUT) {
        (void)fprintf(stderr,
                      "pbx open: %s: no decision within %llu ms: the "
                      "request was cancelled\n",
                      sel, (unsigned long long)o->rq.wait_ms);
    } else if (st == PBX_APP_E_REFUSED) {
        (void)fprintf(stderr, "pbx open: %s: %s: %s\n", sel,
                      pbx_app_strerror(st), pbx_peer_status_text(g->status));
    } else {
        (void)fprintf(stderr, "pbx open: %s: %s\n", sel, pbx_app_strerror(st));
    }
    return PBX_TOOL_EXIT_FAIL;
}

int pbx_tool_open(int argc, char **argv)
{
    static pbx_open_opts o;
    int rc = pbx_open_parse(argc, argv, &o);
    if (rc != PBX_TOOL_EXIT_OK) {
        return rc;
    }
    static char dir[4096];
    if (pbx_tool_dir_path(NULL, dir, sizeof(dir)) != PBX_TOOL_EXIT_OK) {
        return PBX_TOOL_EXIT_FAIL;
    }
    o.rq.scope_dir = dir;
    pbx_app_grant g;
    int st = pbx_app_open(&o.rq, &g);
    if (st != PBX_APP_OK) {
        return pbx_open_refused(&o, &g, st);
    }
    rc = pbx_open_use(&o, g.obj);
    (void)fflush(stdout);
    bool one_shot = o.rq.lifetime == 0U ||
                    o.rq.lifetime == (uint8_t)PBX_IPC_LIFETIME_ONE_SHOT;
    if (!one_shot) {
        (void)close(g.obj);
        return rc;
    }
    st = pbx_app_consume(&g);
    if (st != PBX_APP_OK) {
        (void)fprintf(stderr, "pbx open: %s: consume failed: %s\n",
                      o.rq.selector, pbx_app_strerror(st));
        return PBX_TOOL_EXIT_FAIL;
    }
    return rc;
}
