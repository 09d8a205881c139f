"""e2e scenarios (tests/e2e/run.py) of backpressure and slow peers:
backpressure, wake-backpressure, slow-prompt-isolation and
relay-timeout."""
import os
import shlex
import signal
import subprocess
import time

from e2e_harness import (cleaned, count, E_CORE_BUSY, E_PEER_ROUTE, fail,
                         last_object, read_rows, slot_rows, wait_for)
from e2e_jobs import clear_pane, Client, Launched, Program, tmux, wait_prompt


def backpressure(st):
    """(own powerboxd, 2 requests, 2 grants) two job-lifetime requests
    approved and held undelivered fill both pools; a third request is
    refused at BEGIN with the retryable PBX_E_CORE_BUSY (0x0604) and
    nothing held is dropped; once the held decisions are read (approved)
    and their jobs ended (each held client is a job of its own, 31:1 and
    34:1, expired by launchd when it exits), the same request succeeds."""
    held = []
    for job, slot in (("31:1", 40), ("34:1", 41)):
        c = Client(st, "--job", job, "--lifetime", "job", "--urgency",
                   "routine", "--slot", str(slot), "--then", "hold")
        held.append((c, c.committed()))
    wait_for(lambda: len(slot_rows(st, 40)) == 1 and
             len(slot_rows(st, 41)) == 1 and len(read_rows(st.views)) == 2,
             f"backpressure: not both held requests approved: "
             f"{read_rows(st.installs)} {read_rows(st.views)}")
    rows = (read_rows(st.installs), read_rows(st.views))
    print(f"run: requests {held[0][1]} and {held[1][1]} approved and held "
          f"(decisions unread): the request and grant pools are full")
    out = st.run(st.request_argv("--job", "32:1", "--lifetime", "one-shot",
                                 "--urgency", "routine", "--slot", "42",
                                 "--then", "consume"))
    if out.returncode == 0 or "request=" in out.stdout or \
            "BEGIN refused" not in out.stderr or \
            f"(0x{E_CORE_BUSY:04x})" not in out.stderr:
        fail(f"backpressure: a request over full pools was not refused "
             f"BUSY at BEGIN: {out.stdout} {out.stderr}")
    said = [l for l in out.stderr.splitlines() if "BEGIN refused" in l][-1]
    time.sleep(0.2)
    if (read_rows(st.installs), read_rows(st.views)) != rows or \
            slot_rows(st, 42):
        fail(f"backpressure: a refused BEGIN changed what is held: "
             f"{read_rows(st.installs)} {read_rows(st.views)}")
    print(f"run: the third request refused: {said.strip()}; both held "
          f"grants still installed and shown")
    for c, req in held:
        c.go()
        rc, kv = c.finish()
        if rc != 0 or kv.get("outcome") != "approved":
            fail(f"backpressure: held request {req}: {kv}")
    print("run: both held decisions read: approved; both jobs ended")
    wait_for(lambda: read_rows(st.installs) == [] and
             read_rows(st.views) == [], "backpressure: rows left")
    rc, kv = st.client("--job", "32:1", "--lifetime", "one-shot",
                       "--urgency", "routine", "--slot", "42", "--then",
                       "consume")
    if rc != 0 or kv.get("outcome") != "approved" or \
            kv.get("consume") != "accepted":
        fail(f"backpressure: the same request after the pools drained: "
             f"{kv}")
    cleaned(st, last_object(st, kv.get("scope", "none")))
    print("run: pools drained (jobs 31:1 and 34:1 expired by launchd at "
          "their exit): the same request approved and consumed")


