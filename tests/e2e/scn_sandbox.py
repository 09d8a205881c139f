"""e2e scenarios (tests/e2e/run.py) of pbx open, pbx run and the sandbox:
pbx-open, sandbox, sandbox-dynamic, any-spoof, sandbox-walls and
pbx-run-grant."""
import errno
import os
import re
import select
import shutil
import shlex
import socket
import subprocess
import tempfile
import time

from e2e_harness import fail, key_values, last_object, read_rows, wait_for
from e2e_jobs import clear_pane, flush_typed, Launched, pane_text, Shell, tmux
from scn_any import broker_prompt


def pbx_open(st):
    """`pbx open` inside a launched shell job (13:1, entry bin/pbx), each
    command's stdout and stderr in files of the work directory."""
    with open(os.path.join(st.root, "docs", "readme.txt"), "rb") as f:
        want = f.read()
    job = Shell(st, "13:1", entry="bin/pbx")
    out = os.path.join(st.work, "pbx-open.out")
    err = os.path.join(st.work, "pbx-open.err")

    def pbx_open_run(*args):
        argv = [os.path.join(st.bin_dir, "pbx"), "--dir", st.work, "open"]
        rc, _ = job.sh(shlex.join(argv + list(args)) + " >" +
                       shlex.quote(out) + " 2>" + shlex.quote(err))
        with open(out, "rb") as f, open(err, encoding="utf-8") as e:
            return rc, f.read(), e.read()

    rc, got, said = pbx_open_run("docs/readme.txt")
    if rc != 0 or got != want or said != "":
        fail(f"pbx-open: read: rc {rc}, stdout {got!r}, stderr {said!r}")
    obj = last_object(st)
    wait_for(lambda: f"RETIRE object {obj}" in st.peer_log("vfsd"),
             f"pbx-open: vfsd never retired object {obj}")
    if not job.running():
        fail("pbx-open: the job ended before the RETIRE was checked")
    print(f"run: pbx open docs/readme.txt printed its {len(want)} bytes "
          f"exactly; object {obj} retired while the job still runs (the "
          f"one-shot grant consumed)")
    rc, got, said = pbx_open_run("--op", "stat", "docs/readme.txt")
    kv = key_values(got.decode("utf-8", "replace"))
    if rc != 0 or kv.get("size") != str(len(want)) or said != "":
        fail(f"pbx-open: stat: rc {rc}, stdout {got!r}, stderr {said!r}")
    rc, got, said = pbx_open_run("docs/missing.txt")
    if rc != 1 or got != b"" or said.count("\n") != 1 or \
            "docs/missing.txt" not in said or "no such object" not in said:
        fail(f"pbx-open: not-found: rc {rc}, stdout {got!r}, "
             f"stderr {said!r}")
    rc, got, said = pbx_open_run("--op", "write", "docs/readme.txt")
    if rc != 1 or said.count("\n") != 1 or "denied (by policy)" not in said:
        fail(f"pbx-open: write: rc {rc}, stderr {said!r}")
    rc, got, said = pbx_open_run()
    if rc != 2 or said.count("\n") != 1 or "SELECTOR" not in said:
        fail(f"pbx-open: no selector: rc {rc}, stderr {said!r}")
    if job.close() != 0:
        fail("pbx-open: the job's shell failed")
    alone = st.run([os.path.join(st.bin_dir, "pbx"), "--dir", st.work,
                    "open", "docs/readme.txt"])
    if alone.returncode != 1 or "PBX_LAUNCHD_FD" not in alone.stderr:
        fail(f"pbx-open: outside a job: rc {alone.returncode} "
             f"{alone.stderr!r}")
    print(f"run: pbx open --op stat: size={kv.get('size')}; missing "
          f"selector, policy denial and no job each exit 1 with one line; "
          f"no SELECTOR exits 2")


