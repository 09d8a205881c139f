/*
 * test_peers_broker.c: the open broker's decisions (peers/lib/
 * pbx_peer_broker.h): where a path lies, what open flags ask for, which
 * paths reopen a descriptor, joining a relative path, and the per-job
 * prompt rate and burst.
 */
#define _GNU_SOURCE
#include "../../peers/lib/pbx_peer_broker.h"
#include "../runner/pbx_test.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>

/* A job whose scope is /home/u/docs and whose mount is /run/pbx/fuse. */
static void tb_places(pbx_peer_broker_places *pl)
{
    memset(pl, 0, sizeof(*pl));
    pl->scope = "/home/u/docs";
    pl->mount = "/run/pbx/fuse";
    pbx_peer_broker_default_profile(pl);
}

PBX_TEST(peers_broker_places_a_path_on_component_boundaries)
{
    pbx_peer_broker_places pl;
    tb_places(&pl);
    const char *rest = NULL;
    PBX_CHECK_EQ(pbx_peer_broker_place(&pl, "/home/u/docs/a.txt", &rest),
                 PBX_PEER_BROKER_SCOPE);
    PBX_CHECK(rest != NULL && strcmp(rest, "a.txt") == 0);
    PBX_CHECK_EQ(pbx_peer_broker_place(&pl, "/home/u/docs//x/../b", &rest),
                 PBX_PEER_BROKER_SCOPE);
    PBX_CHECK(rest != NULL && strcmp(rest, "x/../b") == 0);
    /* A sibling whose name starts the same is not inside. */
    PBX_CHECK_EQ(pbx_peer_broker_place(&pl, "/home/u/docsx/a", &rest),
                 PBX_PEER_BROKER_OUTSIDE);
    PBX_CHECK(rest == NULL);
    PBX_CHECK_EQ(pbx_peer_broker_place(&pl, "/home/u/.ssh/id", &rest),
                 PBX_PEER_BROKER_OUTSIDE);
    /* The mount, inside it or above it, is refused before anything. */
    PBX_CHECK_EQ(pbx_peer_broker_place(&pl, "/run/pbx/fuse/1", &rest),
                 PBX_PEER_BROKER_MOUNT);
    PBX_CHECK_EQ(pbx_peer_broker_place(&pl, "/run/pbx", &rest),
                 PBX_PEER_BROKER_MOUNT);
    PBX_CHECK_EQ(pbx_peer_broker_place(&pl, "/run/pbx/other", &rest),
                 PBX_PEER_BROKER_OUTSIDE);
    PBX_CHECK_EQ(pbx_peer_broker_place(&pl, "/usr/lib/libc.so.6", &rest),
                 PBX_PEER_BROKER_SYSTEM);
    PBX_CHECK_EQ(pbx_peer_broker_place(&pl, "/dev/null", &rest),
                 PBX_PEER_BROKER_SYSTEM);
    PBX_CHECK_EQ(pbx_peer_broker_place(&pl, "/dev/nullx", &rest),
                 PBX_PEER_BROKER_OUTSIDE);
    PBX_CHECK_EQ(pbx_peer_broker_place(&pl, "/dev/sda", &rest),
                 PBX_PEER_BROKER_OUTSIDE);
    /* A scope under the profile is still the scope's. */
    pl.scope = "/usr/share/doc";
    PBX_CHECK_EQ(pbx_peer_broker_place(&pl, "/usr/share/doc/x", &rest),
                 PBX_PEER_BROKER_SCOPE);
}

/* Paths are placed by their text, ".." never folded: both ways out fail
 * closed (a system path climbing into the user's files goes on to
 * Landlock, which refuses it; a scope path climbing out is resolved
 * beneath the scope, which refuses the walk). */
PBX_TEST(peers_broker_places_a_path_by_its_text)
{
    pbx_peer_broker_places pl;
    tb_places(&pl);
    const char *rest = NULL;
    PBX_CHECK_EQ(pbx_peer_broker_place(&pl, "/usr/../home/u/docs/a.txt", &rest),
                 PBX_PEER_BROKER_SYSTEM);
    PBX_CHECK_EQ(
        pbx_peer_broker_place(&pl, "/home/u/docs/../../../usr/lib/x", &rest),
        PBX_PEER_BROKER_SCOPE);
    PBX_CHECK(rest != NULL && strcmp(rest, "../../../usr/lib/x") == 0);
}

