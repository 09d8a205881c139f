"""e2e scenarios (tests/e2e/run.py) of `make run`'s demo, its policy and
pbx stop: make-run, policy-rules, policy-terminal, stop-status and
make-run-slow-start."""
import fcntl
import os
import re
import shutil
import shlex
import signal
import subprocess

from e2e_harness import fail, key_values, wait_for
from e2e_up import gone, proc_comm, Up
from scn_restart import Holder, Pane, restarted


# The file `make run` (peers/demo/run.sh) serves and shows.
DEMO_TEXT = ("This is docs/readme.txt, served by vfsd from the demo's root.\n"
             "An unchanged /bin/cat read it through a revocable "
             "descriptor.\n")


def demo_story_ok(text, want, what):
    """Fails unless the `make run` story text tells the new story in order:
    step 1 (/bin/cat under --sandbox) followed by exactly the file's
    lines (want, str) and "cat exited 0."; step 2 the reader's first line
    after "| ", the `pbx cancel` line, cat's own "Input/output error" and
    the reader's line saying it still runs; the story ends "make run:
    done". Other lines (a prompt on a terminal) may come between steps."""
    lines = [l.rstrip() for l in text.splitlines() if l.strip()]

    def at(pred, start, name):
        for i in range(start, len(lines)):
            if pred(lines[i]):
                return i
        fail(f"{what}: no {name} after line {start}:\n{text}")
    one = at(lambda l: l.startswith("make run: 1. an unchanged program: "
                                    "pbx run --sandbox -- /bin/cat "
                                    "docs/readme.txt"), 0, "step 1")
    ended = at(lambda l: l == "make run:    cat exited 0.", one, "cat's exit")
    want_lines = want.splitlines()
    shown = lines[ended - len(want_lines):ended]
    if shown != want_lines:
        fail(f"{what}: before cat's exit it showed {shown}, the file holds "
             f"{want!r}:\n{text}")
    two = at(lambda l: l.startswith("make run: 2. a reader keeps the file "
                                    "open; then pbx cancel"), ended, "step 2")
    first = at(lambda l: l == "   | " + want_lines[0], two,
               "the reader's first line")
    cancel = at(lambda l: re.match(r"make run:    pbx cancel \d+-\d+\.\d+: "
                                   r"the grant ended", l), first,
                "the pbx cancel line")
    eio = at(lambda l: l == "   | cat: -: Input/output error", cancel,
             "the reader's EIO")
    at(lambda l: l == "   | reader: that read failed (EIO); I am still "
       "running", eio, "the reader's line after its failed read")
    if not any(l.startswith("make run: done") for l in lines[-4:]):
        fail(f"{what}: the story does not end with 'make run: done':\n{text}")


def demo_log_ok(bin_dir, demo_work, what):
    """Fails unless `pbx log` of a finished `make run` in demo_work shows
    cat's brokered grant with lifetime invocation, ended by launchd's
    EXPIRE when cat exited, and the reader's ended by the user's cancel."""
    out = subprocess.run([os.path.join(bin_dir, "pbx"), "--dir",
                          os.path.join(demo_work, "stack"), "log", "--format",
                          "kv"], capture_output=True, text=True, timeout=30,
                         check=False)
    rows = [key_values(l.replace(" ", "\n")) for l in out.stdout.splitlines()]
    got = [(r.get("entry"), r.get("object"), r.get("lifetime"), r.get("end"),
            r.get("by"), r.get("reason")) for r in rows]
    want = [("cat", "docs/readme.txt", "invocation", "expired", "launchd",
             "expire"),
            ("sh", "docs/readme.txt", "invocation", "cancelled", "user",
             "cancel")]
    if out.returncode != 0 or got != want:
        fail(f"{what}: pbx log: rc {out.returncode} {got}, want {want}:\n"
             f"{out.stdout}{out.stderr}")