def sandbox(st):
    """`pbx run --sandbox` brokers by default (no --scope): dynamic /bin/cat
    opening a file of the stack's root is prompted for on the pane, naming
    cat and the file, and y prints exactly its bytes. With --no-broker
    pbx-demo's direct open is refused by the kernel, then it asks, is
    prompted for, reads exactly the file once. A write outside the root is
    refused without a prompt (a dynamic /bin/sh never writes its mark);
    --no-broker with --scope, and --sandbox where the stack names no root,
    are refused before anything runs."""
    with open(os.path.join(st.root, "docs", "readme.txt"), "rb") as f:
        want = f.read().decode("utf-8")
    pbx = os.path.join(st.bin_dir, "pbx")
    direct = os.path.join(st.root, "docs", "readme.txt")
    clear_pane(st)
    cat = Launched(st, [pbx, "--dir", st.work, "run", "--sandbox", "--quiet",
                        "--", "/bin/cat", direct])
    screen = broker_prompt(st, "docs/readme.txt", "cat")
    print("run: the terminal shows:\n" + "\n".join(
        "    " + l for l in screen.splitlines() if l.strip()))
    tmux("send-keys", "-t", st.pane, "y")
    if cat.wait(timeout=30) != 0:
        fail(f"sandbox: cat exited {cat.proc.returncode}")
    with cat.cv:
        got = "".join(l + "\n" for l in cat.lines if l is not None)
    if got != want:
        fail(f"sandbox: cat printed {got!r}, the file holds {want!r}")
    print("run: --sandbox alone: cat's open was brokered, prompted for "
          "naming cat and docs/readme.txt, y printed exactly its bytes")
    clear_pane(st)
    demo = Launched(st, [pbx, "--dir", st.work, "run", "--sandbox",
                         "--no-broker", "--",
                         os.path.join(st.bin_dir, "pbx-demo"), "--direct",
                         direct, "--exceptional", "docs/readme.txt"])
    demo.wait_line(lambda l: l.startswith("   the kernel refused: ") and
                   "(errno 13)" in l, "the kernel's refusal of its open()")
    screen = broker_prompt(st, "docs/readme.txt", "pbx-demo")
    tmux("send-keys", "-t", st.pane, "y")
    at = demo.wait_line(lambda l: l.startswith("3. I read the file"),
                        "the bytes it read")
    ended = demo.wait_line(lambda l: l.startswith("4. "), "its consume",
                           start=at)
    with demo.cv:
        shown_lines = demo.lines[at + 1:ended]
    got = "".join(l[len("   | "):] + "\n" for l in shown_lines)
    if f"({len(want.encode())} bytes)" not in demo.lines[at] or got != want:
        fail(f"sandbox: it read {got!r}, the file holds {want!r}")
    demo.wait_line(lambda l: l.startswith("5. I try to read again") and
                   "refused" in l, "the refused read after consume",
                   start=ended)
    if demo.wait(timeout=30) != 0:
        fail(f"sandbox: pbx-demo exited {demo.proc.returncode}")
    print("run: --no-broker: pbx-demo was refused its file by the kernel, "
          "prompted for on the pane, read exactly the file's bytes, and "
          "its read after consuming the one-shot grant failed")
    mark = os.path.join(st.work, "sandbox.mark")
    clear_pane(st)
    out = subprocess.run([pbx, "--dir", st.work, "run", "--sandbox", "--",
                          "/bin/sh", "-c", "echo ran > " + shlex.quote(mark)],
                         capture_output=True, text=True, timeout=30,
                         check=False, stdin=subprocess.DEVNULL)
    if out.returncode != 2 or "Permission denied" not in out.stderr or \
            os.path.exists(mark) or "Approve?" in pane_text(st):
        fail(f"sandbox: a dynamic program: rc {out.returncode}, "
             f"{out.stderr!r}, wrote: {os.path.exists(mark)}")
    print(f"run: /bin/sh under --sandbox ran and its write outside the "
          f"root was refused without a prompt: "
          f"{out.stderr.strip().splitlines()[-1]}")
    out = subprocess.run([pbx, "--dir", st.work, "run", "--sandbox",
                          "--no-broker", "--scope", "root", "--", "/bin/sh",
                          "-c", "echo ran > " + shlex.quote(mark)],
                         capture_output=True, text=True, timeout=30,
                         check=False, stdin=subprocess.DEVNULL)
    if out.returncode != 125 or "--no-broker takes neither --scope" not in \
            out.stderr or os.path.exists(mark):
        fail(f"sandbox: --no-broker --scope: rc {out.returncode}, "
             f"{out.stderr!r}")
    print("run: --no-broker with --scope: refused before anything ran "
          "(exit 125)")
    # A runtime directory that names no root: refused, never unbrokered.
    bare = tempfile.mkdtemp(prefix="pbx-noroot-", dir=st.work)
    out = subprocess.run([pbx, "--dir", bare, "run", "--sandbox", "--",
                          "/bin/sh", "-c", "echo ran > " + shlex.quote(mark)],
                         capture_output=True, text=True, timeout=30,
                         check=False, stdin=subprocess.DEVNULL)
    shutil.rmtree(bare, ignore_errors=True)
    if out.returncode != 125 or "names none" not in out.stderr or \
            "--no-broker" not in out.stderr or os.path.exists(mark):
        fail(f"sandbox: no root.path: rc {out.returncode}, {out.stderr!r}")
    print("run: a stack that names no root: --sandbox refused (exit 125), "
          "naming --no-broker")