PBX_TEST(peers_broker_flags_map_to_operations_and_refusals)
{
    uint8_t op = 0;
    PBX_CHECK_EQ(pbx_peer_broker_flags(O_RDONLY, true, &op), 0);
    PBX_CHECK_EQ(op, PBX_PEER_BROKER_OP_READ);
    PBX_CHECK_EQ(pbx_peer_broker_flags(O_RDONLY | O_CLOEXEC, true, &op), 0);
    PBX_CHECK_EQ(op, PBX_PEER_BROKER_OP_READ);
    PBX_CHECK_EQ(pbx_peer_broker_flags(O_WRONLY, true, &op), 0);
    PBX_CHECK_EQ(op, PBX_PEER_BROKER_OP_WRITE);
    PBX_CHECK_EQ(pbx_peer_broker_flags(O_RDWR, true, &op), 0);
    PBX_CHECK_EQ(op, PBX_PEER_BROKER_OP_WRITE);
    /* O_TRUNC on a read-only open is a write. */
    op = 0;
    PBX_CHECK_EQ(pbx_peer_broker_flags(O_RDONLY | O_TRUNC, true, &op), 0);
    PBX_CHECK_EQ(op, PBX_PEER_BROKER_OP_WRITE);
    PBX_CHECK_EQ(pbx_peer_broker_flags(O_WRONLY | O_CREAT, false, &op), 0);
    PBX_CHECK_EQ(op, PBX_PEER_BROKER_OP_CREATE);
    PBX_CHECK_EQ(pbx_peer_broker_flags(O_WRONLY | O_CREAT, true, &op), 0);
    PBX_CHECK_EQ(op, PBX_PEER_BROKER_OP_WRITE);
    PBX_CHECK_EQ(pbx_peer_broker_flags(O_WRONLY | O_CREAT | O_EXCL, true, &op),
                 EEXIST);
    PBX_CHECK_EQ(pbx_peer_broker_flags(O_RDONLY, false, &op), ENOENT);
    PBX_CHECK_EQ(pbx_peer_broker_flags(O_PATH, true, &op), EACCES);
    PBX_CHECK_EQ(pbx_peer_broker_flags(O_RDONLY | O_DIRECTORY, true, &op),
                 EACCES);
    PBX_CHECK_EQ(pbx_peer_broker_flags(O_RDWR | O_TMPFILE, true, &op),
                 EOPNOTSUPP);
    PBX_CHECK_EQ(pbx_peer_broker_flags(3U, true, &op), EINVAL);
}

PBX_TEST(peers_broker_recognises_a_reopen_of_the_process_own_descriptor)
{
    uint32_t fd = 99U;
    PBX_CHECK(pbx_peer_broker_fd_path("/proc/self/fd/5", 100U, 101U, &fd));
    PBX_CHECK_EQ(fd, 5U);
    PBX_CHECK(
        pbx_peer_broker_fd_path("/proc/thread-self/fd/7", 100U, 101U, &fd));
    PBX_CHECK_EQ(fd, 7U);
    PBX_CHECK(pbx_peer_broker_fd_path("/proc/100/fd/3", 100U, 101U, &fd));
    PBX_CHECK_EQ(fd, 3U);
    PBX_CHECK(
        pbx_peer_broker_fd_path("/proc/100/task/101/fd/4", 100U, 101U, &fd));
    PBX_CHECK_EQ(fd, 4U);
    /* Another process's table, another thread's, or not a number. */
    PBX_CHECK(!pbx_peer_broker_fd_path("/proc/1/fd/3", 100U, 101U, &fd));
    PBX_CHECK(
        !pbx_peer_broker_fd_path("/proc/100/task/102/fd/3", 100U, 101U, &fd));
    PBX_CHECK(!pbx_peer_broker_fd_path("/proc/self/fd/x", 100U, 101U, &fd));
    PBX_CHECK(!pbx_peer_broker_fd_path("/proc/self/fd/3/x", 100U, 101U, &fd));
    PBX_CHECK(
        !pbx_peer_broker_fd_path("/proc/self/fd/99999999999", 100U, 101U, &fd));
    PBX_CHECK(!pbx_peer_broker_fd_path("/proc/self/fdinfo/3", 100U, 101U, &fd));
}

/* The kernel reads a /proc number without a leading zero (fs/proc's
 * name_to_int): "/proc/self/fd/05" names no descriptor, so the broker
 * must not take it for a reopen of descriptor 5 (found by fuzz_broker). */
