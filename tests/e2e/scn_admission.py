"""e2e scenarios (tests/e2e/run.py) of who may talk to whom:
query-admission, job-spoof, and the hidden fail-on-purpose
(tests/e2e/orphans.py)."""
import os
import re
import shlex
import subprocess
import sys
import time

from e2e_harness import (cleaned, count, descendants, E_PEER_NOT_YOURS, fail,
                         key_values, last_object, read_rows, slot_rows, Stack,
                         wait_for)
from e2e_jobs import Client, Launched, Shell
from e2e_up import Up, UpJobs
from scn_lifecycle import relayed
from scn_flood import all_closed, connect_all


# A launched job's reader of the query sockets named in argv: one line
# qN=WHAT per socket, WHAT the first line it was sent (or `nothing`).
QUERY_READER = (
    "import socket,sys\n"
    "for i,p in enumerate(sys.argv[1:]):\n"
    "    s=socket.socket(socket.AF_UNIX,socket.SOCK_STREAM)\n"
    "    s.settimeout(10)\n"
    "    s.connect(p)\n"
    "    d=b''\n"
    "    while True:\n"
    "        c=s.recv(65536)\n"
    "        if not c:\n"
    "            break\n"
    "        d+=c\n"
    "    l=d.decode(errors='replace').splitlines()\n"
    "    print('q%d=%s' % (i, l[0] if l else 'nothing'), flush=True)\n")


def query_refused(said, who, below):
    """query-admission: said (key=value lines of QUERY_READER) holds, for
    ttyd's and procd's sockets in turn, the refusal of a launched job
    below pid below."""
    want = f"is a launched job (below pid {below}): this socket answers " \
        "only the user's administrative processes"
    for i, name in enumerate(("ttyd", "procd")):
        line = said.get(f"q{i}", "")
        if not line.startswith("refused: pid ") or want not in line:
            fail(f"query-admission: {who} read {name}'s query socket: "
                 f"{line!r}")


def query_reader(work, socks):
    """The argv of QUERY_READER over socks (its script written in work:
    a launched shell runs one line per command)."""
    script = os.path.join(work, "query-reader.py")
    with open(script, "w", encoding="utf-8") as f:
        f.write(QUERY_READER)
    return [sys.executable, script] + socks


def query_grant(job, views, installs):
    """query-admission: job (a Shell) takes a job-lifetime grant, which
    ttyd and procd then list."""
    rc, kv = job.request("--lifetime", "job", "--urgency", "routine",
                         "--slot", "21")
    if rc != 0 or kv.get("outcome") != "approved":
        fail(f"query-admission: no grant: {kv}")
    wait_for(lambda: len(read_rows(views)) == 1 and
             len(read_rows(installs)) == 1,
             "query-admission: the grant is not listed by ttyd and procd")


def query_admission(bin_dir, work):
    """query-admission (standalone): ttyd's and procd's query sockets
    answer the user, never a job, on run.py's stack (--jobs-below names
    launchd) and on `pbx up`'s (it names itself); launchd bounds the
    control connections one process holds."""
    st = Stack(bin_dir, os.path.join(work, "stack"))
    try:
        query_admission_stack(st)
    finally:
        st.stop()
    u = Up(bin_dir, os.path.join(work, "up"))
    try:
        query_admission_up(u)
        u.stop()
    finally:
        u.close()


