/*
 * client_repeat.c: pbx-client's --repeat benchmark loop and its latency
 * statistics, and the cancel and consume commands. See client.c.
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "peers/app/pbx_app.h"
#include "peers/client/client.h"
#include "peers/common/pbx_peer_io.h"
#include "peers/lib/pbx_peer.h"
#include "peers/lib/pbx_peer_vfs.h"

/* Orders two latencies for qsort. */
static int client_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a;
    uint64_t y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* The CPU time this process has used so far, in ns (user and system):
 * a launched job is not the benchmark's child, so it reports its own. */
static uint64_t client_cpu_ns(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0) {
        return 0U;
    }
    return ((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) *
               1000000000U +
           ((uint64_t)ru.ru_utime.tv_usec + (uint64_t)ru.ru_stime.tv_usec) *
               1000U;
}

/* Prints the statistics of the n sorted latencies in ns (n > 0). */
static void client_stats(const uint64_t *ns, uint64_t n, uint64_t total_ns)
{
    uint64_t sum = 0;
    for (uint64_t i = 0; i < n; i++) {
        sum += ns[i];
    }
    /* The nearest-rank percentiles: the smallest sample with at least
     * that share of the samples at or below it. */
    uint64_t p50 = (n * 50U + 99U) / 100U;
    uint64_t p99 = (n * 99U + 99U) / 100U;
    printf("repeat=%llu\nmin_ns=%llu\nmedian_ns=%llu\np99_ns=%llu\n"
           "max_ns=%llu\nmean_ns=%llu\nwall_ns_per_lifecycle=%llu\n"
           "decisions_per_lifecycle=%.3f\nmismatches=%llu\n"
           "busy_retries=%llu\ncpu_ns_client=%llu\n",
           (unsigned long long)n, (unsigned long long)ns[0],
           (unsigned long long)ns[p50 - 1U], (unsigned long long)ns[p99 - 1U],
           (unsigned long long)ns[n - 1U], (unsigned long long)(sum / n),
           (unsigned long long)(total_ns / n),
           (double)g_conn.decision_calls / (double)n,
           (unsigned long long)g_mismatches, (unsigned long long)g_busy_retries,
           (unsigned long long)(client_cpu_ns() / n));
}

/* --repeat: o->repeat whole one-shot lifecycles on the one connection,
 * each timed from sending BEGIN to CONSUME's reply. */
int client_repeat(const client_opts *o)
{
    if (!o->then_consume || o->lifetime != PBX_IPC_LIFETIME_ONE_SHOT) {
        pbx_peer_log("pbx-client", "--repeat needs --then consume and a "
                                   "one-shot lifetime");
        return 2;
    }
    uint64_t *ns = calloc((size_t)o->repeat, sizeof(*ns));
    if (ns == NULL) {
        pbx_peer_log("pbx-client", "--repeat: out of memory");
        return 1;
    }
    g_quiet = true;
    uint64_t start = pbx_app_now_ns();
    for (uint64_t i = 0; i < o->repeat; i++) {
        uint64_t t0 = pbx_app_now_ns();
        int rc = client_request(o);
        ns[i] = pbx_app_now_ns() - t0;
        if (rc != 0) {
            printf("failed_at=%llu\nmismatches=%llu\nbusy_retries=%llu\n",
                   (unsigned long long)i, (unsigned long long)g_mismatches,
                   (unsigned long long)g_busy_retries);
            free(ns);
            return rc;
        }
    }
    uint64_t total = pbx_app_now_ns() - start;
    qsort(ns, (size_t)o->repeat, sizeof(*ns), client_cmp_u64);
    client_stats(ns, o->repeat, total);
    free(ns);
    return g_mismatches == 0U ? 0 : 1;
}

/* cancel (exact request, or job and session correlation) and consume. */
int client_simple(const client_opts *o, bool cancel)
{
    size_t n = 0;
    pbx_err e = PBX_OK;
    uint16_t op = cancel ? PBX_IPC_OP_CANCEL : PBX_IPC_OP_CONSUME;
    if (cancel) {
        pbx_ipc_cancel c;
        memset(&c, 0, sizeof(c));
        c.by_correlation = !o->have_pair;
        c.request.index = (uint32_t)o->a;
        c.request.gen = (uint32_t)o->b;
        c.job_id = o->have_pair ? 0U : o->cl.job_id;
        c.job_gen = o->have_pair ? 0U : (uint32_t)o->cl.job_gen;
        c.session = o->have_pair ? 0U : o->cl.session;
        e = pbx_ipc_cancel_encode(&c, g_conn.buf, sizeof(g_conn.buf), &n);
    } else {
        pbx_ipc_consume c = {{(uint32_t)o->a, (uint32_t)o->b}};
        e = pbx_ipc_consume_encode(&c, g_conn.buf, sizeof(g_conn.buf), &n);
    }
    if (e != PBX_OK) {
        pbx_peer_log("pbx-client", "invalid %s: %s",
                     cancel ? "cancel" : "consume", pbx_err_text(e));
        return 2;
    }
    const pbx_ipc_frame *f =
        pbx_app_conn_call(&g_conn, n, -1, cancel ? "CANCEL" : "CONSUME", NULL);
    if (f == NULL ||
        pbx_ipc_empty_decode(f, op | PBX_IPC_REPLY_BIT) != PBX_OK) {
        return 1;
    }
    printf("%s=accepted\n", cancel ? "cancel" : "consume");
    return 0;
}
