"""The `pbx up` harness of the e2e run (tests/e2e/run.py): Up (a stack
started by pbx up, with its stack.log) and the helpers that follow its
supervisor's lines and processes, shared by the standalone scenarios."""
import os
import re
import signal
import subprocess
import time

from e2e_harness import (descendants, detach_mounts, fail, key_values,
                         launch_wait, proc_table, read_rows, SLOW, Stack,
                         wait_for)


class Up:
    """`pbx up` as a scenario starts it itself (standalone: no Stack):
    in a process group of its own, runtime directory WORK/run, serving
    WORK/root (holding docs/readme.txt), no terminal (stdin /dev/null, so
    ttyd gets /dev/null), ready when it writes `ready` to --ready-fd."""

    def __init__(self, bin_dir, work, extra=()):
        self.bin_dir = bin_dir
        self.dir = os.path.join(work, "run")
        self.root = os.path.join(work, "root")
        self.log = os.path.join(self.dir, "stack.log")
        os.makedirs(os.path.join(self.root, "docs"), exist_ok=True)
        with open(os.path.join(self.root, "docs", "readme.txt"), "w",
                  encoding="utf-8") as f:
            f.write("hello from vfsd\n")
        if os.path.exists(self.log):
            os.unlink(self.log)
        self.out = open(os.path.join(work, "up.out"), "w+", encoding="utf-8")
        self.err = open(os.path.join(work, "up.err"), "w+", encoding="utf-8")
        r, w = os.pipe()
        self.proc = subprocess.Popen(
            # --bin names the folder beside pbx, where pbx up looks by
            # default; said outright, because under valgrind (make
            # memcheck) pbx's /proc/self/exe is the real binary, whose
            # folder holds the programs without valgrind's wrappers.
            [os.path.join(bin_dir, "pbx"), "up", "--dir", self.dir, "--root",
             self.root, "--bin", os.path.abspath(bin_dir), "--ready-fd",
             str(w)] + list(extra), pass_fds=[w],
            stdin=subprocess.DEVNULL, stdout=self.out, stderr=self.err,
            process_group=0)
        os.close(w)
        with os.fdopen(r, "rb") as f:
            os.set_blocking(f.fileno(), False)
            got = b""
            deadline = time.monotonic() + 30 * SLOW
            while b"\n" not in got and time.monotonic() < deadline and \
                    self.proc.poll() is None:
                got += f.read() or b""
                time.sleep(0.05)
        if got != b"ready\n":
            self.kill()
            fail(f"pbx up not ready: {got!r}; its stderr: {self.stderr()}")
        print(f"run: pbx up pid {self.proc.pid} ready in {self.dir}")

    def stderr(self):
        """What pbx up wrote to its standard error so far."""
        self.err.flush()
        with open(self.err.name, encoding="utf-8") as f:
            return f.read()

    def text(self):
        """stack.log so far."""
        with open(self.log, encoding="utf-8", errors="replace") as f:
            return f.read()

    def stack(self):
        """{name: pid} of the five stack processes (children of pbx up;
        a job launchd forked but has not yet exec'd, a grandchild, still
        bears launchd's name)."""
        found = {}
        table = proc_table()
        for pid in descendants([self.proc.pid]):
            if table.get(pid, (0, 0))[0] != self.proc.pid:
                continue
            comm = proc_comm(pid)
            if comm in ("pbx-vfsd", "pbx-ttyd", "pbx-procd", "pbx-launchd",
                        "powerboxd"):
                found[comm.replace("pbx-", "")] = pid
        return found

    def lifecycle(self, what, job="12:1"):
        """A routine one-shot read of docs/readme.txt by a job launchd
        launches (as simple() does, against DIR's sockets; job 12:1
        unless job says another): approved and consumed; afterwards ttyd
        shows no row and procd holds no install (their query sockets in
        DIR). Returns the grant's wire id (I.G). Its launcher's wait and
        the 60 s bound grow by SLOW (launch_wait)."""
        b = lambda n: os.path.join(self.bin_dir, "pbx-" + n)
        out = subprocess.run(
            [b("launchd"), "run", "--control",
             os.path.join(self.dir, "launchd.sock"), "--session", "7",
             "--realm", "3", "--job", job, "--entry", "bin/other"] +
            launch_wait() + ["--",
             b("client"), "request", "--scope",
             os.path.join(self.dir, "scope.sock"), "--selector",
             "docs/readme.txt", "--op", "read", "--class", "file",
             "--session", "7", "--realm", "3", "--label", "readme",
             "--wait-ms", "20000", "--lifetime", "one-shot", "--urgency",
             "routine", "--target", "42:5", "--slot", "20", "--then",
             "consume"], capture_output=True, text=True, check=False,
            timeout=60 * SLOW, stdin=subprocess.DEVNULL)
        kv = key_values(out.stdout)
        if out.returncode != 0 or kv.get("outcome") != "approved" or \
                kv.get("consume") != "accepted":
            fail(f"{what}: lifecycle through pbx up's launchd failed: rc "
                 f"{out.returncode} {kv} {out.stderr.strip()}")
        wait_for(lambda: read_rows(os.path.join(self.dir, "ttyd.sock")) ==
                 [], f"{what}: ttyd still shows a row")
        wait_for(lambda: read_rows(os.path.join(self.dir, "procd.sock")) ==
                 [], f"{what}: procd still holds an install")
        print(f"run: {what}: grant {kv.get('grant')} approved and consumed "
              f"through {self.dir}/launchd.sock")
        return kv.get("grant")

    def held_job(self):
        """A launched job that sleeps (its launcher is returned); waits
        until launchd has started it and returns (launcher, job pid)."""
        launcher = subprocess.Popen(
            [os.path.join(self.bin_dir, "pbx-launchd"), "run", "--control",
             os.path.join(self.dir, "launchd.sock"), "--job", "13:1",
             "--entry", "bin/sleep", "--", "/bin/sleep", "600"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
        job = []
        def started():
            launchd = self.stack().get("launchd")
            job[:] = [p for p in descendants([launchd] if launchd else [])
                      if proc_comm(p) == "sleep"]
            return bool(job)
        wait_for(started, "the held job never started", 10.0)
        return launcher, job[0]

    def wait_log(self, line, what, seconds=15.0):
        """Waits until stack.log holds line."""
        wait_for(lambda: line in self.text(), f"{what}: no '{line}' in "
                 f"stack.log", seconds)

    def stop(self):
        """SIGTERM: pbx up must exit 0 within 15 s."""
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.kill()
            fail("pbx up did not stop within 15 s of SIGTERM")
        if rc != 0:
            fail(f"pbx up exited {rc} on SIGTERM: {self.stderr()}")

    def kill(self):
        """Failure cleanup: SIGKILL to everything below pbx up and to its
        group."""
        for pid in descendants([self.proc.pid]):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()
        # pbx up killed cannot detach vfsd's FUSE mount itself.
        detach_mounts(os.path.join(self.dir, "fuse"))

    def close(self):
        """Ends pbx up if a failure left it running; closes its files."""
        if self.proc.poll() is None:
            self.kill()
        self.out.close()
        self.err.close()


def proc_comm(pid):
    """The command name of pid ("" when it is gone); for a program run
    under valgrind (make memcheck), the name of the program valgrind
    runs (see valgrind_program)."""
    try:
        with open(f"/proc/{pid}/comm", encoding="ascii") as f:
            comm = f.read().strip()
    except OSError:
        return ""
    return valgrind_program(pid, comm) or comm


# The command names a process bears under valgrind: its launcher's, and
# the tool's (memcheck-amd64-linux, cut to the kernel's 15 bytes).
VALGRIND_COMMS = ("valgrind", "valgrind.bin", "memcheck-amd64-")


def valgrind_program(pid, comm):
    """When comm is valgrind's, the file name of the program it runs:
    valgrind keeps its own argv in /proc/PID/cmdline (its path, then its
    options, each one word starting with "-", then the program's path and
    arguments), so the first word after the options names the program.
    None for any other comm, so that a process not under valgrind is
    matched by its command name alone, as strictly as without make
    memcheck."""
    if comm not in VALGRIND_COMMS:
        return None
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = f.read().split(b"\0")
    except OSError:
        return ""
    for word in argv[1:]:
        if not word.startswith(b"-"):
            return os.path.basename(word.decode("utf-8", "replace"))
    return ""


def gone(pids, what):
    """Fails unless every pid in pids has exited (and been reaped)."""
    def none_left():
        left = []
        for pid in pids:
            try:
                with open(f"/proc/{pid}/stat", encoding="ascii") as f:
                    if f.read().rsplit(")", 1)[1].split()[0] != "Z":
                        left.append(pid)
            except FileNotFoundError:
                pass
        return not left
    wait_for(none_left, f"{what}: processes {pids} still run", 5.0)


UP_LINE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z "
                     r"[a-z]+\[\d+\]: ")


# Each scenario: its function, whether it prompts on a tmux pane, the
# `pbx geometry make` arguments and the extra `pbx-launchd serve` options
# of a stack of its own (both None: the shared stack). `all` runs them in
# this order.
class UpJobs:
    """What Shell needs of a stack (launch_argv, client_argv, the process
    group), for the stack `pbx up` runs in u.dir: jobs go through
    DIR/launchd.sock, scopes come from DIR/scope.sock, and each launched
    job joins pbx up's process group (killed with it on failure)."""

    def __init__(self, u):
        self.bin_dir = u.bin_dir
        self.pgid = u.proc.pid
        self.control = os.path.join(u.dir, "launchd.sock")
        self.scope = os.path.join(u.dir, "scope.sock")

    bin = Stack.bin
    launch_argv = Stack.launch_argv
    client_argv = Stack.client_argv


# The five stack processes by the supervisor's names, and each one's
# command name once it exec'd (before, a child still bears pbx's).
STACK_COMM = {"vfsd": "pbx-vfsd", "ttyd": "pbx-ttyd", "procd": "pbx-procd",
              "launchd": "pbx-launchd", "powerboxd": "powerboxd"}
STARTED = re.compile(r" up\[\d+\]: (vfsd|ttyd|procd|launchd|powerboxd)"
                     r"\[(\d+)\] started: ")


def latest_pids(text):
    """{name: pid} of the supervisor's latest `NAME[PID] started` line of
    each stack process in stack.log text."""
    return {m.group(1): int(m.group(2)) for m in STARTED.finditer(text)}


def stack_child(u, name, pid, execd=False):
    """Whether pid is alive (not a zombie) as pbx up's child name: its
    command name is name's (or, unless execd, still pbx's before the
    exec)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            head, rest = f.read().rsplit(")", 1)
    except OSError:
        return False
    state, ppid = rest.split()[0], int(rest.split()[1])
    comm = head.split("(", 1)[1]
    comm = valgrind_program(pid, comm) or comm
    names = (STACK_COMM[name],) if execd else (STACK_COMM[name], "pbx")
    return state != "Z" and ppid == u.proc.pid and comm in names


class Starts:
    """Follows stack.log's supervisor `NAME[PID] started` lines as they
    are written (reading only what is new): latest is {name: pid} of each
    stack process's latest start, at the byte offset seen."""

    def __init__(self, u):
        self.f = open(u.log, "rb")
        self.rest, self.seen, self.latest, self.events = b"", 0, {}, []

    def poll(self):
        """Reads what was written since; returns the new starts as
        (offset after the line, name, pid), also kept in events."""
        chunk = self.f.read()
        if not chunk:
            return []
        lines = (self.rest + chunk).split(b"\n")
        self.rest = lines.pop()
        new = []
        for l in lines:
            self.seen += len(l) + 1
            m = STARTED.search(l.decode("utf-8", "replace"))
            if m:
                self.latest[m.group(1)] = int(m.group(2))
                new.append((self.seen, m.group(1), int(m.group(2))))
        self.events += new
        return new

    def next_after(self, mark, seconds=30.0):
        """The first start (name, pid) whose line ends after byte offset
        mark, waited for (bounded) in steps of half a millisecond, so that
        a kill can follow it while the process is still starting."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.poll()
            after = [(n, p) for end, n, p in self.events if end > mark]
            if after:
                return after[0]
            time.sleep(0.0005)
        fail(f"chaos: no process was started within {seconds:.0f} s of the "
             f"last kill")

    def size(self):
        """stack.log's length now (bytes), read to its end first."""
        self.poll()
        return self.seen + len(self.rest)


def chaos_quiet(u):
    """Whether the stack is whole with no restart pending: each process's
    latest start is alive and exec'd, every death's restart plan has been
    followed by a start, every restarted process logged its restart, and
    a peer started without a route (or whose route waited) got it from a
    powerboxd restart logged after that."""
    text = u.text()
    latest = latest_pids(text)
    fresh = text.rfind(" restarted with fresh routes to the peers")
    for name, pid in latest.items():
        starts = len(re.findall(rf" up\[\d+\]: {name}\[\d+\] started: ",
                                text))
        plans = text.count(f"restarting {name} alone in ")
        if not stack_child(u, name, pid, True) or plans != starts - 1:
            return False
        if starts > 1 and f" {name}[{pid}] restarted" not in text:
            return False
        waits = max(text.rfind(f" {name}[{pid}] restarted without a route"),
                    text.rfind(f" {name}[{pid}] restarted; its route waits"))
        if waits >= 0 and fresh < waits:
            return False
    return len(latest) == 5