def query_admission_stack(st):
    """query-admission on run.py's stack. Job 11:1 (a launched shell)
    holds a job-lifetime grant; a program it runs, and one that left its
    session and was reparented to launchd, each read both sockets: each
    is sent one refusal naming it as below launchd, no row, and each
    refusal is logged once. The user (this process, `pbx grants`) is
    served the rows. launchd's control socket: this process's 17th
    connection is refused (--max-per-pid 16 by default) while another
    process's launch still succeeds."""
    launchd = st.procs[3].pid
    job = Shell(st, "11:1")
    query_grant(job, st.views, st.installs)
    reader = query_reader(st.work, [st.views, st.installs])
    rc, said = job.run(reader)
    if rc != 0:
        fail(f"query-admission: the job's reader exited {rc}")
    query_refused(said, "a job's program", launchd)
    # A descendant that left its session and lost its parent: launchd
    # (a child subreaper) is still above it.
    out = os.path.join(st.work, "detached.out")
    # A run in the same work directory before this one left its own
    # output here (naming its own launchd): start from none.
    if os.path.exists(out):
        os.unlink(out)
    rc, _ = job.sh(f"(setsid {shlex.join(reader)} >{shlex.quote(out)} "
                   "2>&1 &)")
    if rc != 0:
        fail("query-admission: the detached reader did not start")
    wait_for(lambda: len(read_rows(out)) == 2,
             f"query-admission: the detached reader said {read_rows(out)}")
    query_refused(key_values("\n".join(read_rows(out))),
                  "a detached descendant", launchd)
    # Each peer logs its refusal just after sending it to the reader:
    # wait (bounded) for both lines.
    for name in ("ttyd", "procd"):
        refused = lambda n=name: count(st.peer_log(n),
                                       f"{n}: query connection refused: ")
        wait_for(lambda r=refused: r() == 2, f"query-admission: {name} "
                 f"logged {refused()} refusals, not 2")
    print(f"run: a job's program and a detached descendant were each "
          f"refused by ttyd's and procd's query sockets (below launchd "
          f"pid {launchd}), each logged once")
    # The user is served: the rows, and `pbx grants`.
    views, installs = read_rows(st.views), read_rows(st.installs)
    if len(views) != 1 or not views[0].startswith("grant ") or \
            len(installs) != 1 or not installs[0].startswith("process "):
        fail(f"query-admission: the user read {views} and {installs}")
    g = subprocess.run([os.path.join(st.bin_dir, "pbx"), "grants", "--query",
                        st.views, "--format", "kv"], capture_output=True,
                       text=True, check=False, timeout=30)
    if g.returncode != 0 or "job=11:1" not in g.stdout:
        fail(f"query-admission: pbx grants exited {g.returncode}: "
             f"{g.stdout}{g.stderr}")
    print("run: the user reads both sockets, and `pbx grants` lists the "
          "grant")
    # launchd: one process holds at most 16 control connections.
    refused0 = count(st.peer_log("launchd"), "control connection refused")
    ctl = connect_all(st.control, 17)
    if not all_closed(ctl[16:], 5.0):
        fail("query-admission: a 17th control connection of one process "
             "was not closed")
    wait_for(lambda: count(st.peer_log("launchd"),
                           f"control connection refused: pid {os.getpid()} "
                           "already holds 16 (--max-per-pid 16)") == 1,
             "query-admission: launchd did not log the refusal once")
    if count(st.peer_log("launchd"), "control connection refused") != \
            refused0 + 1:
        fail("query-admission: launchd refused more than the 17th")
    rc, kv = st.client("--job", "12:1", "--lifetime", "one-shot",
                       "--urgency", "routine")
    if rc != 0 or kv.get("outcome") != "approved":
        fail(f"query-admission: another process's launch failed: {kv}")
    for c in ctl:
        c.close()
    print("run: launchd refused this process's 17th control connection "
          "(logged once); another process launched a job meanwhile")
    if job.close() != 0:
        fail("query-admission: the job's shell failed")


def query_admission_up(u):
    """query-admission on `pbx up`'s stack: a job's program reading
    DIR/ttyd.sock and DIR/procd.sock is refused as below pbx up (the
    subreaper above launchd and a dead launchd's orphans), logged once
    each in stack.log; `pbx grants --dir DIR` lists the job's grant."""
    views = os.path.join(u.dir, "ttyd.sock")
    installs = os.path.join(u.dir, "procd.sock")
    job = Shell(UpJobs(u), "81:1", entry="bin/query-admission")
    query_grant(job, views, installs)
    rc, said = job.run(query_reader(os.path.dirname(u.dir),
                                    [views, installs]))
    if rc != 0:
        fail(f"query-admission: the job's reader under pbx up exited {rc}")
    query_refused(said, "a job of pbx up's stack", u.proc.pid)
    for name in ("ttyd", "procd"):
        wait_for(lambda n=name: count(u.text(), f"{n}: query connection "
                                      "refused: ") == 1,
                 f"query-admission: {name} did not log the refusal once")
    g = subprocess.run([os.path.join(u.bin_dir, "pbx"), "grants", "--dir",
                        u.dir, "--format", "kv"], capture_output=True,
                       text=True, check=False, timeout=30,
                       stdin=subprocess.DEVNULL)
    if g.returncode != 0 or "job=81:1" not in g.stdout:
        fail(f"query-admission: pbx grants under pbx up exited "
             f"{g.returncode}: {g.stdout}{g.stderr}")
    # pbx cancel under pbx up returns only once the grant's end is
    # recorded and vfsd retired its object: the RETIRE line is already in
    # stack.log when it returns.
    gid = re.search(r"^grant=(\S+) .*job=81:1", g.stdout, re.M)
    if gid is None:
        fail(f"query-admission: no grant id for job 81:1 in {g.stdout}")
    c = subprocess.run([os.path.join(u.bin_dir, "pbx"), "cancel", "--dir",
                        u.dir, gid.group(1)], capture_output=True,
                       text=True, check=False, timeout=60,
                       stdin=subprocess.DEVNULL)
    said = re.search(r"object (\d+):(\d+) retired$", c.stdout.strip())
    log = u.text()
    if c.returncode != 0 or said is None or \
            f"RETIRE object {said.group(1)} gen {said.group(2)}" not in log:
        fail(f"query-admission: pbx cancel {gid.group(1)} returned "
             f"{c.returncode} before its object was retired: "
             f"{c.stdout}{c.stderr}")
    print(f"run: under pbx up (pid {u.proc.pid}) a job's program was "
          f"refused by both query sockets; pbx grants lists its grant; "
          f"pbx cancel returned after vfsd retired object "
          f"{said.group(1)}:{said.group(2)}")
    if job.close() != 0:
        fail("query-admission: the job's shell under pbx up failed")