def sandbox_dynamic(st):
    """Dynamic programs under `pbx run --sandbox`: /bin/cat, /bin/sh and
    python3 start under the system profile and read system files; a file
    of the user's gives EACCES; --profile adds a directory, or removes
    /usr so that python3 fails to start; bad profiles are refused with
    their line."""
    pbx = os.path.join(st.bin_dir, "pbx")

    def run(*argv, profile=None, sandbox=True):
        cmd = [pbx, "--dir", st.work, "run"]
        cmd += ["--sandbox"] if sandbox else []
        cmd += ["--profile", profile] if profile is not None else []
        return subprocess.run(cmd + ["--quiet", "--"] + list(argv),
                              capture_output=True, text=True, timeout=60,
                              check=False, stdin=subprocess.DEVNULL)

    with open("/etc/passwd", encoding="utf-8") as f:
        passwd = f.read()
    with open("/usr/lib/os-release", encoding="utf-8") as f:
        release = f.read()
    secret = os.path.join(st.work, "dynamic-secret.txt")
    with open(secret, "w", encoding="utf-8") as f:
        f.write("the user's own\n")
    # The system's python3 (a python3 of the user's, such as pyenv's
    # under $HOME, lies outside the system profile, as it should).
    py = "/usr/bin/python3"
    if not os.access(py, os.X_OK):
        fail("sandbox-dynamic: no /usr/bin/python3 (.ci/run installs it)")
    checks = [
        ("cat /etc/passwd", run("/bin/cat", "/etc/passwd"), 0, passwd, None),
        ("sh reads /etc/passwd",
         run("/bin/sh", "-c", "read l < /etc/passwd && echo sh:ok"), 0,
         "sh:ok\n", None),
        ("python3 /usr/lib/os-release",
         run(py, "-c", "import sys; sys.stdout.write(open("
             "'/usr/lib/os-release').read())"), 0, release, None),
        ("cat the user's file", run("/bin/cat", secret), 1, "",
         "Permission denied"),
        ("sh the user's file",
         run("/bin/sh", "-c", "read l < " + shlex.quote(secret)), 2, "",
         "Permission denied"),
        ("python3 the user's file",
         run(py, "-c", f"open({secret!r})"), 1, "",
         "PermissionError: [Errno 13] Permission denied"),
    ]
    # The job's own /proc/PID (cat is the job's process: the exec keeps
    # launchd's child's pid); a process it forks has another pid.
    out = run("/bin/cat", "/proc/self/status")
    if out.returncode != 0 or "Name:\tcat\n" not in out.stdout:
        fail(f"sandbox-dynamic: cat /proc/self/status: rc "
             f"{out.returncode}, {out.stderr!r}")
    print("run: cat /proc/self/status: exit 0, its own status")
    # Brokered: its own /proc/PID is its /proc/self (the broker maps the
    # caller's process number); another process's stays refused.
    out = run(py, "-c", "import os; s = open(f'/proc/{os.getpid()}/status')"
              ".read(); print(s.splitlines()[0]);"
              " open('/proc/1/status')")
    named = out.stdout.startswith("Name:\tpython3")
    if out.returncode != 1 or not named or \
            "PermissionError: [Errno 13] Permission denied: " \
            "'/proc/1/status'" not in out.stderr:
        fail(f"sandbox-dynamic: python3 /proc/PID/status: rc "
             f"{out.returncode}, {out.stdout!r}, {out.stderr!r}")
    print("run: python3 /proc/<its pid>/status: its own status; "
          "/proc/1/status: EACCES")
    for what, out, rc, want_out, want_err in checks:
        if out.returncode != rc or (want_err is None and (
                out.stdout != want_out or out.stderr != "")) or \
                (want_err is not None and want_err not in out.stderr):
            fail(f"sandbox-dynamic: {what}: rc {out.returncode} (want "
                 f"{rc}), out {out.stdout[:200]!r}, err {out.stderr!r}")
        print(f"run: {what}: exit {out.returncode}"
              + (f", {want_err}" if want_err else ", exact bytes"))
    # A directory of the user's beside the stack directory (not in it).
    extra = tempfile.mkdtemp(prefix="pbx-dynamic-",
                             dir=os.path.dirname(os.path.abspath(st.work)))
    try:
        note = os.path.join(extra, "note.txt")
        with open(note, "w", encoding="utf-8") as f:
            f.write("added by the profile\n")
        prof = os.path.join(extra, "add.profile")
        with open(prof, "w", encoding="utf-8") as f:
            f.write(f"# read one directory of mine\n+r {extra}\n")
        out = run("/bin/cat", note, profile=prof)
        if out.returncode != 0 or out.stdout != "added by the profile\n":
            fail(f"sandbox-dynamic: --profile +r: rc {out.returncode}, "
                 f"{out.stdout!r} {out.stderr!r}")
        out = run("/bin/cat", note)
        if out.returncode != 1 or "Permission denied" not in out.stderr:
            fail(f"sandbox-dynamic: without the profile: rc "
                 f"{out.returncode}, {out.stderr!r}")
        print("run: --profile '+r DIR' lets cat read DIR/note.txt; "
              "without it, Permission denied")
        with open(prof, "w", encoding="utf-8") as f:
            f.write("-/usr\n")
        out = run(py, "-c", "print('started')", profile=prof)
        if out.returncode != 126 or "started" in out.stdout or \
                "execveat: Permission denied" not in out.stderr:
            fail(f"sandbox-dynamic: -/usr: rc {out.returncode}, "
                 f"{out.stdout!r} {out.stderr!r}")
        print(f"run: --profile '-/usr': python3 never started: "
              f"{out.stderr.strip()}")
        real = os.path.realpath(st.work)
        bad = [(f"# ok\n+r {real}/root\n", "line 2", "stack directory"),
               ("+w /opt\n", "line 1", "not a line of the format"),
               (f"+r {os.path.dirname(real)}\n",
                "line 1", "stack directory")]
        for text, line, why in bad:
            with open(prof, "w", encoding="utf-8") as f:
                f.write(text)
            out = run("/bin/cat", note, profile=prof)
            if out.returncode != 125 or line not in out.stderr or \
                    why not in out.stderr or out.stdout:
                fail(f"sandbox-dynamic: profile {text!r}: rc "
                     f"{out.returncode}, {out.stderr!r}")
            print(f"run: profile refused: {out.stderr.strip()}")
        # pbx-launchd run takes --profile too.
        with open(prof, "w", encoding="utf-8") as f:
            f.write(f"+r {extra}\n")
        out = subprocess.run(
            [os.path.join(st.bin_dir, "pbx-launchd"), "run", "--control",
             st.control, "--sandbox", "--profile", prof, "--", "/bin/cat",
             note], capture_output=True, text=True, timeout=60, check=False,
            stdin=subprocess.DEVNULL)
        if out.returncode != 0 or out.stdout != "added by the profile\n":
            fail(f"sandbox-dynamic: pbx-launchd run --profile: rc "
                 f"{out.returncode}, {out.stdout!r} {out.stderr!r}")
        print("run: pbx-launchd run --sandbox --profile: cat read the file")
        # launchd checks the file itself: a path that the format allows
        # but that does not exist is refused there, not by the launcher.
        gone = os.path.join(extra, "gone")
        with open(prof, "w", encoding="utf-8") as f:
            f.write(f"+r {extra}\n+r {gone}\n")
        out = run("/bin/cat", note, profile=prof)
        if out.returncode != 125 or "profile was refused" not in out.stderr \
                or out.stdout:
            fail(f"sandbox-dynamic: launchd's own check: rc "
                 f"{out.returncode}, {out.stderr!r}")
        said = f"sandbox: profile line 2: {gone}: No such file or directory"
        wait_for(lambda: said in st.peer_log("launchd"),
                 f"sandbox-dynamic: launchd never logged '{said}'")
        print(f"run: launchd refused a profile naming {gone}: "
              f"{out.stderr.strip()}")
        # A link into the stack directory: the launcher sees a plain path
        # beside it; launchd judges where the link leads and refuses.
        link = os.path.join(extra, "into-stack")
        os.symlink(real, link)
        with open(prof, "w", encoding="utf-8") as f:
            f.write(f"+r {link}\n")
        out = run("/bin/cat", os.path.join(link, "launchd.pid"),
                  profile=prof)
        said = (f"sandbox: profile line 1: {link} is {real}: a path at, "
                f"beneath or above the stack directory")
        if out.returncode != 125 or "profile was refused" not in out.stderr \
                or out.stdout:
            fail(f"sandbox-dynamic: a link into the stack directory: rc "
                 f"{out.returncode}, {out.stderr!r}")
        wait_for(lambda: said in st.peer_log("launchd"),
                 f"sandbox-dynamic: launchd never logged '{said}'")
        print(f"run: launchd refused a profile whose path links into the "
              f"stack directory: {said}")
        out = run("/bin/cat", note, profile=prof, sandbox=False)
        if out.returncode != 2 or "--sandbox" not in out.stderr:
            fail(f"sandbox-dynamic: --profile alone: rc {out.returncode}, "
                 f"{out.stderr!r}")
    finally:
        shutil.rmtree(extra, ignore_errors=True)