def up_of(demo_work):
    """The pid of the `pbx up` of a `make run` in demo_work (its lock
    file holds it), or None."""
    try:
        with open(os.path.join(demo_work, "stack", "lock"),
                  encoding="ascii") as f:
            pid = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return pid if proc_comm(pid) == "pbx" else None


def make_run(bin_dir, work):
    """`make run` (peers/demo/run.sh) on a real terminal, a tmux pane: the
    pane shows the trusted prompt naming cat and docs/readme.txt, y is
    typed, cat prints the file's bytes; then the reader's prompt (sh), y,
    its first line, pbx cancel and its EIO while it keeps running; the
    story ends "make run: done", exit 0. Then with standard input not a
    terminal: no prompt, the routine rule, the same story, exit 0. Both
    runs' logs show cat's grant (lifetime invocation) expired when cat
    exited and the reader's cancelled by the user."""
    os.makedirs(work, exist_ok=True)
    here = os.path.dirname(os.path.abspath(__file__))
    script = os.path.join(here, "..", "..", "peers", "demo", "run.sh")
    bin_dir = os.path.abspath(bin_dir)
    want = DEMO_TEXT
    tty_work, rc = os.path.join(work, "tty"), os.path.join(work, "tty.rc")
    # A previous run's status is never read as this run's.
    if os.path.exists(rc):
        os.remove(rc)
    pane = Pane(work)
    try:
        cmd = (f"sh {shlex.quote(script)} {shlex.quote(bin_dir)} "
               f"{shlex.quote(tty_work)}; echo $? > {shlex.quote(rc)}; "
               f"sleep 900")
        pane.tmux("respawn-pane", "-k", "-t", pane.pane, cmd)

        def story():
            return pane.tmux("capture-pane", "-p", "-J", "-S", "-", "-t",
                             pane.pane)

        def prompts(program):
            # How many prompts the pane showed, and whether the last one
            # names program and docs/readme.txt.
            parts = story().split("Approve?")
            last = parts[-2] if len(parts) > 1 else ""
            return len(parts) - 1, 'selector: "docs/readme.txt"' in last \
                and f"program : {program}" in last
        for n, program in ((1, "cat"), (2, "sh")):
            wait_for(lambda: prompts(program) == (n, True),
                     f"make-run: prompt {n} (naming {program} and "
                     f"docs/readme.txt) never showed:\n{story()}", 30.0)
            pane.tmux("send-keys", "-t", pane.pane, "y")
        wait_for(lambda: os.path.exists(rc) and
                 open(rc, encoding="ascii").read().strip() != "",
                 f"make-run: run.sh never ended:\n{story()}", 60.0)
        with open(rc, encoding="ascii") as f:
            status = f.read().strip()
        # tmux may show the pane's last lines a moment after run.sh
        # ended: wait (bounded) for its closing line before judging.
        wait_for(lambda: "make run: done" in story() or
                 "a step failed" in story(),
                 f"make-run: run.sh ended {status} but the pane never "
                 f"showed its closing line:\n{story()}", 10.0)
        text = story()
        if status != "0" or "you are on a terminal" not in text:
            fail(f"make-run: on a terminal: exit {status}:\n{text}")
        demo_story_ok(text, want, "make-run (terminal)")
        print("run: on a tmux pane, make run showed the prompt naming cat "
              "and docs/readme.txt, y approved it and cat printed the "
              "file's bytes; the reader's prompt (sh), y, its first line, "
              "pbx cancel, its next read failed with EIO and it ran on; "
              "the story ended 'make run: done'")
    finally:
        pid = up_of(tty_work)
        if pid is not None:
            os.kill(pid, signal.SIGTERM)
        pane.stop()
    if pid is not None:
        gone([pid], "make-run: pbx up of the terminal run")
    demo_log_ok(bin_dir, tty_work, "make-run (terminal)")
    ci = os.path.join(work, "ci")
    out = subprocess.run(["sh", script, bin_dir, ci],
                         stdin=subprocess.DEVNULL, capture_output=True,
                         text=True, timeout=120, check=False)
    if out.returncode != 0 or "no terminal: " not in out.stdout or \
            "Approve?" in out.stdout + out.stderr:
        fail(f"make-run: without a terminal: exit {out.returncode}:\n"
             f"{out.stdout}{out.stderr}")
    demo_story_ok(out.stdout, want, "make-run (no terminal)")
    demo_log_ok(bin_dir, ci, "make-run (no terminal)")
    print("run: without a terminal, make run used the routine rule (no "
          "prompt): cat's bytes exact, the reader's EIO after pbx cancel, "
          "exit 0")
    print("run: pbx log of both runs: cat's grant, lifetime invocation, "
          "expired by launchd when cat exited; the reader's cancelled by "
          "the user")

