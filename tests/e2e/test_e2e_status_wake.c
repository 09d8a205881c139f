/*
 * test_e2e_status_wake.c: a wake the kernel refuses for now never ends
 * the real powerboxd (issue 22 item 6). launchd's wake route is a
 * datagram pair; the harness fills launchd's receive queue before the
 * start, so the wake of the next decision meets EAGAIN. powerboxd keeps
 * the decision, waits for the route to become writable and sends the
 * wake once launchd reads: it arrives after every datagram queued before
 * it, and powerboxd is still running. (A wake refused for good, exit 67,
 * cannot happen on Linux; tests/rt/test_rt_notify.c shows it through the
 * runtime loop, docs/STATUS.md says why.)
 */
#define _GNU_SOURCE
#include "../runner/pbx_test.h"
#include "e2e_harness.h"

#include "ipc/pbx_ipc.h"
#include "sha2/pbx_sha2.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

/** The job the request is for; its wake names it. */
#define SW_JOB 11U

/** A filler datagram's bytes: no frame begins so. */
static const char sw_filler[4] = {'f', 'u', 'l', 'l'};

/* launchd's broker: BEGIN one routine request that is never committed,
 * so the OPEN deadline ends it and launchd must be woken. Stores the
 * request's identity in *id. */
static bool sw_begin(int broker, pbx_ipc_id *id)
{
    static const char sel[] = "docs/readme.txt";
    uint8_t buf[PBX_IPC_FRAME_BYTES_MAX];
    pbx_ipc_begin b;
    pbx_ipc_frame f;
    size_t n = 0;
    memset(&b, 0, sizeof(b));
    b.ctx.session = 7;
    b.ctx.job_id = SW_JOB;
    b.ctx.job_gen = 1;
    b.ctx.realm = 3;
    b.ctx.operation = PBX_IPC_OPERATION_READ;
    b.ctx.object_class = PBX_IPC_CLASS_FILE;
    b.ctx.lifetime = PBX_IPC_LIFETIME_ONE_SHOT;
    b.ctx.mode = PBX_IPC_MODE_INSTALL;
    b.ctx.urgency = PBX_IPC_URGENCY_ROUTINE;
    b.ctx.entry.len = 7;
    memcpy(b.ctx.entry.bytes, "bin/cat", 7);
    b.target.process_id = 42;
    b.target.process_gen = 5;
    b.target.slot = 20;
    b.selector_len = (uint32_t)(sizeof(sel) - 1U);
    (void)pbx_sha2_digest((const uint8_t *)sel, b.selector_len,
                          b.selector_digest);
    b.label.len = 6;
    memcpy(b.label.bytes, "readme", 6);
    if (pbx_ipc_begin_encode(&b, buf, sizeof(buf), &n) != PBX_OK ||
        !e2e_send(broker, buf, n, NULL, 0)) {
        return false;
    }
    long got = e2e_recv(broker, buf, sizeof(buf), NULL, 0, NULL, 5000);
    if (got <= 0 || pbx_ipc_frame_decode(buf, (size_t)got, 0, &f) != PBX_OK ||
        f.status != 0U) {
        return false;
    }
    *id = f.request;
    return true;
}

/* Whether the datagram of len bytes in buf is the wake of request id. */
static bool sw_is_wake(const uint8_t *buf, long len, pbx_ipc_id id)
{
    pbx_ipc_frame f;
    pbx_ipc_wake w;
    return len > 0 && pbx_ipc_frame_decode(buf, (size_t)len, 0, &f) == PBX_OK &&
           f.request.index == id.index && f.request.gen == id.gen &&
           pbx_ipc_wake_decode(&f, &w) == PBX_OK && w.job_id == SW_JOB;
}

PBX_TEST(e2e_wake_refused_for_now_is_sent_once_launchd_reads)
{
    e2e_proc p;
    pbx_ipc_id id = {0, 0};
    uint8_t buf[PBX_IPC_FRAME_BYTES_MAX];
    int st = 0;
    PBX_REQUIRE(e2e_prepare(&p, E2E_PBX1_GOOD));
    /* A copy of powerboxd's own end of the wake route (slot 8) fills
     * launchd's queue until the kernel refuses one more. */
    int fill = dup(p.theirs[5]);
    PBX_REQUIRE(fill >= 0);
    int queued = 0;
    for (int i = 0; i < 100000; i++) {
        if (send(fill, sw_filler, sizeof(sw_filler),
                 MSG_DONTWAIT | MSG_NOSIGNAL) != (ssize_t)sizeof(sw_filler)) {
            PBX_CHECK(errno == EAGAIN || errno == EWOULDBLOCK);
            break;
        }
        queued++;
    }
    PBX_REQUIRE(queued > 0);
    PBX_REQUIRE(e2e_start(&p));
    PBX_REQUIRE(e2e_wait_ready(&p));
    PBX_REQUIRE(sw_begin(p.broker, &id));
    /* The OPEN deadline ends the request; its decision line is logged
     * as its wake is first attempted, into the full queue. */
    PBX_CHECK(e2e_log_wait(&p, "event=decision", 1, 20000));
    PBX_CHECK(e2e_log_count(&p, "outcome=cancelled") == 1);
    PBX_CHECK_EQ(waitpid(p.pid, &st, WNOHANG), 0);
    /* launchd reads: first everything queued before the wake, then the
     * wake itself, sent once the route had room again. */
    int fillers = 0;
    bool woke = false;
    for (int i = 0; i <= queued && !woke; i++) {
        long n = e2e_recv(p.launchd, buf, sizeof(buf), NULL, 0, NULL, 10000);
        if (n == (long)sizeof(sw_filler) &&
            memcmp(buf, sw_filler, sizeof(sw_filler)) == 0) {
            fillers++;
        } else {
            woke = sw_is_wake(buf, n, id);
            PBX_CHECK(woke);
        }
    }
    PBX_CHECK_EQ(fillers, queued);
    PBX_CHECK(woke);
    /* Once, and powerboxd runs on: the refusal ended nothing. */
    PBX_CHECK(e2e_recv(p.launchd, buf, sizeof(buf), NULL, 0, NULL, 300) < 0);
    PBX_CHECK_EQ(waitpid(p.pid, &st, WNOHANG), 0);
    PBX_CHECK_EQ(e2e_log_count(&p, "fail-stop"), 0);
    (void)close(fill);
    e2e_close(&p);
}