def any_spoof(st):
    """While a real prompt shows, a sandboxed program on the same terminal
    prints a look-alike prompt (escape sequences included) and reads its
    input: none of its output reaches the pane until the prompt is
    answered, the person's y reaches ttyd alone, and the program's own
    fake prompt grants nothing."""
    clear_pane(st)
    flush_typed(st)
    pbx = os.path.join(st.bin_dir, "pbx")
    def approvals():
        return sum(1 for l in st.peer_log("ttyd").splitlines()
                   if l.endswith(": approve"))
    ttyd_before = approvals()
    since = len(st.peer_log("launchd"))
    term = os.open(st.tty, os.O_RDWR | os.O_NOCTTY)
    try:
        job = subprocess.Popen(
            [pbx, "--dir", st.work, "run", "--sandbox", "--",
             os.path.join(st.bin_dir, "pbx-test-spoof"), "docs/readme.txt"],
            stdin=term, stdout=term, stderr=term, process_group=st.pgid)
    finally:
        os.close(term)
    intact = "Approve? [y/n] (press y or n, no Enter)"

    def shown():
        screen = pane_text(st)
        return intact in screen and 'selector: "docs/readme.txt"' in screen
    wait_for(shown, "any-spoof: the real prompt never showed", 20.0)
    # launchd says when a held job's output fills its buffer: the program
    # has written look-alikes since the hold began, and is blocked now.
    wait_for(lambda: "output held" in st.peer_log("launchd")[since:],
             "any-spoof: launchd never held the program's output", 20.0)
    screen = pane_text(st)
    tail = screen[screen.index(intact) + len(intact):]
    if "SPOOF" in tail or tail.strip() != "" or \
            'selector: "docs/readme.txt"' not in screen or \
            "program : pbx-test-spoof" not in screen:
        fail(f"any-spoof: the prompt was drawn over:\n{screen}")
    print("run: the real prompt, intact while the program is held:\n" +
          "\n".join("    " + l for l in screen.splitlines() if l.strip()))
    tmux("send-keys", "-t", st.pane, "y")
    wait_for(lambda: "SPOOF-ASK" in pane_text(st),
             "any-spoof: the program never reached its own fake prompt",
             20.0)
    screen = pane_text(st)
    if "spoof: raw ok" not in screen:
        fail(f"any-spoof: the program could not make its input raw (a "
             f"leaked key would go unseen):\n{screen}")
    if "spoof: decision approved" not in screen or \
            "spoof: read 0 key(s) meant for the prompt" not in screen:
        fail(f"any-spoof: the program saw the answer or no approval:\n"
             f"{screen}")
    # Its own look-alike is answered y: that reaches the program (no
    # prompt shows), and grants nothing.
    tmux("send-keys", "-t", st.pane, "y")
    wait_for(lambda: "spoof: got y" in pane_text(st),
             "any-spoof: the program never read its own answer", 20.0)
    if job.wait(timeout=30) != 0:
        fail(f"any-spoof: pbx run exited {job.returncode}")
    got = approvals() - ttyd_before
    if got != 1 or "docs/secret.txt" in st.peer_log("ttyd"):
        fail(f"any-spoof: ttyd logged {got} approvals (want the one "
             f"real prompt), or a prompt for docs/secret.txt")
    print("run: any-spoof: no look-alike reached the pane while the prompt "
          "showed; y went to ttyd (the program read 0 keys); its own fake "
          "prompt's y reached it and granted nothing (one approval)")


