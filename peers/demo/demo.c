/*
 * demo.c: pbx-demo, the program `make run` starts in the sandbox
 * (docs/HOST.md, "Sandboxed programs"; README.md, "make run").
 *
 *   pbx-demo [--direct PATH] [--exceptional] SELECTOR
 *
 * It tells, step by step, what a sandboxed program can do: it tries to
 * open the file itself (PATH, default SELECTOR) and the kernel refuses;
 * it asks the powerbox for a one-shot READ of SELECTOR (the trusted
 * prompt appears on the user's terminal); it reads the file's bytes
 * through the object it was given and prints them; it consumes the grant;
 * and it shows that the same object no longer reads. --exceptional asks
 * with exceptional urgency (a policy that allows routine reads still
 * prompts for it; the e2e scenario `sandbox` uses it). Exit 0 when every
 * step after the first went as told (approved, read, consumed, refused
 * afterwards), 1 when one did not (denied, for example), 2 on a bad
 * command line. Built statically: launchd sandboxes only such programs.
 */
#include "peers/app/pbx_app.h"
#include "peers/app/pbx_obj.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The most file bytes the demo reads and prints. */
#define DEMO_BYTES_MAX 4096U
/* How long the object may still read after the consume was accepted. */
#define DEMO_RETIRE_MS 5000U
/* How long the demo waits for the user's answer. */
#define DEMO_WAIT_MS 120000U

/* Step 1: the file opened directly; says what the kernel answered. */
static void demo_direct(const char *path)
{
    (void)printf("1. I try to open %s myself...\n", path);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        (void)printf("   the kernel let me: I am not sandboxed (run me with "
                     "pbx run --sandbox).\n");
        (void)close(fd);
        return;
    }
    int e = errno;
    (void)printf("   the kernel refused: %s (errno %d). I have no access to "
                 "files of my own.\n",
                 strerror(e), e);
}

/* Step 2: asks for a one-shot READ of selector (exceptional urgency when
 * asked); true when approved. */
static bool demo_ask(const char *selector, bool exceptional, pbx_app_grant *g)
{
    (void)printf("2. I ask the powerbox for one read of %s.\n"
                 "   When the policy asks you, the prompt on your terminal "
                 "names me and the file;\n   only you can answer it.\n",
                 selector);
    (void)fflush(stdout);
    pbx_app_request rq;
    memset(&rq, 0, sizeof(rq));
    rq.selector = selector;
    rq.operation = PBX_IPC_OPERATION_READ;
    rq.lifetime = PBX_IPC_LIFETIME_ONE_SHOT;
    rq.urgency = exceptional ? (uint8_t)PBX_IPC_URGENCY_EXCEPTIONAL
                             : (uint8_t)PBX_IPC_URGENCY_ROUTINE;
    rq.wait_ms = DEMO_WAIT_MS;
    rq.label = "pbx-demo reads one file";
    int st = pbx_app_open(&rq, g);
    if (st != PBX_APP_OK) {
        (void)printf("   no: %s.\n", pbx_app_strerror(st));
        return false;
    }
    /* The job sees the id on the wire; the log and pbx prefix it with
     * powerboxd's incarnation N, which a job does not know. */
    (void)printf("   approved: grant %u.%u (pbx grants: N-%u.%u), one object "
                 "for that file alone.\n",
                 g->grant.index, g->grant.gen, g->grant.index, g->grant.gen);
    return true;
}

/* Step 3: reads the file through obj and prints it; true when it read. */
static bool demo_read(int obj)
{
    static char buf[DEMO_BYTES_MAX + 1U];
    size_t got = 0;
    int st = pbx_obj_read(obj, 0, buf, DEMO_BYTES_MAX, &got);
    if (st != 0) {
        (void)printf("3. Reading through the object failed: %s.\n",
                     pbx_obj_strerror(st));
        return false;
    }
    buf[got] = '\0';
    (void)printf("3. I read the file through the object (%zu bytes):\n", got);
    for (char *line = buf; line != NULL && *line != '\0';) {
        char *nl = strchr(line, '\n');
        (void)printf("   | %.*s\n",
                     (int)(nl != NULL ? (size_t)(nl - line) : strlen(line)),
                     line);
        line = nl != NULL ? nl + 1 : NULL;
    }
    return true;
}

/* Steps 4 and 5: consumes the grant, then reads through a copy of the
 * object's descriptor kept for the purpose until that read fails: the
 * consume is accepted first, and vfsd retires the object when
 * powerboxd's RETIRE reaches it, a moment later (DEMO_RETIRE_MS at most).
 * True when the read failed in time. */
static bool demo_end(pbx_app_grant *g)
{
    int copy = dup(g->obj);
    int st = pbx_app_consume(g);
    if (st != PBX_APP_OK || copy < 0) {
        (void)printf("4. Consuming the grant failed: %s.\n",
                     pbx_app_strerror(st));
        return false;
    }
    (void)printf("4. I am done with it: the one-shot grant is consumed.\n");
    char c = 0;
    size_t got = 0;
    st = 0;
    for (unsigned t = 0; st == 0 && t < DEMO_RETIRE_MS / 10U; t++) {
        st = pbx_obj_read(copy, 0, &c, 1, &got);
        if (st == 0) {
            (void)usleep(10000);
        }
    }
    (void)close(copy);
    if (st == 0) {
        (void)printf("5. The object still reads: the grant did not end!\n");
        return false;
    }
    (void)printf("5. I try to read again through the same object: refused "
                 "(%s).\n",
                 pbx_obj_strerror(st));
    return true;
}

/* The usage line. */
#define DEMO_USAGE "usage: pbx-demo [--direct PATH] [--exceptional] SELECTOR\n"

int main(int argc, char **argv)
{
    const char *direct = NULL;
    bool exceptional = false;
    int i = 1;
    if (argc == 2 &&
        (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
        (void)fputs(DEMO_USAGE, stdout);
        return 0;
    }
    for (int k = 0; k < 2 && i < argc - 1; k++) {
        if (strcmp(argv[i], "--direct") == 0 && i + 2 < argc) {
            direct = argv[i + 1];
            i += 2;
        } else if (strcmp(argv[i], "--exceptional") == 0) {
            exceptional = true;
            i++;
        }
    }
    if (i < argc && argv[i][0] == '-' && strcmp(argv[i], "--direct") != 0 &&
        strcmp(argv[i], "--exceptional") != 0) {
        (void)fprintf(stderr,
                      "pbx-demo: unknown option '%s' (try 'pbx-demo --help')\n",
                      argv[i]);
        return 2;
    }
    if (i != argc - 1 || argv[i][0] == '\0' || argv[i][0] == '-') {
        (void)fputs(DEMO_USAGE, stderr);
        return 2;
    }
    const char *selector = argv[i];
    const char *job = getenv("PBX_JOB");
    (void)printf("pbx-demo: I am job %s. I want to read %s.\n",
                 job != NULL ? job : "(none: not started by pbx run)",
                 selector);
    demo_direct(direct != NULL ? direct : selector);
    pbx_app_grant g;
    memset(&g, 0, sizeof(g));
    g.obj = -1;
    bool ok =
        demo_ask(selector, exceptional, &g) && demo_read(g.obj) && demo_end(&g);
    if (g.obj >= 0) {
        (void)close(g.obj);
    }
    (void)printf(ok ? "pbx-demo: the file was read once, through the grant, "
                      "and the grant is gone.\n"
                    : "pbx-demo: stopped.\n");
    return ok ? 0 : 1;
}