def cpu_seconds(pid):
    """utime + stime of process pid, in seconds."""
    with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wake_backpressure(st):
    """launchd stops reading its wake route (--wake-hold-file) and more
    decisions are made than the route holds: every client still gets its
    APPROVED decision (launchd, holding each DECISION, re-asks it on its
    fallback tick when no wake comes: the clients run at once, each a job
    of its own in runtime-reply mode, so the run takes one tick),
    powerboxd keeps the refused wakes without spinning (CPU time over 2 s
    below 0.2 s), and once launchd reads again every wake arrives exactly
    once."""
    with open("/proc/sys/net/unix/max_dgram_qlen", encoding="utf-8") as f:
        qlen = int(f.read())
    n = qlen + 6
    jobs = [f"job {300 + i}.1" for i in range(n)]

    def woken():
        return [l for l in st.peer_log("launchd").splitlines()
                if "wake request " in l and " job " in l and
                "job " + l.rsplit(" job ", 1)[1].strip() in jobs]
    held_before = st.peer_log("launchd").count("wake route held (test aid)")
    with open(st.wake_hold, "w", encoding="utf-8"):
        pass
    # launchd logs the hold once its inotify watch has seen the file.
    wait_for(lambda: st.peer_log("launchd").count(
        "wake route held (test aid)") > held_before,
        "wake-backpressure: launchd never saw the hold file", 10.0)
    reqs = []
    try:
        t = time.monotonic()
        clis = [Client(st, "--job", f"{300 + i}:1", "--lifetime",
                       "one-shot", "--urgency", "routine", "--mode",
                       "runtime-reply", "--then", "consume")
                for i in range(n)]
        for i, c in enumerate(clis):
            rc, kv = c.finish(60)
            if rc != 0 or kv.get("outcome") != "approved" or \
                    kv.get("consume") != "accepted":
                fail(f"wake-backpressure: decision {i} while the wake "
                     f"route was full: {kv}")
            reqs.append(kv["request"])
        took = time.monotonic() - t
        wait_for(lambda: read_rows(st.views) == [],
                 "wake-backpressure: rows left")
        if woken():
            fail(f"wake-backpressure: launchd read wakes while held: "
                 f"{woken()}")
        print(f"run: {n} requests approved and consumed in {took:.1f} s "
              f"while launchd left its wake route (queue {qlen}) unread")
        t0 = cpu_seconds(st.pid)
        time.sleep(2.0)
        spent = cpu_seconds(st.pid) - t0
        if spent >= 0.2:
            fail(f"wake-backpressure: powerboxd spent {spent:.2f} s CPU in "
                 f"2 s while the wake route was full")
        print(f"run: powerboxd spent {spent:.2f} s CPU over 2 s with the "
              f"wake route full")
        if not st.alive():
            fail("wake-backpressure: powerboxd exited")
    finally:
        if os.path.exists(st.wake_hold):
            os.unlink(st.wake_hold)
    wait_for(lambda: len(woken()) >= n,
             f"wake-backpressure: launchd got {len(woken())} of {n} wakes",
             10.0)
    # powerboxd sends its kept wakes in order, before any later one: a
    # later request's wake shows no copy of the n can still come.
    rc, kv = st.client("--job", f"{300 + n}:1", "--lifetime", "one-shot",
                       "--urgency", "routine", "--mode", "runtime-reply",
                       "--then", "consume")
    if rc != 0 or kv.get("outcome") != "approved":
        fail(f"wake-backpressure: the later request: {kv}")
    later = f"wake request {kv.get('request')} job {300 + n}.1"
    wait_for(lambda: later in st.peer_log("launchd"),
             f"wake-backpressure: launchd never logged '{later}'", 10.0)
    got = [l.split("wake request ", 1)[1].split()[0] for l in woken()]
    if sorted(got) != sorted(reqs):
        fail(f"wake-backpressure: wakes {got}, decisions {reqs}")
    print(f"run: launchd reading again: all {n} wakes arrived, each "
          f"exactly once")