def walls_expected(socks):
    """The attempt names pbx-test-walls prints for socks (paths), besides
    the ones naming the sibling's pid and the executed file."""
    names = ["a descriptor above 4", "socketpair AF_UNIX stream"]
    names += ["socket " + f for f in (
        "AF_UNIX stream", "AF_UNIX dgram", "AF_UNIX seqpacket",
        "AF_INET stream", "AF_INET dgram", "AF_INET icmp", "AF_INET6 stream",
        "AF_INET6 dgram", "AF_NETLINK route", "AF_PACKET raw",
        "AF_VSOCK stream", "AF_ALG seqpacket")]
    for who in ("stdin", "job connection"):
        names += [f"connect {who} to {p}" for p in socks]
        names += [f"connect {who} to tcp 127.0.0.1",
                  f"connect {who} to an abstract socket"]
    names += ["ptrace PTRACE_SEIZE sibling", "process_vm_readv sibling",
              "pidfd_open sibling", "prlimit64 sibling", "kill sibling",
              "tgkill sibling", "kill -1",
              "sendmsg SCM_CREDENTIALS naming the parent",
              "capabilities effective", "capabilities permitted",
              "io_uring_setup",
              "unshare CLONE_NEWUSER", "clone CLONE_NEWUSER",
              "clone3 CLONE_NEWUSER", "x32 getpid", "bpf", "perf_event_open",
              "userfaultfd", "keyctl", "mount", "ioctl TIOCSTI"]
    # Only root can drop its bounding set (the probe asks only then).
    if os.geteuid() == 0:
        names.append("capabilities bounding")
    return names