PBX_TEST(peers_broker_reopen_numbers_are_written_as_the_kernel_reads_them)
{
    uint32_t fd = 99U;
    PBX_CHECK(!pbx_peer_broker_fd_path("/proc/self/fd/05", 100U, 101U, &fd));
    PBX_CHECK(
        !pbx_peer_broker_fd_path("/proc/thread-self/fd/00", 100U, 101U, &fd));
    PBX_CHECK(!pbx_peer_broker_fd_path("/proc/0100/fd/3", 100U, 101U, &fd));
    PBX_CHECK(
        !pbx_peer_broker_fd_path("/proc/100/task/0101/fd/3", 100U, 101U, &fd));
    PBX_CHECK_EQ(fd, 99U);
    PBX_CHECK(pbx_peer_broker_fd_path("/proc/self/fd/0", 100U, 101U, &fd));
    PBX_CHECK_EQ(fd, 0U);
}

PBX_TEST(peers_broker_maps_the_process_own_proc_entry_to_proc_self)
{
    char out[64];
    PBX_CHECK(
        pbx_peer_broker_proc_own("/proc/100/status", 100U, out, sizeof(out)));
    PBX_CHECK(strcmp(out, "/proc/self/status") == 0);
    PBX_CHECK(pbx_peer_broker_proc_own("/proc/100", 100U, out, sizeof(out)));
    PBX_CHECK(strcmp(out, "/proc/self") == 0);
    PBX_CHECK(pbx_peer_broker_proc_own("/proc/100/task/101/stat", 100U, out,
                                       sizeof(out)));
    PBX_CHECK(strcmp(out, "/proc/self/task/101/stat") == 0);
    /* Another process, a longer number, a leading zero, no boundary, a
     * rewrite that does not fit: untouched. */
    static const char *const no[] = {"/proc/1/status",    "/proc/1000/status",
                                     "/proc/0100/status", "/proc/100x",
                                     "/proc/self/status", "/etc/100"};
    for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
        out[0] = '\0';
        PBX_CHECK(!pbx_peer_broker_proc_own(no[i], 100U, out, sizeof(out)));
        PBX_CHECK_EQ(out[0], '\0');
    }
    PBX_CHECK(!pbx_peer_broker_proc_own("/proc/100/status", 100U, out, 17U));
    PBX_CHECK(pbx_peer_broker_proc_own("/proc/100/status", 100U, out, 18U));
}

PBX_TEST(peers_broker_joins_relative_paths_and_bounds_them)
{
    char out[16];
    PBX_CHECK_EQ(pbx_peer_broker_join("/a/b", "c", out, sizeof(out)), PBX_OK);
    PBX_CHECK(strcmp(out, "/a/b/c") == 0);
    PBX_CHECK_EQ(pbx_peer_broker_join("/", "c", out, sizeof(out)), PBX_OK);
    PBX_CHECK(strcmp(out, "/c") == 0);
    PBX_CHECK_EQ(pbx_peer_broker_join("/a", "/etc/x", out, sizeof(out)),
                 PBX_OK);
    PBX_CHECK(strcmp(out, "/etc/x") == 0);
    PBX_CHECK_EQ(
        pbx_peer_broker_join("/abcdefgh", "ijklmnop", out, sizeof(out)),
        PBX_E_BASE_OVERFLOW);
    PBX_CHECK(out[0] == '\0');
}

PBX_TEST(peers_broker_rate_allows_a_burst_then_one_per_period)
{
    pbx_peer_broker_rate r;
    pbx_peer_broker_rate_init(&r, 3U, 1000U, 5000U);
    PBX_CHECK(pbx_peer_broker_rate_take(&r, 5000U));
    PBX_CHECK(pbx_peer_broker_rate_take(&r, 5000U));
    PBX_CHECK(pbx_peer_broker_rate_take(&r, 5000U));
    PBX_CHECK(!pbx_peer_broker_rate_take(&r, 5000U));
    PBX_CHECK(!pbx_peer_broker_rate_take(&r, 5999U));
    PBX_CHECK(pbx_peer_broker_rate_take(&r, 6000U));
    PBX_CHECK(!pbx_peer_broker_rate_take(&r, 6500U));
    /* A long pause refills the burst, never more. */
    PBX_CHECK(pbx_peer_broker_rate_take(&r, 100000U));
    PBX_CHECK(pbx_peer_broker_rate_take(&r, 100000U));
    PBX_CHECK(pbx_peer_broker_rate_take(&r, 100000U));
    PBX_CHECK(!pbx_peer_broker_rate_take(&r, 100000U));
    /* A clock going backwards refills nothing. */
    PBX_CHECK(!pbx_peer_broker_rate_take(&r, 1U));
    /* 1,000 opens in one instant get exactly the burst. */
    pbx_peer_broker_rate_init(&r, 5U, 2000U, 0U);
    uint32_t got = 0;
    for (uint32_t i = 0; i < 1000U; i++) {
        got += pbx_peer_broker_rate_take(&r, 10U) ? 1U : 0U;
    }
    PBX_CHECK_EQ(got, 5U);
}