def pbx_status_lines(u):
    """`pbx status` of u's stack: (exit status, stdout lines, stderr)."""
    out = subprocess.run([os.path.join(u.bin_dir, "pbx"), "--dir", u.dir,
                          "status"], capture_output=True, text=True,
                         timeout=30, check=False)
    return out.returncode, out.stdout.splitlines(), out.stderr


def policy_request(u, entry, selector, urgency="routine"):
    """A one-shot read of selector by a job of entry through u's launchd:
    pbx-client's key=value lines and exit status."""
    b = lambda n: os.path.join(u.bin_dir, "pbx-" + n)
    out = subprocess.run(
        [b("launchd"), "run", "--control",
         os.path.join(u.dir, "launchd.sock"), "--session", "1",
         "--realm", "1", "--job", "21:1", "--entry", entry, "--",
         b("client"), "request", "--scope",
         os.path.join(u.dir, "scope.sock"), "--selector", selector,
         "--op", "read", "--class", "file", "--session", "1", "--realm",
         "1", "--wait-ms", "20000", "--lifetime", "one-shot", "--urgency",
         urgency, "--target", "42:5", "--slot", "21", "--then", "consume"],
        capture_output=True, text=True, check=False, timeout=60,
        stdin=subprocess.DEVNULL)
    return out.returncode, key_values(out.stdout)


def policy_rules(bin_dir, work):
    """Rules by entry and selector decide through POLICY then PROMPT, and
    pbx policy / pbx policy check agree with what ttyd did."""
    os.makedirs(work, exist_ok=True)
    pol = os.path.join(work, "rules.policy")
    with open(pol, "w", encoding="utf-8") as f:
        f.write("* * * * exceptional * * prompt\n"
                "* * read file routine cat secrets/** deny\n"
                "* * read file routine cat docs/*.txt allow\n")
    u = Up(bin_dir, work, ["--policy", pol])
    try:
        with open(os.path.join(u.root, "secrets.txt"), "w",
                  encoding="utf-8") as f:
            f.write("no\n")
        os.makedirs(os.path.join(u.root, "secrets"), exist_ok=True)
        with open(os.path.join(u.root, "secrets", "key"), "w",
                  encoding="utf-8") as f:
            f.write("no\n")
        cases = [("cat", "docs/readme.txt", "routine", 0, "approved"),
                 ("cat", "secrets/key", "routine", 3, "denied"),
                 ("cat", "docs/readme.txt", "exceptional", 3, "denied"),
                 ("bin/other", "docs/readme.txt", "routine", 3, "denied")]
        for entry, sel, urg, want_rc, want in cases:
            rc, kv = policy_request(u, entry, sel, urg)
            if rc != want_rc or kv.get("outcome") != want:
                fail(f"policy-rules: {entry} {sel} {urg}: rc {rc} {kv}, "
                     f"want {want}")
        # ttyd's lines reach stack.log through pbx up a moment after its
        # answers: wait (bounded) for the selector rules' deny line (the
        # second request's), then read the log.
        u.wait_log("deny by a selector rule (not shown)", "policy-rules")
        log = u.text()
        if "by a selector rule (not shown)" not in log or "Approve?" in log:
            fail("policy-rules: ttyd's log does not show the selector rules "
                 "deciding without a prompt")
        pbx = os.path.join(bin_dir, "pbx")
        listed = subprocess.run([pbx, "--dir", u.dir, "policy"],
                                capture_output=True, text=True, timeout=20,
                                check=False)
        if listed.returncode != 0 or \
                "3 * * read file routine cat docs/*.txt allow" not in \
                listed.stdout:
            fail(f"policy-rules: pbx policy: {listed.returncode} "
                 f"{listed.stdout}{listed.stderr}")
        checks = [(["cat", "read", "docs/readme.txt"], 0),
                  (["cat", "read", "secrets/key"], 3),
                  (["--urgency", "exceptional", "cat", "read",
                    "docs/readme.txt"], 4),
                  (["--entry", "bin/other", "x", "read", "docs/readme.txt"],
                   3)]
        for args, want_rc in checks:
            c = subprocess.run([pbx, "--dir", u.dir, "policy", "check"] +
                               args, capture_output=True, text=True,
                               timeout=20, check=False)
            if c.returncode != want_rc:
                fail(f"policy-rules: pbx policy check {args}: "
                     f"{c.returncode} {c.stdout}{c.stderr}, want {want_rc}")
        print("run: cat's docs/*.txt read approved and secrets/** denied by "
              "selector rules, no prompt shown; exceptional and unmatched "
              "denied; pbx policy lists the file, pbx policy check agrees")
        u.stop()
    finally:
        if u.proc.poll() is None:
            u.kill()
        u.close()