def walls_host_int(path, default):
    """The integer in /proc file path, or default when it is absent."""
    try:
        with open(path, encoding="ascii") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return default


def walls_control_other(socks):
    """What the unsandboxed probe may see besides ALLOWED, wall by wall:
    the errno numbers that show the call reached the kernel and was
    refused for a reason of this host or of the attempt itself, never the
    sandbox's. Every other wall must be ALLOWED, so a wall the sandboxed
    run refuses for an unrelated reason (ENOTSOCK, a wrong pid) fails."""
    root = os.geteuid() == 0
    other = {
        # Cannot be ALLOWED: launchd gives every job, sandboxed or not,
        # only its own descriptors.
        "a descriptor above 4": {errno.EBADF},
        # Cannot be ALLOWED: the probe names a directory that does not
        # exist (a mount that went through would change the host's).
        "mount": {errno.ENOENT},
        # Cannot be ALLOWED: standard input is a socket, not a terminal
        # (typing into the user's terminal is not tried).
        "ioctl TIOCSTI": {errno.ENOTTY},
        # Kernel build options: the family or x32 may be absent.
        "socket AF_VSOCK stream": {errno.EAFNOSUPPORT},
        "socket AF_ALG seqpacket": {errno.EAFNOSUPPORT},
        "x32 getpid": {errno.ENOSYS},
    }
    low, high = 1, 0
    try:
        with open("/proc/sys/net/ipv4/ping_group_range",
                  encoding="ascii") as f:
            low, high = (int(x) for x in f.read().split())
    except (OSError, ValueError):
        pass
    if not low <= os.getegid() <= high:
        other["socket AF_INET icmp"] = {errno.EACCES}
    for p in socks:
        # A socket of the stack that is not there while it runs (the
        # route socket exists only while powerboxd restarts).
        if not os.path.exists(p):
            for who in ("stdin", "job connection"):
                other[f"connect {who} to {p}"] = {errno.ENOENT}
    if walls_host_int("/proc/sys/kernel/io_uring_disabled", 0) != 0:
        other["io_uring_setup"] = {errno.EPERM}
    if walls_host_int("/proc/sys/user/max_user_namespaces", 1) == 0:
        for n in ("unshare", "clone", "clone3"):
            other[f"{n} CLONE_NEWUSER"] = {errno.ENOSPC}
    if not root:
        # Another user holds no capability and may not name another pid.
        for n in ("socket AF_PACKET raw",
                  "sendmsg SCM_CREDENTIALS naming the parent",
                  "capabilities effective", "capabilities permitted"):
            other[n] = {errno.EPERM}
        if walls_host_int("/proc/sys/kernel/unprivileged_bpf_disabled",
                          0) != 0:
            other["bpf"] = {errno.EPERM}
        if walls_host_int("/proc/sys/kernel/yama/ptrace_scope", 0) != 0:
            other["ptrace PTRACE_SEIZE sibling"] = {errno.EPERM}
            other["process_vm_readv sibling"] = {errno.EPERM}
    return other


