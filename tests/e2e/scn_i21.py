"""e2e scenarios (tests/e2e/run.py) of issue 21's rest: any-broker-lines
(pbx-broker's lines held with the job's output while a prompt shows)
and any-installer-lost (a revocable descriptor after its installer,
procd, is lost)."""
import os
import re
import signal
import subprocess
import types

from e2e_harness import fail, wait_for
from e2e_jobs import clear_pane, flush_typed, Launched, tmux
from e2e_up import Up
from scn_any import broker_prompt, broker_root_file, broker_run
from scn_restart import ended, log_events, restarted


# The job of any-broker-lines: three opens outside its scope (each
# refused without asking, each a pbx-broker line), then more output than
# launchd's relay buffers (4096 bytes), so that launchd logs the hold.
BROKER_LINES_PROG = """
import os, sys
for i in range(3):
    try:
        os.close(os.open("/pbx-i21-line-%d" % i, os.O_RDONLY))
    except OSError:
        pass
sys.stdout.write(("." * 63 + "\\n") * 160)
sys.stdout.flush()
print("I21-DONE", flush=True)
"""


def pane_all(st):
    """What st's pane holds, its history included."""
    return tmux("capture-pane", "-p", "-S", "-", "-t", st.pane)


def any_broker_lines(st):
    """While another job's prompt shows, a sandboxed job on the pane's
    terminal (python3, brokered) opens three paths outside its scope:
    pbx-broker refuses each without asking and says so. None of those
    lines reaches the pane while the prompt shows (they go through the
    job's pty, which launchd holds: launchd logs the hold once the job's
    later output fills its buffer; a marker written to the terminal
    after that shows on the pane, the broker's lines do not). Once the
    prompt is answered they appear, with the job's own output."""
    broker_root_file(st)
    docs = os.path.join(os.path.realpath(st.root), "docs")
    asked = os.path.join(docs, "lines-a.txt")
    with open(asked, "w", encoding="utf-8") as f:
        f.write("the prompted file\n")
    clear_pane(st)
    flush_typed(st)
    other = broker_run(st, ["/bin/cat", asked],
                       os.path.join(st.work, "any-broker-lines-cat.err"))
    broker_prompt(st, "docs/lines-a.txt", "cat")
    since = len(st.peer_log("launchd"))
    term = os.open(st.tty, os.O_RDWR | os.O_NOCTTY)
    try:
        job = subprocess.Popen(
            [os.path.join(st.bin_dir, "pbx"), "--dir", st.work, "run",
             "--sandbox", "--scope", "root", "--quiet", "--",
             "/usr/bin/python3", "-I", "-c", BROKER_LINES_PROG],
            stdin=term, stdout=term, stderr=term, process_group=st.pgid)
    finally:
        os.close(term)
    # The job's output after its three opens filled launchd's buffer:
    # each open returned, so the broker had written each line by then.
    wait_for(lambda: "output held" in st.peer_log("launchd")[since:],
             "any-broker-lines: launchd never held the job's output", 30.0)
    # A marker written after the broker's lines: once the pane shows it,
    # the pane has shown every byte written to the terminal before it.
    term = os.open(st.tty, os.O_WRONLY | os.O_NOCTTY)
    try:
        os.write(term, b"\r\nI21-MARK\r\n")
    finally:
        os.close(term)
    wait_for(lambda: "I21-MARK" in pane_all(st),
             "any-broker-lines: the marker never showed", 20.0)
    screen = pane_all(st)
    if "pbx-broker" in screen or "pbx-i21-line" in screen or \
            "Approve?" not in screen:
        fail(f"any-broker-lines: the broker's lines showed during the "
             f"prompt:\n{screen}")
    print("run: any-broker-lines: during the prompt the pane shows no "
          "broker line (launchd held the job's output; the marker after "
          "it showed)")
    tmux("send-keys", "-t", st.pane, "y")
    want = [f"pbx-broker: /pbx-i21-line-{i}: outside the scope, refused "
            f"without asking" for i in range(3)]
    wait_for(lambda: "I21-DONE" in pane_all(st),
             "any-broker-lines: the job's output never showed after the "
             "prompt", 30.0)
    wait_for(lambda: all(w in pane_all(st) for w in want),
             f"any-broker-lines: the broker's lines never showed after "
             f"the prompt: {want}", 20.0)
    if job.wait(timeout=30) != 0:
        fail(f"any-broker-lines: the job exited {job.returncode}")
    if other.wait(timeout=30) != 0 or \
            other.lines[:1] != ["the prompted file"]:
        fail(f"any-broker-lines: the prompted cat: rc "
             f"{other.proc.returncode}, {other.lines}")
    print("run: any-broker-lines: once the prompt was answered the three "
          "broker lines showed with the job's output; cat printed the "
          "approved file")