def policy_terminal(bin_dir, work):
    """pbx up's built-in policy: on a terminal it asks for what a program
    of another entry than pbx-* requests; without one, routine reads."""
    os.makedirs(work, exist_ok=True)
    pbx = os.path.join(bin_dir, "pbx")

    def check(u, prog):
        return subprocess.run([pbx, "--dir", u.dir, "policy", "check", prog,
                               "read", "docs/readme.txt"],
                              capture_output=True, text=True, timeout=20,
                              check=False).returncode
    pane = Pane(work)
    u = None
    try:
        u = Up(bin_dir, os.path.join(work, "tty"), ["--tty", pane.tty])
        with open(os.path.join(u.dir, "policy"), encoding="utf-8") as f:
            text = f.read()
        got = (check(u, "/bin/cat"), check(u, "pbx-demo"))
        if "* * * * routine * * prompt" not in text or got != (4, 0):
            fail(f"policy-terminal: on a terminal: checks {got}, policy:\n"
                 f"{text}")
        u.stop()
        u.close()
        u = Up(bin_dir, os.path.join(work, "notty"))
        got = (check(u, "/bin/cat"), check(u, "pbx-demo"))
        if got != (0, 0):
            fail(f"policy-terminal: without a terminal: checks {got}")
        u.stop()
        print("run: on a terminal the built-in policy prompts for cat's "
              "read and allows pbx-demo's; without one both are allowed")
    finally:
        if u is not None:
            if u.proc.poll() is None:
                u.kill()
            u.close()
        pane.stop()