def sandbox_walls(st):
    """pbx-test-walls under `pbx run --sandbox`, its standard input an
    unconnected unix seqpacket socket: every socket family, connecting that socket
    and its job connection to every socket of the stack, TCP to a
    localhost listener and an abstract listener, ptrace, memory and /proc
    of a sibling, exec of another static program, io_uring, namespaces and
    more: each refused with EPERM or EACCES (clone3 ENOSYS), no listener
    ever sees a connection, the sibling lives; its honest request beside
    them is approved and reads the file. The same program unsandboxed is
    let through (so the probe sees a missing wall)."""
    with open(os.path.join(st.root, "docs", "readme.txt"), "rb") as f:
        want = f.read().decode("utf-8").replace("\n", "|")
    pbx = os.path.join(st.bin_dir, "pbx")
    walls = os.path.join(st.bin_dir, "pbx-test-walls")
    socks = [st.public, st.control, st.scope, st.lie_scope, st.views,
             st.installs, os.path.join(st.work, "stage.sock"),
             os.path.join(st.work, "vfsd-route.sock")]
    tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    tcp.bind(("127.0.0.1", 0))
    tcp.listen(4)
    tcp.setblocking(False)
    name = f"pbx-walls-{os.getpid()}"
    abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    abstract.bind("\0" + name)
    abstract.listen(4)
    abstract.setblocking(False)
    # A seqpacket socket, as the stack's are: without the filter its
    # connect() to the first of them would go through.
    loose = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    sibling = subprocess.Popen(["sleep", "120"], process_group=st.pgid,
                               stdin=subprocess.DEVNULL)
    try:
        argv = [pbx, "--dir", st.work, "run", "--sandbox", "--", walls]
        for p in socks:
            argv += ["--sock", p]
        argv += ["--sibling", str(sibling.pid), "--tcp",
                 str(tcp.getsockname()[1]), "--abstract", name, "--exec",
                 os.path.join(st.bin_dir, "pbx-demo"), "docs/readme.txt"]
        out = subprocess.run(argv, capture_output=True, text=True,
                             timeout=60, check=False, stdin=loose.fileno(),
                             process_group=st.pgid)
        print(out.stdout, end="")
        lines = [l for l in out.stdout.splitlines() if l.startswith("wall ")]
        seen = {l[len("wall "):l.rindex(": ")]: l[l.rindex(": ") + 2:]
                for l in lines}
        names = walls_expected(socks) + [
            f"open /proc/{sibling.pid}/{f}"
            for f in ("environ", "status", "cmdline", "maps")] + [
            "execve " + os.path.join(st.bin_dir, "pbx-demo")]
        missing = [n for n in names if n not in seen]
        if missing or len(lines) != len(names):
            fail(f"sandbox-walls: attempts missing {missing} or extra "
                 f"({len(lines)} lines, {len(names)} expected): "
                 f"{out.stdout!r} {out.stderr!r}")
        bad = [f"{n}: {v}" for n, v in seen.items()
               if v not in ("refused errno 1 EPERM", "refused errno 13 EACCES")
               and not (n.startswith("clone3") and
                        v == "refused errno 38 ENOSYS")
               and not (n == "a descriptor above 4" and
                        v == "refused errno 9 EBADF")]
        if bad:
            fail(f"sandbox-walls: not refused with EPERM or EACCES: {bad}")
        honest = f"honest: approved, {len(want)} bytes: {want}"
        if out.returncode != 0 or honest not in out.stdout.splitlines():
            fail(f"sandbox-walls: the honest request: rc {out.returncode}, "
                 f"want {honest!r} in {out.stdout!r}, {out.stderr!r}")
        for lst, what in ((tcp, "TCP"), (abstract, "abstract")):
            try:
                lst.accept()[0].close()
                fail(f"sandbox-walls: the {what} listener got a connection")
            except BlockingIOError:
                pass
        if sibling.poll() is not None:
            fail("sandbox-walls: the sibling did not survive")
        if "network rights 0x3" not in st.peer_log("launchd") and \
                "network rights 0x0" not in st.peer_log("launchd"):
            fail("sandbox-walls: launchd did not log its walls")
        print(f"run: sandboxed, {len(lines)} attempts each refused "
              f"(EPERM/EACCES; clone3 ENOSYS); the honest request read the "
              f"file")
        sandbox_walls_control(st, argv, names, socks, loose)
    finally:
        sibling.kill()
        sibling.wait()
        for s_ in (tcp, abstract, loose):
            s_.close()


def sandbox_walls_control(st, argv, names, socks, loose):
    """The same probe, same arguments and standard input, unsandboxed:
    every wall must be ALLOWED, or refused with an errno that
    walls_control_other names for it (never the sandbox's answer for a
    reason of its own)."""
    free_argv = [a for a in argv if a != "--sandbox"]
    free_argv.insert(free_argv.index("--") + 2, "--no-honest")
    free = subprocess.run(free_argv, capture_output=True, text=True,
                          timeout=60, check=False, stdin=loose.fileno(),
                          process_group=st.pgid)
    print(free.stdout, end="")
    lines = [l for l in free.stdout.splitlines() if l.startswith("wall ")]
    seen = {l[len("wall "):l.rindex(": ")]: l[l.rindex(": ") + 2:]
            for l in lines}
    other = walls_control_other(socks)
    bad = []
    for n in names:
        v = seen.get(n)
        ok = v == "ALLOWED" or any(
            v is not None and v.startswith(f"refused errno {e} ")
            for e in other.get(n, ()))
        if not ok:
            bad.append(f"{n}: {v}")
    if bad or free.returncode != 1:
        fail(f"sandbox-walls: unsandboxed, walls not let through (or not "
             f"for the host's reason): {bad}; rc {free.returncode} "
             f"{free.stderr!r}")
    allowed = sum(1 for v in seen.values() if v == "ALLOWED")
    print(f"run: unsandboxed, the same probe was let through: {allowed} of "
          f"{len(names)} walls ALLOWED, the rest refused for the host's or "
          f"the attempt's own reason")


