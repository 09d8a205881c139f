/*
 * spoof.c: pbx-test-spoof, the look-alike prompt of the e2e scenario
 * any-spoof (docs/HOST.md, "The job's terminal"). Run sandboxed with the
 * user's terminal as its stdio:
 *
 *   pbx-test-spoof SELECTOR
 *
 * It puts its terminal in raw mode, then a child asks for an exceptional
 * one-shot READ of SELECTOR (so a real prompt shows) while the program itself
 * keeps printing a look-alike prompt, escape sequences included (screen clears,
 * cursor moves, colours), each block marked SPOOF-BLOCK, until the child's
 * decision is in. Then it prints "spoof: raw ok" (or "failed": its raw mode),
 * "spoof: decision approved" (or "denied"), "spoof: read N key(s) meant for the
 * prompt" (whatever keys reached it without waiting), its own fake prompt
 * "SPOOF-ASK Approve docs/secret.txt? [y/n]", and "spoof: got KEY" for
 * the one key it then reads. It holds no grant for docs/secret.txt
 * whatever the answer. Exit 0, or 3 on a bad command line.
 */
#define _GNU_SOURCE
#include "peers/app/pbx_app.h"
#include "peers/app/pbx_obj.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

/* How long the child's request waits for its decision. */
#define SPOOF_WAIT_MS 60000U
/* At most this many look-alike blocks are printed (the loop's bound). */
#define SPOOF_BLOCKS_MAX 200000U

/* The look-alike: clears the screen, draws a prompt like ttyd's in
 * reverse video, leaves the cursor after it. */
static const char spoof_block[] =
    "\033[2J\033[H\033[7m=== powerboxd trusted request ===\033[m\r\n"
    "  program : pbx-test-spoof\r\n"
    "  selector: \"docs/secret.txt\"\r\n"
    "Approve? [y/n] SPOOF-BLOCK \033[?25l";

/* Writes s in full (blocking: while the relay holds the output this
 * waits, which is the point). */
static void spoof_out(const char *s, size_t n)
{
    size_t done = 0;
    for (int i = 0; i < 1024 && done < n; i++) {
        ssize_t w = write(1, s + done, n - done);
        if (w < 0 && errno != EINTR) {
            return;
        }
        done += w > 0 ? (size_t)w : 0U;
    }
}

/* The child: the real request; exit 0 when approved. */
static void spoof_ask(const char *selector)
{
    pbx_app_request rq;
    memset(&rq, 0, sizeof(rq));
    rq.selector = selector;
    rq.operation = PBX_IPC_OPERATION_READ;
    rq.lifetime = PBX_IPC_LIFETIME_ONE_SHOT;
    rq.urgency = (uint8_t)PBX_IPC_URGENCY_EXCEPTIONAL;
    rq.wait_ms = SPOOF_WAIT_MS;
    rq.label = "pbx-test-spoof reads one file";
    pbx_app_grant g;
    memset(&g, 0, sizeof(g));
    g.obj = -1;
    int st = pbx_app_open(&rq, &g);
    _exit(st == PBX_APP_OK ? 0 : 1);
}

/* Sleeps ms milliseconds. */
static void spoof_nap(long ms)
{
    struct timespec ts = {0, ms * 1000L * 1000L};
    (void)nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        (void)fprintf(stderr, "usage: pbx-test-spoof SELECTOR\n");
        return 3;
    }
    struct termios t;
    bool raw = tcgetattr(0, &t) == 0;
    if (raw) {
        cfmakeraw(&t);
        raw = tcsetattr(0, TCSANOW, &t) == 0;
    }
    char line[192];
    int n = 0;
    pid_t kid = fork();
    if (kid == 0) {
        spoof_ask(argv[1]);
    }
    int ws = 0;
    bool done = kid < 0;
    for (unsigned i = 0; i < SPOOF_BLOCKS_MAX && !done; i++) {
        spoof_out(spoof_block, sizeof(spoof_block) - 1U);
        spoof_nap(5);
        done = waitpid(kid, &ws, WNOHANG) == kid;
    }
    bool approved = done && kid > 0 && WIFEXITED(ws) && WEXITSTATUS(ws) == 0;
    /* Whatever keys reached the program by now, without waiting. */
    int fl = fcntl(0, F_GETFL);
    (void)fcntl(0, F_SETFL, fl | O_NONBLOCK);
    char keys[64];
    ssize_t got = read(0, keys, sizeof(keys));
    (void)fcntl(0, F_SETFL, fl);
    n = snprintf(line, sizeof(line),
                 "\033[?25h\r\nspoof: raw %s\r\nspoof: decision %s\r\n"
                 "spoof: read %zd key(s) meant for the prompt\r\nSPOOF-ASK "
                 "Approve docs/secret.txt? [y/n] ",
                 raw ? "ok" : "failed", approved ? "approved" : "denied",
                 got > 0 ? got : 0);
    spoof_out(line, (size_t)n);
    char k = '?';
    for (int i = 0; i < 64 && read(0, &k, 1) != 1; i++) {
        spoof_nap(50);
    }
    n = snprintf(line, sizeof(line), "\r\nspoof: got %c\r\n",
                 k >= ' ' && k < 127 ? k : '?');
    spoof_out(line, (size_t)n);
    return 0;
}
