/*
 * broker_limit.c: the broker's small decisions that need no kernel
 * object (broker.h): whether a decision shows a person was asked (the
 * prompt budget's charge), the label a request carries, and the
 * descriptor limit that its kept objects need.
 */
#include <errno.h>
#include <string.h>
#include <sys/resource.h>

#include "ipc/pbx_ipc.h"
#include "peers/app/pbx_app.h"
#include "peers/broker/broker.h"

bool pbx_broker_person(uint8_t outcome, uint16_t reason, uint8_t urgency)
{
    /* ttyd allows no exceptional request by rule and powerboxd allows
     * only routine ones without a prompt; a denial says who denied. */
    if (outcome == (uint8_t)PBX_IPC_OUTCOME_APPROVED) {
        return urgency == (uint8_t)PBX_IPC_URGENCY_EXCEPTIONAL;
    }
    return outcome == (uint8_t)PBX_IPC_OUTCOME_DENIED &&
           (reason == (uint16_t)PBX_IPC_REASON_USER ||
            reason == (uint16_t)PBX_IPC_REASON_PROMPT_TIMEOUT);
}

void pbx_broker_label(const char *path, char *out, size_t cap)
{
    size_t max = PBX_IPC_LABEL_LEN_BYTES_MAX;
    if (cap <= max) {
        if (cap > 0U) {
            out[0] = '\0';
        }
        return;
    }
    size_t n = strlen(path);
    if (n <= max) {
        memcpy(out, path, n + 1U);
        return;
    }
    /* The end of a long path names the file; "..." says it was cut. */
    memcpy(out, "...", 3U);
    memcpy(out + 3U, path + n - (max - 3U), max - 3U);
    out[max] = '\0';
}

int pbx_broker_refusal_errno(int app_result)
{
    return app_result == PBX_APP_E_NOT_FOUND ? ENOENT : EACCES;
}

uint64_t pbx_broker_nofile_raise(uint64_t need)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) {
        return 0U;
    }
    if ((uint64_t)rl.rlim_cur >= need) {
        return (uint64_t)rl.rlim_cur;
    }
    rlim_t want = rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need
                      ? rl.rlim_max
                      : (rlim_t)need;
    struct rlimit nr = {want, rl.rlim_max};
    if (setrlimit(RLIMIT_NOFILE, &nr) != 0) {
        return (uint64_t)rl.rlim_cur;
    }
    return (uint64_t)want;
}