def write_file(st, rel, text):
    """Writes text to the file rel beneath vfsd's root."""
    path = os.path.join(st.root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def request_lines(st, job, entry, outcome):
    """launchd's end-of-request lines of job (ID.GEN) and entry with
    outcome."""
    return count(st.peer_log("launchd"), "request ", f" job {job} entry "
                 f"{entry} outcome {outcome}")


def slow_prompt_isolation(st):
    """(own stack, launchd --call-ms 1000) program A's prompt is answered
    twice the relay timeout after it showed while program B runs 100
    routine lifecycles before and after the answer; each gets only its own
    decisions and objects, A's when the user answers; every lifecycle
    makes exactly one DECISION call (no polling)."""
    relay = st.launchd_opt("--call-ms", 10000) / 1000.0
    write_file(st, "docs/a.txt", "program A's file\n")
    write_file(st, "docs/b.txt", "program B's file, longer than A's\n")
    clear_pane(st)
    a = Client(st, "--job", "70:1", "--entry", "bin/a", "--mode",
               "runtime-reply", "--urgency", "exceptional", "--selector",
               "docs/a.txt", "--verify-object", st.root, "--then",
               "consume", "--wait-ms", "0")
    req = a.committed()
    obj = wait_prompt(st, req)
    shown = time.monotonic()
    # Program B: ten clients in turn in one job (71:1), ten lifecycles
    # each, with pauses, so that B's calls run while A's decision is held
    # and after it was delivered.
    rounds, each = 10, 10
    client = shlex.join(st.client_argv(
        "--mode", "runtime-reply", "--selector", "docs/b.txt",
        "--verify-object", st.root, "--then", "consume", "--repeat",
        str(each)))
    loop = (f"for i in $(seq {rounds}); do {client}; echo \"round=$i rc=$?\""
            f"; sleep 0.3; done")
    b = Launched(st, st.launch_argv(["/bin/sh", "-c", loop], "71:1",
                                    "bin/b"))
    time.sleep(max(0.0, shown + 2 * relay - time.monotonic()))
    if not a.running() or "outcome" in a.kv():
        fail(f"slow-prompt-isolation: A's request ended before its answer: "
             f"{a.kv()}")
    # Stamped before the keys are typed: ttyd may read them, and A get
    # its decision, before tmux returns.
    answered = time.monotonic()
    tmux("send-keys", "-t", st.pane, "y")
    rc, kv = a.finish(30)
    if rc != 0 or kv.get("request") != req or \
            kv.get("outcome") != "approved" or \
            kv.get("object") != "verified" or \
            kv.get("consume") != "accepted":
        fail(f"slow-prompt-isolation: A: rc {rc} {kv}")
    # A asked for its decision once and waited: launchd held the call
    # for the whole prompt (no polling).
    if kv.get("decision_calls") != "1":
        fail(f"slow-prompt-isolation: A sent {kv.get('decision_calls')} "
             f"DECISION calls for its held decision, not 1")
    late = a.when("outcome") - answered
    if late < 0 or late > 1.0:
        fail(f"slow-prompt-isolation: A's decision came {late:.2f} s after "
             f"the answer")
    print(f"run: A's prompt (request {req}, object {obj}) answered "
          f"{answered - shown:.1f} s after it showed (relay timeout "
          f"{relay:.1f} s); A's own decision and object (docs/a.txt "
          f"verified) arrived {late * 1000:.0f} ms later")
    rc, _ = b.finish(120)
    with b.cv:
        got = [(l, t) for l, t in zip(b.lines, b.times)
               if l is not None and l.startswith("round=")]
        reps = [l for l in b.lines if l is not None and
                l.startswith(("repeat=", "mismatches=",
                              "decisions_per_lifecycle="))]
    ok = [l for l, _ in got if l.endswith(" rc=0")]
    before = sum(1 for l, t in got if t < answered)
    # One DECISION call per lifecycle: each client waits for its decision
    # instead of asking again.
    if rc != 0 or len(ok) != rounds or \
            reps.count(f"repeat={each}") != rounds or \
            reps.count("mismatches=0") != rounds or \
            reps.count("decisions_per_lifecycle=1.000") != rounds:
        fail(f"slow-prompt-isolation: B: rc {rc} rounds {got} {reps}")
    if before == 0 or before == rounds:
        fail(f"slow-prompt-isolation: B's rounds did not run both while A "
             f"waited and after ({before} of {rounds} before the answer)")
    if request_lines(st, "70.1", "bin/a", "approved") != 1 or \
            request_lines(st, "71.1", "bin/b", "approved") != rounds * each:
        fail("slow-prompt-isolation: launchd's request lines do not show "
             "one approval for A and 100 for B")
    print(f"run: B's {rounds * each} lifecycles ({before} rounds before the "
          f"answer, {rounds - before} after) each got their own decision "
          f"and docs/b.txt: zero mismatches, one DECISION call each; A "
          f"sent one DECISION call in all")


def stderr_file(st, name):
    """A fresh file WORK_DIR/logs/NAME.err for a launched job's standard
    error, open for writing (the job gets a copy)."""
    return open(os.path.join(st.work, "logs", name + ".err"), "w+",
                encoding="utf-8")


def said_since(f):
    """Everything written to the open file f so far."""
    f.flush()
    with open(f.name, encoding="utf-8", errors="replace") as r:
        return r.read()


def relay_timeout_b(st, b, req_b, call_s):
    """After SIGCONT, B cancels its own request and reads its decision:
    cancel accepted, decision cancelled. On a wrong answer the failure
    names the command and its answer, and adds launchd's line when
    launchd logged that very call unanswered after --call-ms since the
    command was sent (a late answer from powerboxd: memcheck.py's TIMED
    excuses only that, under valgrind)."""
    for op, want in (("cancel", ["cancel=accepted"]),
                     ("decision", [f"decision={req_b} cancelled"])):
        mark = len(st.peer_log("launchd"))
        said = b.cmd(f"{op} {req_b}")
        if said == want:
            continue
        line = f"call op {op} request {req_b} unanswered after " \
            f"{call_s * 1000:.0f} ms"
        # launchd logs the timeout before it answers ROUTE; the poll only
        # allows for the log file being read before the write lands.
        end = time.monotonic() + 2.0
        while line not in st.peer_log("launchd")[mark:] and \
                time.monotonic() < end:
            time.sleep(0.05)
        late = f"; launchd: {line}" if line in st.peer_log("launchd")[mark:] \
            else ""
        fail(f"relay-timeout: B's own request {req_b} after SIGCONT: {op} "
             f"answered {said}{late}")


def relay_timeout(st):
    """(own stack, launchd --call-ms 300) powerboxd stopped for longer
    than twice the relay timeout with calls of three programs in flight:
    each caller is answered ROUTE for its own call, the late replies are
    matched and dropped, and after SIGCONT every program is served its
    own decisions and objects."""
    call_s = st.launchd_opt("--call-ms", 10000) / 1000.0
    write_file(st, "docs/a.txt", "program A's file\n")
    write_file(st, "docs/b.txt", "program B's file, longer than A's\n")
    log0 = len(st.peer_log("launchd"))
    # Before the stop: A (a client, job 72:1) has committed a routine
    # runtime-reply request and holds before asking its decision; B (raw
    # frames, job 73:1) has one request begun with one selector chunk of
    # two, not committed.
    a_err, c_err = stderr_file(st, "timeout-a"), stderr_file(st, "timeout-c")
    a = Client(st, "--job", "72:1", "--entry", "bin/a", "--mode",
               "runtime-reply", "--selector", "docs/a.txt",
               "--verify-object", st.root, "--then", "hold", stderr=a_err)
    req_a = a.committed()
    b = Program(st, "73:1", "bin/b")
    said = b.cmd("begin 1 partial")
    if len(said) != 2 or not said[0].startswith("begun="):
        fail(f"relay-timeout: B's request: {said}")
    req_b = said[0].split("=", 1)[1]
    # A's request is decided (its grant shown at ttyd) before the stop, so
    # that the late reply to its DECISION is the approval with its alias.
    wait_for(lambda: len(read_rows(st.views)) == 1,
             f"relay-timeout: A's request {req_a} was never approved")
    # The stop: A asks its decision, B asks its request's decision and
    # begins another, C (a client, job 74:1) begins: all four calls go
    # to a powerboxd that reads nothing.
    os.kill(st.pid, signal.SIGSTOP)
    stopped = time.monotonic()
    try:
        with b.cv:
            mark = len(b.lines)
        a.go()
        b.write(f"decision {req_b}\nbegin 1\n")
        c = Client(st, "--job", "74:1", "--entry", "bin/c", "--mode",
                   "runtime-reply", "--then", "consume", stderr=c_err)
        rc_a, kv_a = a.finish(5 + 4 * call_s)
        rc_c, kv_c = c.finish(5 + 4 * call_s)
        i = b.wait_line(lambda l: l.startswith("refused="), "refused=",
                        5 + 4 * call_s, mark)
        with b.cv:
            b_said = b.lines[mark:i + 1]
        routed = time.monotonic() - stopped
        # Longer than twice the relay timeout, whatever the answers took.
        time.sleep(max(0.0, stopped + 2 * call_s + 0.3 - time.monotonic()))
        if not st.alive():
            fail("relay-timeout: powerboxd exited while stopped")
    finally:
        os.kill(st.pid, signal.SIGCONT)
    held = time.monotonic() - stopped
    route = f"(0x{E_PEER_ROUTE:04x})"
    if rc_a != 1 or "outcome" in kv_a or "object" in kv_a or \
            "DECISION refused" not in said_since(a_err) or \
            route not in said_since(a_err):
        fail(f"relay-timeout: A's DECISION while powerboxd was stopped: rc "
             f"{rc_a} {kv_a} {said_since(a_err)}")
    if rc_c != 1 or "request" in kv_c or \
            "BEGIN refused" not in said_since(c_err) or \
            route not in said_since(c_err):
        fail(f"relay-timeout: C's BEGIN while powerboxd was stopped: rc "
             f"{rc_c} {kv_c} {said_since(c_err)}")
    # The ROUTE reply to B's DECISION echoes B's seq and op (checked by
    # the program) and names B's request or none.
    if b_said[0] not in (f"decision={req_b} 0x{E_PEER_ROUTE:04x}",
                         f"decision=0.0 0x{E_PEER_ROUTE:04x}") or \
            b_said[1:] != ["done", f"refused=0x{E_PEER_ROUTE:04x}"]:
        fail(f"relay-timeout: B's calls while powerboxd was stopped: "
             f"{b_said}")
    a_err.close()
    c_err.close()
    print(f"run: powerboxd stopped {held:.2f} s (launchd --call-ms "
          f"{call_s * 1000:.0f}): A's DECISION of {req_a}, B's DECISION of "
          f"{req_b} and next BEGIN, C's BEGIN each answered "
          f"PBX_E_PEER_ROUTE (0x08c3) on its own call within {routed:.2f} s")
    # After SIGCONT: two new programs of A and B run concurrently while
    # powerboxd answers the four stale calls; B's own request is still
    # its own.
    runs = []
    for job, entry, sel in (("75:1", "bin/a", "docs/a.txt"),
                            ("76:1", "bin/b", "docs/b.txt")):
        runs.append(Launched(st, st.request_argv(
            "--job", job, "--entry", entry, "--mode", "runtime-reply",
            "--selector", sel, "--verify-object", st.root, "--then",
            "consume", "--repeat", "20"), stdin=subprocess.DEVNULL))
    relay_timeout_b(st, b, req_b, call_s)
    for job, r in zip(("75:1", "76:1"), runs):
        rc, kv = r.finish(60)
        if rc != 0 or kv.get("repeat") != "20" or \
                kv.get("mismatches") != "0" or \
                kv.get("decisions_per_lifecycle") != "1.000":
            fail(f"relay-timeout: job {job} after SIGCONT: rc {rc} {kv}")
    if b.finish()[0] != 0:
        fail("relay-timeout: B's program failed (a reply not its own)")
    late = lambda: st.peer_log("launchd")[log0:]
    want = [f"late reply: op decision-reply request {req_a} status 0x0000",
            f"late reply: op decision-reply request {req_b} status "]
    wait_for(lambda: all(w in late() for w in want) and
             count(late(), "late reply: op begin-reply ") >= 2,
             f"relay-timeout: launchd did not log the late replies "
             f"({[l for l in late().splitlines() if 'late' in l]})", 10.0)
    timed_out = count(late(), "unanswered after")
    if timed_out < 4:
        fail(f"relay-timeout: launchd logged {timed_out} calls unanswered "
             f"after --call-ms, not 4 or more")
    alias = [l for l in late().splitlines() if want[0] in l][0]
    if "1 descriptor(s) closed" not in alias:
        fail(f"relay-timeout: A's late approval's alias: {alias}")
    if request_lines(st, "75.1", "bin/a", "approved") != 20 or \
            request_lines(st, "76.1", "bin/b", "approved") != 20:
        fail("relay-timeout: launchd's request lines do not show 20 "
             "approvals each for jobs 75.1 and 76.1")
    wait_for(lambda: read_rows(st.installs) == [] and
             read_rows(st.views) == [], f"relay-timeout: rows left "
             f"{read_rows(st.installs)} {read_rows(st.views)}", 10.0)
    print(f"run: launchd logged {timed_out} calls unanswered after "
          f"--call-ms; after SIGCONT it matched the late replies to the "
          f"four callers' calls and delivered none (A's approval's alias "
          f"closed there); A's and B's next programs ran 20 lifecycles "
          f"each with their own decisions and files (zero mismatches, one "
          f"DECISION call each), B's request {req_b} still its own "
          f"(cancelled)")
