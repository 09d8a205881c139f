/*
 * test_peers_broker_limit.c: the broker's decisions that need no kernel
 * object (peers/broker/broker_limit.c, docs/HOST.md "Brokered opens" and
 * "The prompt budget"): which decisions charge the prompt budget, the
 * label's cut, and the descriptor limit raised for the kept objects.
 */
#include "../../ipc/pbx_ipc.h"
#include "../../peers/app/pbx_app.h"
#include "../../peers/broker/broker.h"
#include "../runner/pbx_test.h"

#include <errno.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

PBX_TEST(peers_broker_charges_only_what_a_person_answered)
{
    const uint8_t ok = (uint8_t)PBX_IPC_OUTCOME_APPROVED;
    const uint8_t no = (uint8_t)PBX_IPC_OUTCOME_DENIED;
    const uint8_t rt = (uint8_t)PBX_IPC_URGENCY_ROUTINE;
    const uint8_t ex = (uint8_t)PBX_IPC_URGENCY_EXCEPTIONAL;
    /* A routine approval, by a rule or a person: never charged. */
    PBX_CHECK(!pbx_broker_person(ok, PBX_IPC_REASON_NONE, rt));
    PBX_CHECK(!pbx_broker_person(ok, PBX_IPC_REASON_USER, rt));
    /* An exceptional approval: only a person gives one. */
    PBX_CHECK(pbx_broker_person(ok, PBX_IPC_REASON_NONE, ex));
    /* Denials by the person or the prompt's deadline, either urgency. */
    PBX_CHECK(pbx_broker_person(no, PBX_IPC_REASON_USER, rt));
    PBX_CHECK(pbx_broker_person(no, PBX_IPC_REASON_PROMPT_TIMEOUT, ex));
    /* A rule's or a peer's denial asked nobody. */
    PBX_CHECK(!pbx_broker_person(no, PBX_IPC_REASON_POLICY, ex));
    PBX_CHECK(!pbx_broker_person(no, PBX_IPC_REASON_PEER_FAILED, rt));
}

PBX_TEST(peers_broker_label_keeps_the_end_of_a_long_path)
{
    char path[200];
    char out[PBX_IPC_LABEL_LEN_BYTES_MAX + 1U];
    /* 64 bytes: kept whole. */
    memset(path, 'a', 64);
    path[64] = '\0';
    pbx_broker_label(path, out, sizeof(out));
    PBX_CHECK(strcmp(out, path) == 0);
    /* 65 bytes and more: "..." and the last 61 bytes, 64 in all. */
    memset(path, 'a', 150);
    memcpy(path + 150, "/the/end/name.txt", 18);
    pbx_broker_label(path, out, sizeof(out));
    PBX_CHECK_EQ(strlen(out), (size_t)PBX_IPC_LABEL_LEN_BYTES_MAX);
    PBX_CHECK(strncmp(out, "...", 3) == 0);
    PBX_CHECK(strcmp(out + 3, path + strlen(path) - 61U) == 0);
    /* Too small an output: empty. */
    pbx_broker_label(path, out, 10U);
    PBX_CHECK_EQ(out[0], '\0');
}

/* In a child (the limits are the process's): the soft limit lowered to
 * soft and the hard to hard, then raised for need; exits 0 when the
 * limit in force and the returned one are want. */
static int tb_raise_in_child(rlim_t soft, rlim_t hard, uint64_t need,
                             uint64_t want)
{
    pid_t pid = fork();
    if (pid == 0) {
        struct rlimit rl = {soft, hard};
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
            _exit(2);
        }
        uint64_t got = pbx_broker_nofile_raise(need);
        struct rlimit now;
        _exit(getrlimit(RLIMIT_NOFILE, &now) == 0 && got == want &&
                      (uint64_t)now.rlim_cur == want
                  ? 0
                  : 1);
    }
    int ws = 0;
    return pid > 0 && waitpid(pid, &ws, 0) == pid && WIFEXITED(ws)
               ? WEXITSTATUS(ws)
               : -1;
}

PBX_TEST(peers_broker_raises_its_descriptor_limit_for_its_objects)
{
    struct rlimit rl;
    PBX_REQUIRE(getrlimit(RLIMIT_NOFILE, &rl) == 0);
    uint64_t need = PBX_BROKER_OBJS_MAX + PBX_BROKER_FDS_SPARE;
    uint64_t hard = (uint64_t)rl.rlim_max;
    uint64_t want = rl.rlim_max != RLIM_INFINITY && hard < need ? hard : need;
    /* A soft limit of 32 under the hard limit: raised to what is needed
     * (the hard limit when that is lower). */
    PBX_CHECK_EQ(tb_raise_in_child(32, rl.rlim_max, need, want), 0);
    /* A hard limit below the need: raised to it, no further. */
    PBX_CHECK_EQ(tb_raise_in_child(50, 100, need, 100U), 0);
    /* Already enough: unchanged. */
    PBX_CHECK_EQ(tb_raise_in_child(60, 100, 40U, 60U), 0);
}

PBX_TEST(peers_broker_not_found_at_vfsd_is_enoent)
{
    PBX_CHECK_EQ(pbx_broker_refusal_errno(PBX_APP_E_NOT_FOUND), ENOENT);
    PBX_CHECK_EQ(pbx_broker_refusal_errno(PBX_APP_E_REFUSED), EACCES);
    PBX_CHECK_EQ(pbx_broker_refusal_errno(PBX_APP_E_TRANSPORT), EACCES);
}