def installer_lost_retire(u, job, since):
    """The RETIRE line of stack.log after offset since that names the
    object of job's grant (from powerboxd's grant-end line), waited for;
    returns (object id W:G, the line)."""
    ends = [e for e in log_events(u.text()[since:], "grant-end")
            if e.get("job") == job]
    obj = ends[0].get("object-id", "") if ends else ""
    m = re.fullmatch(r"(\d+):(\d+)", obj)
    if m is None:
        fail(f"any-installer-lost: the grant-end of job {job} names no "
             f"object-id: {ends}")
    want = f"RETIRE object {m.group(1)} gen {m.group(2)}"
    line = re.compile(re.escape(want) + r"\b")
    wait_for(lambda: line.search(u.text()[since:]) is not None,
             f"any-installer-lost: vfsd never logged '{want}'", 20.0)
    return obj, want


def installer_lost_cmd(job, cmd, key):
    """Sends one command line to the reader; returns its answer to key."""
    n = len(job.lines)
    job.write(cmd + "\n")
    job.wait_line(lambda l: l is not None and l.startswith(key + "="),
                  key + "=", 20.0, n)
    return job.kv(n).get(key)


def any_installer_lost(bin_dir, work):
    """A sandboxed reader (`pbx run --sandbox --grant read:...`, the
    object installed by procd: pbx-test-fdcat --installed 5) opens a
    revocable descriptor of its object and reads it in 100-byte pieces;
    procd is killed (SIGKILL). powerboxd ends the grant `end=lost
    reason=installer-lost`, vfsd retires exactly its object, and the
    reader's next two reads through the descriptor fail EIO while it
    keeps running (it answers one more command and exits 0)."""
    u = Up(bin_dir, work)
    job = None
    try:
        big = os.path.join(u.root, "docs", "big.bin")
        with open(big, "wb") as f:
            f.write(bytes(range(256)) * 64)
        err = os.path.join(work, "reader.err")
        job = Launched(
            types.SimpleNamespace(pgid=u.proc.pid),
            [os.path.join(bin_dir, "pbx"), "--dir", u.dir, "run",
             "--sandbox", "--grant", "read:docs/big.bin", "--",
             os.path.join(bin_dir, "pbx-test-fdcat"), "--installed", "5"],
            stderr=open(err, "w", encoding="utf-8"))
        job.wait_line(lambda l: l == "installed=5", "installed=5", 20.0)
        pat = re.compile(r"is job (\d+:\d+) \(pid \d+\)")

        def named():
            with open(err, encoding="utf-8") as f:
                return pat.search(f.read())
        # pbx run names the job once launchd answered, maybe after the
        # job's first line: wait for it, bounded.
        wait_for(named, "any-installer-lost: pbx run named no job", 10.0)
        jid = named().group(1)
        if installer_lost_cmd(job, "openfd", "openfd") != "ok":
            fail(f"any-installer-lost: openfd: {job.lines}")
        for _ in range(3):
            if installer_lost_cmd(job, "fdread", "fdread") != "ok 100":
                fail(f"any-installer-lost: a piece before: {job.lines}")
        old = u.stack()["procd"]
        since = len(u.text())
        os.kill(old, signal.SIGKILL)
        restarted(u, "procd", old, ["procd"], since)
        ended(u, since, jid, ("lost", "installer-lost"),
              "any-installer-lost", 20.0)
        obj, want = installer_lost_retire(u, jid, since)
        after = installer_lost_cmd(job, "fdread", "fdread")
        again = installer_lost_cmd(job, "fdread", "fdread")
        alive = installer_lost_cmd(job, "read", "read")
        job.proc.stdin.close()
        if job.wait(timeout=30) != 0 or after != "failed EIO" or \
                again != "failed EIO" or alive is None:
            fail(f"any-installer-lost: after procd's kill: {after!r} "
                 f"{again!r} {alive!r} rc {job.proc.returncode}")
        print(f"run: any-installer-lost: three 100-byte pieces read; procd "
              f"killed; job {jid}'s grant ended lost reason "
              f"installer-lost; vfsd logged '{want}' (object {obj}); the "
              f"next two reads failed EIO; the reader answered "
              f"read={alive} and exited 0")
        u.stop()
    finally:
        if job is not None and job.proc.poll() is None:
            job.proc.kill()
        u.close()
