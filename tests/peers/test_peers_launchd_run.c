/*
 * test_peers_launchd_run.c: `pbx-launchd run --wait-ms N`, the bound on
 * how long run waits for launchd to take its LAUNCH and answer it
 * (peers/launchd/launchd_run.c; default 10000 ms). Values outside
 * 1..3600000 and words are usage errors (exit 2, one line naming the
 * option); a given value is the one run waits with (a listener that never
 * answers: "no answer from launchd within N ms", exit 125); the largest
 * is taken (a listener that hangs up: exit 125, not 2). The e2e harness
 * passes it, scaled, only under PBX_E2E_SLOW (docs/TESTING.md, "Memory
 * checks").
 */
#include "../runner/pbx_test.h"
#include "peers_child.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* Starts pbx-launchd with the NULL-terminated args (at most TP_ARGS_MAX), its
 * standard error to the file err; returns its pid. */
static pid_t tlr_spawn(const char *const *args, const char *err)
{
    int fd = open(err, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    PBX_REQUIRE(fd >= 0);
    pid_t pid = fork();
    PBX_REQUIRE(pid >= 0);
    if (pid == 0) {
        (void)dup2(fd, 2);
        tp_exec_peer("launchd", args);
    }
    (void)close(fd);
    return pid;
}

/* Runs pbx-launchd as tlr_spawn does; returns its exit status (bounded
 * by 30 s: -1 when it did not end). */
static int tlr_run(const char *const *args, const char *err)
{
    return tp_wait_exit(tlr_spawn(args, err), 30000);
}

/* A SOCK_SEQPACKET listener at path (backlog 4) that the test never
 * answers on; returns its descriptor. */
static int tlr_listen(const char *path)
{
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    PBX_REQUIRE(strlen(path) < sizeof(sa.sun_path));
    memcpy(sa.sun_path, path, strlen(path));
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    PBX_REQUIRE(fd >= 0);
    PBX_REQUIRE(bind(fd, (const struct sockaddr *)&sa, sizeof(sa)) == 0);
    PBX_REQUIRE(listen(fd, 4) == 0);
    return fd;
}

PBX_TEST(peers_launchd_run_wait_ms_bounds_and_usage)
{
    const char *dir = tp_tmpdir();
    char ctl[600];
    char err[600];
    char text[2048];
    (void)snprintf(ctl, sizeof(ctl), "%s/none.sock", dir);
    (void)snprintf(err, sizeof(err), "%s/err", dir);
    /* Zero, one past the hour, a word, a sign and an empty value are
     * refused before any connection, each with the option named. */
    static const char *const bad[] = {"0",  "3600001", "x",
                                      "-5", "",        "99999999999999999999"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        const char *args[] = {"run",  "--control", ctl,         "--wait-ms",
                              bad[i], "--",        "/bin/true", NULL};
        PBX_CHECK_EQ(tlr_run(args, err), 2);
        PBX_CHECK(tp_read_file(err, text, sizeof(text)) > 0);
        PBX_CHECK(strstr(text, "--wait-ms") != NULL);
        PBX_CHECK(strstr(text, "1..3600000") != NULL);
    }
    /* The option without a value is a usage error too; the usage line
     * names the default. */
    const char *bare[] = {"run", "--control", ctl, "--wait-ms", NULL};
    PBX_CHECK_EQ(tlr_run(bare, err), 2);
    PBX_CHECK(tp_read_file(err, text, sizeof(text)) > 0);
    PBX_CHECK(strstr(text, "default 10000") != NULL);
}

PBX_TEST(peers_launchd_run_waits_as_long_as_wait_ms_says)
{
    const char *dir = tp_tmpdir();
    char ctl[600];
    char err[600];
    char text[2048];
    (void)snprintf(ctl, sizeof(ctl), "%s/mute.sock", dir);
    (void)snprintf(err, sizeof(err), "%s/err", dir);
    int l = tlr_listen(ctl);
    /* The listener takes the connection into its backlog and never
     * answers: run gives up after the wait given, and says so. */
    const char *mute[] = {"run", "--control", ctl,         "--wait-ms",
                          "250", "--",        "/bin/true", NULL};
    PBX_CHECK_EQ(tlr_run(mute, err), 125);
    PBX_CHECK(tp_read_file(err, text, sizeof(text)) > 0);
    PBX_CHECK(strstr(text, "no answer from launchd within 250 ms") != NULL);
    /* The largest value is taken: the listener accepts and hangs up, and
     * run ends with 125 (refused), not 2 (usage). */
    int c = accept(l, NULL, NULL);
    PBX_CHECK(c >= 0);
    if (c >= 0) {
        (void)close(c);
    }
    const char *most[] = {"run",     "--control", ctl,         "--wait-ms",
                          "3600000", "--",        "/bin/true", NULL};
    pid_t pid = tlr_spawn(most, err);
    PBX_REQUIRE(tp_readable(l, 20000));
    c = accept(l, NULL, NULL);
    PBX_REQUIRE(c >= 0);
    PBX_CHECK(tp_readable(c, 20000));
    (void)close(c);
    PBX_CHECK_EQ(tp_wait_exit(pid, 30000), 125);
    PBX_CHECK(tp_read_file(err, text, sizeof(text)) > 0);
    PBX_CHECK(strstr(text, "launchd closed the control connection") != NULL);
    (void)close(l);
}