def stop_status(bin_dir, work):
    """pbx status (pids, incarnations, live grants) and pbx stop."""
    u = Up(bin_dir, work)
    h = None
    try:
        procs = u.stack()
        rc, lines, err = pbx_status_lines(u)
        want = [f"stack {u.dir}", f"pbx-up {u.proc.pid} ready"] + \
            [f"{n} {procs[n]} running incarnation 1" for n in
             ("vfsd", "ttyd", "procd", "launchd", "powerboxd")] + \
            ["grants 0 live"]
        if rc != 0 or lines != want:
            fail(f"stop-status: pbx status: rc {rc} {lines} {err}, want "
                 f"{want}")
        h = Holder(u)
        h.opened("stop-status")
        wait_for(lambda: pbx_status_lines(u)[1][-1:] == ["grants 1 live"],
                 f"stop-status: pbx status never said 1 live grant: "
                 f"{pbx_status_lines(u)}")
        since = len(u.text())
        os.kill(procs["vfsd"], signal.SIGKILL)
        new = restarted(u, "vfsd", procs["vfsd"], ["vfsd"], since)
        wait_for(lambda: f"vfsd {new} running incarnation 2" in
                 pbx_status_lines(u)[1],
                 f"stop-status: pbx status after vfsd's restart: "
                 f"{pbx_status_lines(u)}")
        print(f"run: pbx status named pbx up {u.proc.pid}, the five "
              f"processes' pids, 0 then 1 live grant, and vfsd[{new}] "
              f"incarnation 2 after its restart")
        h.kill()
        h = None
        stop = subprocess.run([os.path.join(bin_dir, "pbx"), "--dir", u.dir,
                               "stop"], capture_output=True, text=True,
                              timeout=90, check=False)
        # pbx stop returned: pbx up must already have ended.
        ended_rc = u.proc.poll()
        if stop.returncode != 0 or ended_rc != 0:
            fail(f"stop-status: pbx stop rc {stop.returncode} "
                 f"{stop.stdout}{stop.stderr}; pbx up {ended_rc}")
        gone(list(procs.values()) + [new], "after pbx stop")
        with open(os.path.join(u.dir, "lock"), "w") as f:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        rc, lines, err = pbx_status_lines(u)
        again = subprocess.run([os.path.join(bin_dir, "pbx"), "--dir", u.dir,
                                "stop"], capture_output=True, text=True,
                               timeout=30, check=False)
        if rc != 1 or "no stack runs" not in err or again.returncode != 1 \
                or "no stack runs" not in again.stderr:
            fail(f"stop-status: after the stop: status rc {rc} {err!r}, "
                 f"stop rc {again.returncode} {again.stderr!r}")
        print("run: pbx stop returned once pbx up had ended (exit 0, the "
              "stack gone, lock free); then status and stop exit 1")
    finally:
        if h is not None:
            h.kill()
        if u.proc.poll() is None:
            u.kill()
        u.close()


def make_run_slow_start(bin_dir, work):
    """run.sh without a terminal, its stack slow to start (a `pbx` whose
    `up` sleeps 12 s first) and a stale WORK/up.out saying ready: it waits
    for pbx up's own ready event and exits 0 with the file's bytes."""
    os.makedirs(work, exist_ok=True)
    here = os.path.dirname(os.path.abspath(__file__))
    script = os.path.join(here, "..", "..", "peers", "demo", "run.sh")
    bin_dir = os.path.abspath(bin_dir)
    fake = os.path.join(work, "bin")
    shutil.rmtree(fake, ignore_errors=True)
    os.makedirs(fake)
    for name in os.listdir(bin_dir):
        if name != "pbx":
            os.symlink(os.path.join(bin_dir, name), os.path.join(fake, name))
    with open(os.path.join(fake, "pbx"), "w", encoding="utf-8") as f:
        f.write("#!/bin/sh\nif [ \"$1\" = up ]; then sleep 12; fi\n"
                f"exec {shlex.quote(os.path.join(bin_dir, 'pbx'))} \"$@\"\n")
    os.chmod(os.path.join(fake, "pbx"), 0o755)
    demo = os.path.join(work, "demo")
    os.makedirs(demo, exist_ok=True)
    with open(os.path.join(demo, "up.out"), "w", encoding="utf-8") as f:
        f.write("pbx up: ready in /a/previous/run\n")
    out = subprocess.run(["sh", script, fake, demo], stdin=subprocess.DEVNULL,
                         capture_output=True, text=True, timeout=180,
                         check=False)
    want = DEMO_TEXT
    if out.returncode != 0 or "make run: done" not in out.stdout:
        fail(f"make-run-slow-start: exit {out.returncode}:\n"
             f"{out.stdout}{out.stderr}")
    demo_story_ok(out.stdout, want, "make-run-slow-start")
    print("run: a stack 12 s slow to start, with a stale up.out saying "
          "ready: make run waited for pbx up's ready event and exited 0")