def pbx_run_grant(st):
    """`pbx run --grant read:docs/readme.txt -- PROG` in install mode:
    PROG (pbx-test-fdcat, static) starts with the object at descriptor 5
    and prints exactly the file's bytes through it, sandboxed too; procd's
    row names the job's own pid and slot 5; after EXPIRE of the job the
    read through that same descriptor fails; a missing selector ends
    not-found and PROG never runs."""
    with open(os.path.join(st.root, "docs", "readme.txt"), "rb") as f:
        want = f.read()
    pbx = os.path.join(st.bin_dir, "pbx")
    fdcat = os.path.join(st.bin_dir, "pbx-test-fdcat")
    errf = os.path.join(st.work, "pbx-run-grant.err")
    with open(errf, "w+b") as err:
        job = subprocess.Popen(
            [pbx, "--dir", st.work, "run", "--grant", "read:docs/readme.txt",
             "--", fdcat, "--again", "5"], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=err, process_group=st.pgid)
        got = b""
        deadline = time.monotonic() + 20
        while len(got) < len(want) and time.monotonic() < deadline:
            ready, _, _ = select.select([job.stdout], [], [], 1.0)
            if ready:
                chunk = os.read(job.stdout.fileno(), 65536)
                if not chunk:
                    break
                got += chunk

        def said_now():
            err.seek(0)
            return err.read().decode("utf-8", "replace")
        # pbx run names the job once launchd answered the launch, maybe
        # after PROG printed: wait (bounded) for its line.
        if got == want:
            wait_for(lambda: "is job " in said_now(),
                     f"pbx-run-grant: no job line in {said_now()!r}", 10.0)
        said = said_now()
        if got != want:
            job.kill()
            fail(f"pbx-run-grant: PROG printed {got!r}, the file holds "
                 f"{want!r}; stderr {said!r}")
        m = re.search(r"is job (\d+:\d+) \(pid (\d+)\)", said)
        if m is None:
            job.kill()
            fail(f"pbx-run-grant: no job line in {said!r}")
        jid, pid = m.group(1), int(m.group(2))
        rows = read_rows(st.installs)
        mine = [r for r in rows if r.startswith(f"process {pid} gen ") and
                " slot 5 " in r]
        if len(mine) != 1:
            job.kill()
            fail(f"pbx-run-grant: procd's rows {rows!r} have no slot 5 of "
                 f"pid {pid}")
        rc, out = st.launchd_expire("--control", jid)
        if rc != 0 or out != "expire=accepted":
            job.kill()
            fail(f"pbx-run-grant: EXPIRE of job {jid}: rc {rc} {out!r}")
        wait_for(lambda: not [r for r in read_rows(st.installs)
                              if r.startswith(f"process {pid} ")],
                 f"pbx-run-grant: procd still holds {read_rows(st.installs)}")
        job.stdin.write(b"go\n")
        job.stdin.close()
        rc = job.wait(timeout=30)
        err.seek(0)
        said = err.read().decode("utf-8", "replace")
    again = [l for l in said.splitlines() if "read again:" in l]
    if rc != 3 or len(again) != 1 or again[0].endswith(": ok"):
        fail(f"pbx-run-grant: after EXPIRE: rc {rc}, stderr {said!r}")
    print(f"run: job {jid} (pid {pid}) read exactly the file's "
          f"{len(want)} bytes at fd 5 ({mine[0]}); after EXPIRE: "
          f"{again[0].strip()}")
    out = subprocess.run([pbx, "--dir", st.work, "run", "--sandbox", "--grant",
                          "read:docs/readme.txt", "--", fdcat, "5"],
                         capture_output=True, timeout=30, check=False,
                         stdin=subprocess.DEVNULL)
    if out.returncode != 0 or out.stdout != want:
        fail(f"pbx-run-grant: sandboxed: rc {out.returncode}, stdout "
             f"{out.stdout!r}, stderr {out.stderr!r}")
    print("run: sandboxed, the same grant gave exactly the file's bytes")
    mark = os.path.join(st.work, "pbx-run-grant.mark")
    out = subprocess.run([pbx, "--dir", st.work, "run", "--grant",
                          "read:docs/missing.txt", "--", "/bin/sh", "-c",
                          "echo ran > " + shlex.quote(mark)],
                         capture_output=True, text=True, timeout=30,
                         check=False, stdin=subprocess.DEVNULL)
    named = [l for l in out.stderr.splitlines()
             if "docs/missing.txt: not-found" in l]
    if out.returncode != 1 or len(named) != 1 or os.path.exists(mark):
        fail(f"pbx-run-grant: a missing selector: rc {out.returncode}, "
             f"{out.stderr!r}, ran: {os.path.exists(mark)}")
    print(f"run: a missing selector: {named[0].strip()}; PROG never ran")