def job_spoof(st):
    """A program claiming another job's id, entry or staged process is
    refused; nothing is installed into the other job's staged process."""
    a = Shell(st, "60:1", "bin/a")
    target = a.target()
    b = Shell(st, "61:1", "bin/b")
    if not target or b.target() in ("", target):
        fail(f"job-spoof: staged processes {target!r} and {b.target()!r}")
    pid, gen = target.split(":")
    installs = count(st.peer_log("procd"), "INSTALL")
    begins = relayed(st, "begin")
    claims = count(st.peer_log("launchd"), "claims job 60.1")
    errf = os.path.join(st.work, "logs", "spoof.err")
    # The job's own session and realm are 7 and 3: another is a spoof
    # too.
    spoofs = (["--job", "60:1"], ["--job", "60:1", "--entry", "bin/a"],
              ["--target", target], ["--entry", "bin/a"],
              ["--session", "8"], ["--realm", "4"])
    for claim in spoofs:
        rc, kv = b.request("--lifetime", "job", "--slot", "60", *claim,
                           stderr=errf)
        with open(errf, encoding="utf-8") as f:
            said = f.read()
        sys.stderr.write(said)
        if rc != 1 or "request" in kv or \
                f"(0x{E_PEER_NOT_YOURS:04x})" not in said:
            fail(f"job-spoof: job 61:1 claiming {' '.join(claim)}: rc {rc} "
                 f"{kv} {said}")
    rc, kv = b.run([st.bin("client"), "cancel", "--job", "60:1",
                    "--session", "7"], stderr=errf)
    with open(errf, encoding="utf-8") as f:
        said = f.read()
    if rc != 1 or f"(0x{E_PEER_NOT_YOURS:04x})" not in said:
        fail(f"job-spoof: CANCEL of job 60:1's session from job 61:1: {said}")
    out = st.run([st.bin("client"), "request", "--control", st.control,
                  "--scope", st.scope, "--selector", "docs/readme.txt",
                  "--op", "read", "--class", "file", "--lifetime", "job",
                  "--job", "60:1", "--entry", "bin/a", "--session", "7",
                  "--realm", "3", "--target", target, "--slot", "60"])
    if out.returncode != 1 or \
            f"(0x{E_PEER_NOT_YOURS:04x})" not in out.stderr:
        fail(f"job-spoof: a BEGIN from an unlaunched program: {out.stderr}")
    log = st.peer_log("launchd")
    if count(log, "claims job 60.1") - claims < 2 or \
            "job 61.1 claims session 8" not in log or \
            "job 61.1 claims realm 4" not in log or \
            "BEGIN from an unlaunched program" not in log:
        fail("job-spoof: launchd did not log the claims")
    time.sleep(0.3)
    if relayed(st, "begin") != begins or \
            count(st.peer_log("procd"), "INSTALL") != installs or \
            slot_rows(st, 60) or \
            any(r.startswith(f"process {pid} gen {gen} ")
                for r in read_rows(st.installs)):
        fail(f"job-spoof: a spoofed BEGIN reached powerboxd or installed: "
             f"{read_rows(st.installs)}")
    print(f"run: job 61:1 claiming job 60:1's id, entry or staged process "
          f"{target}, a session or realm not its own, job 60:1's "
          f"session's CANCEL, and an unlaunched program's BEGIN: all "
          f"refused PBX_E_PEER_NOT_YOURS by launchd, logged, never "
          f"relayed; nothing installed")
    rc, kv = a.request("--lifetime", "job", "--slot", "61")
    if rc != 0 or kv.get("outcome") != "approved":
        fail(f"job-spoof: job 60:1's own request: {kv}")
    wait_for(lambda: any(r.startswith(f"process {pid} gen {gen} slot 61 ")
                         for r in read_rows(st.installs)),
             f"job-spoof: job 60:1's grant is not in its staged process "
             f"{target}: {read_rows(st.installs)}")
    obj = last_object(st, kv.get("scope", "none"))
    print(f"run: job 60:1's own request installed into {target}")
    control_from_job(st, b, pid, gen)
    if b.close() != 0 or a.close() != 0:
        fail("job-spoof: a job's shell failed")
    cleaned(st, obj)
    print(f"run: job 60:1's grant ended with its job")


