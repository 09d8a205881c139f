#!/usr/bin/env python3
"""make memcheck-e2e: the C end-to-end tests (pbx-e2e-test: the liar rows,
the startup statuses, the refusal paths of tests/e2e/test_e2e*.c) with
the powerboxd they start, and the pbx they ask `geometry check`, under
valgrind memcheck (issue 22 item 5, docs/TESTING.md "Memory checks").

Usage: memcheck_c.py TEST_BIN POWERBOXD PBX WORK_DIR [FILTER...]

Writes WORK_DIR/bin/powerboxd and WORK_DIR/bin/pbx, bash wrappers that
exec the real programs under memcheck.py's VALGRIND command (log on
descriptor 900, one log per process in WORK_DIR/logs), and runs TEST_BIN
with PBX_POWERBOXD and PBX_BIN naming them and PBX_E2E_SLOW=SLOW (the
harness's waits for powerboxd grow by that factor: e2e_slow in
tests/e2e/e2e_harness.c; unset, they are as before). The wrapper does not
touch the descriptor limit: the status tests set limits before exec and
must see them. The exec keeps the pid the harness forked, so its
waitpid, prlimit, pidfd_getfd and /proc/PID/fd checks reach the process
running the image.

Without FILTER, every test but those in EXCLUDED runs (each named with
its reason); with FILTER, the runner's own selection (a test whose name
contains a filter). Fails when the test binary fails, when a log reports
an error (ERROR SUMMARY above zero; definitely or indirectly lost blocks
count as errors), or when no powerboxd ran under valgrind. Prints the
figures per program as make memcheck does.
"""

import os
import subprocess
import sys
import time

from memcheck import LOG_FD, read_logs, report, SLOW, VALGRIND

# The tests of pbx-e2e-test left out under memcheck, each with why; every
# other test runs.
# (Under PBX_E2E_SLOW the PBX1 deadlines and the harness's waits grow
# alike; a test that compares a measured time with an unscaled constant
# measures valgrind's slowdown, not powerboxd.)
EXCLUDED = {
    "e2e_open_deadline_cancels_a_request_never_committed":
        "times the OPEN deadline against E2E_DEADLINE_OPEN_MS itself "
        "(test_e2e.c: 'e2e_now_ms() - t0 < E2E_DEADLINE_OPEN_MS' failed)",
    "e2e_idle_public_connection_closed_busy_one_and_broker_kept":
        "times the IDLE close against E2E_DEADLINE_IDLE_MS itself "
        "('closed < E2E_DEADLINE_IDLE_MS + 1000' failed)",
    "e2e_status_11_port_init_without_room_for_its_descriptors":
        "starts powerboxd under a descriptor limit of 11 or 12: the "
        "wrapper cannot open valgrind's log on descriptor 900 ('900: Bad "
        "file descriptor'), and valgrind needs descriptors of its own",
    "e2e_status_20_arena_larger_than_the_address_space":
        "starts powerboxd under an RLIMIT_AS small enough that its arena "
        "cannot map: valgrind itself does not start under it (the check "
        "got -1, not status 20)",
    "e2e_status_32_hard_descriptor_limit_below_the_range":
        "hung for over 6 minutes under valgrind after its first check "
        "(refused with status 32, as it must): the next ones need "
        "powerboxd to raise its soft descriptor limit, which valgrind "
        "refuses a program (memcheck.py's wrappers start at the hard "
        "limit for that); inferred, not shown",
}
# The liar rows whose peer answers late or never run: lr_serve,
# lr_serve_for and lr_settle (test_e2e_liars_peer.c) wait e2e_slow(ms), so
# the peer deadline powerboxd waits out, scaled alike, stays inside them.


def wrapper(path, real, logs, name):
    """Writes a bash wrapper at path that execs real under valgrind, its
    log in logs/NAME.PID.log."""
    log = os.path.abspath(os.path.join(logs, name))
    argv = " ".join(VALGRIND + [f"--log-fd={LOG_FD}", os.path.abspath(real)])
    with open(path, "w", encoding="utf-8") as f:
        f.write(f'#!/bin/bash\nexec {argv} "$@" {LOG_FD}>"{log}.$$.log"\n')
    os.chmod(path, 0o755)


def selection(test_bin):
    """Every test name but EXCLUDED; fails when a kept name would also
    select an excluded test (the runner matches substrings)."""
    names = subprocess.run([test_bin, "--list"], check=True,
                           capture_output=True, text=True).stdout.split()
    for name in EXCLUDED:
        if name not in names:
            raise SystemExit(f"memcheck-e2e: no test {name} (EXCLUDED)")
    keep = [n for n in names if n not in EXCLUDED]
    for k in keep:
        if any(k in x for x in EXCLUDED):
            raise SystemExit(f"memcheck-e2e: {k} would select an excluded "
                             "test")
    return keep


def main(argv):
    if len(argv) < 5:
        raise SystemExit(__doc__)
    test_bin, pbxd, pbx, work = argv[1:5]
    filters = argv[5:] or selection(test_bin)
    binp, logs = os.path.join(work, "bin"), os.path.join(work, "logs")
    for d in (binp, logs):
        os.makedirs(d, exist_ok=True)
        for f in os.listdir(d):
            os.unlink(os.path.join(d, f))
    wrapper(os.path.join(binp, "powerboxd"), pbxd, logs, "powerboxd")
    wrapper(os.path.join(binp, "pbx"), pbx, logs, "pbx")
    env = dict(os.environ, PBX_E2E_SLOW=str(SLOW),
               PBX_POWERBOXD=os.path.abspath(os.path.join(binp, "powerboxd")),
               PBX_BIN=os.path.abspath(os.path.join(binp, "pbx")))
    if EXCLUDED and not argv[5:]:
        print(f"memcheck-e2e: {len(filters)} tests; left out (EXCLUDED): "
              f"{' '.join(EXCLUDED)}")
    start = time.monotonic()
    run = subprocess.run([test_bin] + filters, check=False, env=env)
    table, bad = {}, []
    read_logs(logs, table, bad)
    report(table, bad, filters, time.monotonic() - start)
    missing = "powerboxd" not in table
    if missing:
        print("memcheck-e2e: no powerboxd ran under valgrind")
    if run.returncode != 0 or bad or missing:
        raise SystemExit(f"memcheck-e2e: FAIL (test binary exit "
                         f"{run.returncode}, {len(bad)} log(s) with errors)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