def control_from_job(st, b, pid, gen):
    """job-spoof: launched job b (61:1) cannot use launchd's control
    socket, to EXPIRE job 60:1 (whose grant is installed into process
    pid gen) or to LAUNCH a job; nor EXPIRE it over its own job
    connection."""
    errf = os.path.join(st.work, "logs", "spoof.err")
    refused0 = count(st.peer_log("launchd"),
                     "control connection from a launched job refused")
    attempts = (
        ("EXPIRE of job 60:1 over the control socket",
         [st.bin("launchd"), "expire", "--control", st.control, "--job",
          "60:1"], 1, None),
        ("EXPIRE of job 60:1 over its job connection",
         [st.bin("launchd"), "expire", "--public-fd", "3", "--job", "60:1"],
         1, f"(0x{E_PEER_NOT_YOURS:04x})"),
        ("LAUNCH of job 62:1 over the control socket",
         st.launch_argv(["/bin/echo", "launched=yes"], "62:1", "bin/c"),
         125, None))
    for what, argv, want, status in attempts:
        rc, kv = b.run(argv, stderr=errf)
        with open(errf, encoding="utf-8") as f:
            said = f.read()
        sys.stderr.write(said)
        if rc != want or kv.get("expire") == "accepted" or \
                "launched" in kv or (status and status not in said):
            fail(f"job-spoof: {what} from job 61:1: rc {rc} {kv} {said}")
    wait_for(lambda: count(st.peer_log("launchd"), "control connection "
                           "from a launched job refused") - refused0 == 2,
             "job-spoof: launchd did not log both control connections "
             "from job 61:1 refused")
    time.sleep(0.2)
    if "launched job 62.1" in st.peer_log("launchd") or \
            not any(r.startswith(f"process {pid} gen {gen} slot 61 ")
                    for r in read_rows(st.installs)) or \
            len(read_rows(st.views)) != 1:
        fail(f"job-spoof: job 61:1 launched a job or ended job 60:1's "
             f"grant: {read_rows(st.installs)} {read_rows(st.views)}")
    print("run: job 61:1's EXPIRE of job 60:1 (control socket: connection "
          "refused and logged; its own job connection: PBX_E_PEER_NOT_YOURS) "
          "and its LAUNCH (exit 125, refused and logged) failed; job 60:1's "
          "grant still installed and shown, no job launched")


def fail_on_purpose(st):
    """A scenario that fails half way, for tests/e2e/orphans.py (hidden:
    `all` leaves it out). It leaves running what a failing scenario may:
    a launcher whose job (a shell) started a child in a session of its
    own, and a request held after COMMIT; prints `hold=N` (the stack's
    work directory), waits for the file N/go (at most 60 s), then fails as
    $PBX_E2E_FAIL says: `fail` (fail()), `raise` (an exception, after
    launchd was killed, so that its jobs are orphans no longer below the
    stack) or `term` (waits for the SIGTERM the caller sends run.py)."""
    mode = os.environ.get("PBX_E2E_FAIL", "fail")
    job = Launched(st, st.launch_argv(["/bin/sh", "-c", (
        "setsid sleep 600 </dev/null >/dev/null 2>&1 & "
        "echo started=$!; exec sleep 600")], "30:1", "bin/sh"))
    child = int(job.wait_key("started"))
    held = Client(st, "--then", "hold")
    held.committed()
    go = os.path.join(st.work, "go")
    print(f"hold={st.work}", flush=True)
    wait_for(lambda: os.path.exists(go), "the go file", 60.0)
    if mode == "raise":
        launchd = st.procs[3]
        launchd.kill()
        launchd.wait()
        # launchd's jobs are reparented away from the stack once it is
        # gone: only the stack's mark can find them now.
        wait_for(lambda: child not in descendants([st.pgid] + [
            p.pid for p in st.procs]), "the job's child orphaned", 10.0)
        raise RuntimeError("fail-on-purpose: an exception, launchd killed")
    if mode == "term":
        time.sleep(60)
    fail(f"fail-on-purpose: failing on purpose ({mode})")
