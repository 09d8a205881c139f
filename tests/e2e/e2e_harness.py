"""The stack harness of the e2e run (tests/e2e/run.py): the wire constants
and policy the scenarios share, the process, mount and cleanup helpers,
Stack (the supervisor of docs/HOST.md: the PBX1 record, the four peers,
powerboxd exec'd with capabi's fd layout, and their stop), and the waits
and checks every scenario uses (fail, wait_for, read_rows, cleaned).
Moved here unchanged from run.py, which still runs the scenarios."""
import fcntl
import os
import signal
import socket
import stat
import struct
import subprocess
import sys
import time


SEALS = 1 | 2 | 4 | 8  # F_SEAL_SEAL | SHRINK | GROW | WRITE
LOG_LINES_MAX = 400  # a longer peer log is printed as its head and tail
# The run's own tmux server: its socket, in WORK_DIR (set by main).
TMUX_SOCKET = []
# run.py, whose main() runs the programs of the Program kinds: a launched
# Program is `python3 RUN_PY --program` (or --fair-program, --steal-program).
RUN_PY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "run.py")
F_ADD_SEALS = 1033
POLICY = ("* * read file routine allow\n"
          "* * read file exceptional prompt\n"
          "* * entry-metadata-read directory-entry routine allow\n")
# The staged processes procd simulates and launchd binds launched jobs to,
# the same list for both: ten, so that up to ten jobs use install mode at
# once (launchd hands out the first free one, so a lone job gets 42:5).
STAGES = [f"{pid}:5" for pid in range(42, 52)]
# Status codes the scenarios expect (base/err/*.def).
# The factor by which the harness's waits and the scenarios' timed bounds
# grow: 1, or PBX_E2E_SLOW when set (make memcheck sets it: every program
# under valgrind runs many times slower; docs/TESTING.md, "Memory checks").
SLOW = float(os.environ.get("PBX_E2E_SLOW", "1"))
E_CORE_BUSY = 0x0604
E_CORE_BROKER = 0x061D
E_PEER_BUSY = 0x08C0
E_PEER_ROUTE = 0x08C3
E_PEER_NOT_YOURS = 0x08C8
# The ipc v2 operations and outcomes the raw job program uses.
OP_BEGIN, OP_SELECTOR, OP_DECISION, OP_CANCEL = 0x0001, 0x0002, 0x0004, 0x0005
REPLY_BIT = 0x8000
OUTCOMES = {1: "pending", 2: "approved", 3: "denied", 4: "cancelled",
            5: "not-found"}


def launch_wait():
    """The words a `pbx-launchd run` command line gets for SLOW: none when
    SLOW is 1 (the launcher's own 10 s wait for launchd's answer, as
    without the variable), else `--wait-ms` that 10 s times SLOW (under
    valgrind launchd answers many times later; docs/TESTING.md, "Memory
    checks")."""
    return [] if SLOW == 1 else ["--wait-ms", str(int(10000 * SLOW))]


# powerboxd's deadlines as `pbx geometry make` sets them by default
# (tools/pbx/pbx_geometry.c), in ms, by the KIND of --deadline-KIND-ms.
DEADLINES_MS = {"vfsd": 5000, "ttyd": 5000, "procd": 5000, "scope": 2000,
                "prompt": 300000, "open": 30000, "idle": 30000}


def slow_deadlines(*kinds):
    """`pbx geometry make` words that set each deadline of kinds to its
    default times SLOW: none when SLOW is 1. For a scenario that tests
    none of those deadlines, run under valgrind (make memcheck), where the
    programs answer many times later than the defaults allow for."""
    return [] if SLOW == 1 else [
        w for k in kinds
        for w in (f"--deadline-{k}-ms", str(int(DEADLINES_MS[k] * SLOW)))]


def slow_call_ms():
    """`pbx-launchd serve` words that set launchd's bound on a relayed
    call (--call-ms, default 10000) to SLOW times that: none when SLOW is
    1. For a scenario that does not test that bound (see slow_deadlines)."""
    return [] if SLOW == 1 else ["--call-ms", str(int(10000 * SLOW))]


def fail(msg):
    """Ends the run with a failure message."""
    raise SystemExit(f"run: FAIL: {msg}")


def peer(argv, keep, log, pgid, env=None):
    """Starts one peer in process group pgid with the fds in keep (and
    environment env, None: this process's) and waits for `ready`."""
    r, w = os.pipe()
    proc = subprocess.Popen(argv + ["--ready-fd", str(w)],
                            pass_fds=keep + [w], stderr=log,
                            stdin=subprocess.DEVNULL, process_group=pgid,
                            env=env)
    os.close(w)
    with os.fdopen(r) as f:
        line = f.readline().strip()
    print(f"run: {os.path.basename(argv[0])} pid {proc.pid}: {line}")
    if line != "ready":
        fail(f"{argv[0]} did not become ready")
    return proc


def pbx1(bin_dir, work, geometry=()):
    """A sealed memfd holding a fresh PBX1 record (geometry: extra
    `pbx geometry make` arguments; a later one wins)."""
    path = os.path.join(work, "pbx1.bin")
    subprocess.run([os.path.join(bin_dir, "pbx"), "geometry", "make",
                    "--transient-slots", "64"] + list(geometry) +
                   ["-o", path], check=True)
    with open(path, "rb") as f:
        data = f.read()
    fd = os.memfd_create("pbx1", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    os.write(fd, data)
    fcntl.fcntl(fd, F_ADD_SEALS, SEALS)
    return fd


# exec_powerboxd's mark of the slot vfsd's route goes to (slot 5).
VFSD_GATE = "vfsd-gate"


def vfsd_pair(chan, pid):
    """Asks vfsd over its attach channel chan (our end) for a route pair
    made for pid ('P', the pid as 4 bytes little-endian) and returns the
    far end vfsd answers with ('p' 0, the pid echoed, and the
    descriptor)."""
    chan.settimeout(10)
    chan.send(b"P" + struct.pack("<I", pid))
    msg, fds, _, _ = socket.recv_fds(chan, 8, 1)
    if msg != b"p\x00" + struct.pack("<I", pid) or len(fds) != 1:
        for fd in fds:
            os.close(fd)
        fail(f"vfsd answered 'P' {pid} with {msg!r} and {len(fds)} fd(s)")
    return fds[0]


def exec_powerboxd(bin_dir, public, fds, pgid, log, chan=None):
    """Forks and execs powerboxd in process group pgid with fds[i] at slot
    3 + i (None: empty; VFSD_GATE: the descriptor the child waits for
    before exec on a gate, vfsd's route end made by vfsd over its attach
    channel chan for the child's exact pid: vfsd serves RESOLVE only to
    the process its route names, and no socket anyone could connect to is
    a route) and its standard error (its log) on file log."""
    gate = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET) \
        if VFSD_GATE in fds else None
    pid = os.fork()
    if pid == 0:
        try:
            os.setpgid(0, pgid)
            os.dup2(log.fileno(), 2)
            for i, fd in enumerate(fds):
                if fd == VFSD_GATE:
                    _, got, _, _ = socket.recv_fds(gate[1], 1, 1)
                    if len(got) != 1:
                        os._exit(127)
                    fds[i] = got[0]
            high = [None if fd is None else os.dup(fd) for fd in fds]
            for i, fd in enumerate(high):
                if fd is None:
                    os.closerange(3 + i, 4 + i)
                else:
                    os.dup2(fd, 3 + i, inheritable=True)
            os.closerange(3 + len(fds), 4096)
            os.execv(os.path.join(bin_dir, "powerboxd"), ["powerboxd", public])
        finally:
            os._exit(127)
    if gate is not None:
        gate[1].close()
        try:
            route = vfsd_pair(chan, pid)
            socket.send_fds(gate[0], [b"g"], [route])
            os.close(route)
        finally:
            gate[0].close()
    return pid


def proc_table():
    """{pid: (ppid, pgid)} of every process now."""
    table = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat", encoding="ascii") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            table[int(d)] = (int(fields[1]), int(fields[2]))
        except (FileNotFoundError, ProcessLookupError, IndexError):
            pass
    return table


def detach_mounts(path):
    """Detaches (lazily) every mount left at path: vfsd's FUSE mount when
    its server was killed with the stack's process group before it could
    detach it itself. A dead mount would otherwise stay behind, and stop
    any later removal of the work directory."""
    path = os.path.abspath(path)
    for _ in range(8):
        # /proc/self/mounts, not os.path.ismount: a dead FUSE mount fails
        # every stat (ENOTCONN), which ismount reads as "no mount".
        with open("/proc/self/mounts", encoding="utf-8") as f:
            points = [ln.split()[1] for ln in f if len(ln.split()) > 1]
        if path not in points:
            return
        if subprocess.run(["umount", "-l", path], capture_output=True,
                          check=False).returncode != 0:
            subprocess.run(["fusermount3", "-u", "-z", path],
                           capture_output=True, check=False)


def vfsd_mounts_under(work):
    """The pbx-vfsd (FUSE) mount points under work that /proc/self/mounts
    still lists: a run must leave none (issue 21, leftover mounts)."""
    work = os.path.abspath(work) + "/"
    with open("/proc/self/mounts", encoding="utf-8") as f:
        rows = [ln.split() for ln in f]
    return [r[1] for r in rows
            if len(r) > 1 and r[0] == "pbx-vfsd" and r[1].startswith(work)]


def descendants(roots):
    """Every process below the pids in roots, as {pid: pgid}."""
    table = proc_table()
    found, todo = {}, list(roots)
    for _ in range(len(table) + 1):
        if not todo:
            break
        parent = todo.pop()
        for pid, (ppid, pgid) in table.items():
            if ppid == parent and pid not in found:
                found[pid] = pgid
                todo.append(pid)
    return found


# Every process launchd starts inherits launchd's environment, which
# holds STACK_MARK=<the stack's work directory>: so a job is found and
# killed even after launchd died and the job was reparented away from the
# stack (stop() sweeps /proc for the mark).
STACK_MARK = "PBX_E2E_STACK"
# The signals that end a run; blocked while a stack stops, so that a
# SIGTERM arriving then cannot cut its cleanup short.
END_SIGNALS = {signal.SIGTERM, signal.SIGHUP, signal.SIGINT}


def marked(work):
    """Pids of the processes (this one aside) whose environment carries
    the mark of the stack in work."""
    mark = f"{STACK_MARK}={work}".encode() + b"\0"
    found = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == os.getpid():
            continue
        try:
            with open(f"/proc/{d}/environ", "rb") as f:
                env = b"\0" + f.read()
        except OSError:
            continue
        if b"\0" + mark in env:
            found.append(int(d))
    return found


class Stack:
    """powerboxd and the four reference peers, started as docs/HOST.md says.

    tty is the terminal ttyd prompts on (a tmux pane's tty, or /dev/null
    when no scenario prompts), pane that tmux pane (or None); geometry
    holds extra `pbx geometry make` arguments, launchd extra `pbx-launchd
    serve` options. Every process of the stack, and every launcher
    (`pbx-launchd run`) a scenario starts, is in one process group of its
    own (its leader a sleep kept for that), so that stop() ends them all
    whatever a scenario left; launched jobs, in groups of their own, are
    found as launchd's descendants, and, should launchd be gone, by the
    STACK_MARK of their environment.
    """

    def __init__(self, bin_dir, work, tty="/dev/null", pane=None,
                 geometry=(), launchd=(), tables=None):
        self.bin_dir, self.work = bin_dir, work
        self.tty, self.pane, self.geometry = tty, pane, list(geometry)
        self.launchd_args = list(launchd)
        # tables: {"vfsd": [...], "procd": [...], "stages": N}: extra
        # pbx-vfsd and pbx-procd options (their table sizes) and how many
        # staged processes (42:5 and up) launchd and procd share.
        self.tables = dict(tables or {})
        os.makedirs(os.path.join(work, "root", "docs"), exist_ok=True)
        os.makedirs(os.path.join(work, "logs"), exist_ok=True)
        with open(os.path.join(work, "root", "docs", "readme.txt"), "w",
                  encoding="utf-8") as f:
            f.write("hello from vfsd\n")
        with open(os.path.join(work, "policy"), "w", encoding="utf-8") as f:
            f.write(POLICY)
        self.root = os.path.join(work, "root")
        # The stack's root in DIR/root.path, as pbx up writes it: `pbx run
        # --sandbox` brokers opens below it by default.
        with open(os.path.join(work, "root.path"), "w",
                  encoding="utf-8") as f:
            f.write(os.path.realpath(self.root) + "\n")
        self.scope = os.path.join(work, "scope.sock")
        self.lie_scope = os.path.join(work, "lie-scope.sock")
        self.fuse = os.path.join(work, "fuse")
        self.public = os.path.join(work, "public.sock")
        self.control = os.path.join(work, "launchd.sock")
        # ttyd's query socket (plan: DIR/ttyd.sock): the stack's work
        # directory is laid out as `pbx --dir` expects (public.sock,
        # launchd.sock, scope.sock, ttyd.sock, procd.sock).
        self.views = os.path.join(work, "ttyd.sock")
        # launchd's prompt hold socket (ttyd connects before each prompt).
        self.hold = os.path.join(work, "hold.sock")
        self.installs = os.path.join(work, "procd.sock")
        # While this file exists launchd leaves its wake route unread.
        self.wake_hold = os.path.join(work, "wake.hold")
        for p in (self.wake_hold, self.scope, self.lie_scope, self.public,
                  self.control, self.views, self.installs):
            if os.path.exists(p):
                os.unlink(p)
        self.procs = []
        self.logs = {}
        self.pid = 0
        # Our end of vfsd's attach channel (its 'P' makes powerboxd's route).
        self.vfsd_chan = None
        self.keeper = subprocess.Popen(["sleep", "86400"], process_group=0,
                                       stdin=subprocess.DEVNULL)
        self.pgid = self.keeper.pid
        try:
            self._start(tty)
        except BaseException:
            self.stop()
            raise

    def bin(self, name):
        """The path of pbx-NAME."""
        return os.path.join(self.bin_dir, "pbx-" + name)

    def log(self, name):
        """The open log file of peer name."""
        if name not in self.logs:
            self.logs[name] = open(os.path.join(self.work, "logs",
                                                name + ".log"), "w+b")
        return self.logs[name]

    def _start(self, tty):
        w = self.work
        b = self.bin
        sup = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        ttyp, proc, broker = [
            socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            for _ in range(3)]
        wake = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        n = self.tables.get("stages", len(STAGES))
        stages = [a for p in range(42, 42 + n) for a in ("--stage", f"{p}:5")]
        # vfsd's route is a pair vfsd makes itself for powerboxd's exact
        # pid ('P' on its attach channel), not a socketpair made here:
        # powerboxd accepts a scope only from the process at the other end
        # of slot 5 (SO_PEERCRED), and a socketpair's peer would be this
        # supervisor. vfsd listens for no route.
        self.vfsd_chan, chan = socket.socketpair(socket.AF_UNIX,
                                                 socket.SOCK_SEQPACKET)
        g = self.pgid
        # launchd first: ttyd and procd refuse its jobs on their query
        # sockets (--jobs-below, as pbx up names itself there).
        launchd = peer([b("launchd"), "serve", "--wake-fd",
                        str(wake[1].fileno()), "--broker-fd",
                        str(broker[1].fileno()), "--control", self.control,
                        "--wake-hold-file", self.wake_hold,
                        "--hold", self.hold, "--fuse-dir", self.fuse] +
                       stages + self.launchd_args,
                       [wake[1].fileno(), broker[1].fileno()],
                       self.log("launchd"), g,
                       dict(os.environ, **{STACK_MARK: self.work}))
        jobs = ["--jobs-below", str(launchd.pid)]
        self.procs = [
            peer([b("vfsd"), "--root", self.root, "--scope", self.scope,
                  "--lie-scope", self.lie_scope, "--attach-fd",
                  str(chan.fileno()), "--fuse-dir", self.fuse] +
                 self.tables.get("vfsd", []),
                 [chan.fileno()],
                 self.log("vfsd"), g),
            peer([b("ttyd"), "--policy", os.path.join(w, "policy"), "--tty",
                  tty, "--query", self.views, "--route-fd",
                  str(ttyp[1].fileno()), "--hold", self.hold] + jobs,
                 [ttyp[1].fileno()],
                 self.log("ttyd"), g),
            peer([b("procd")] + stages + ["--query", self.installs,
                                          "--stage-sock",
                                          os.path.join(w, "stage.sock"),
                                          "--route-fd",
                                          str(proc[1].fileno())] + jobs +
                 self.tables.get("procd", []),
                 [proc[1].fileno()], self.log("procd"), g),
            launchd,
        ]
        self.pid = exec_powerboxd(self.bin_dir, self.public, [
            pbx1(self.bin_dir, w, self.geometry), sup[1].fileno(),
            VFSD_GATE, ttyp[0].fileno(), proc[0].fileno(),
            wake[0].fileno(), None, broker[0].fileno()], g,
            self.log("powerboxd"), self.vfsd_chan)
        chan.close()
        for s in (ttyp, proc, broker, wake):
            s[0].close()
            s[1].close()
        print(f"run: powerboxd pid {self.pid} on {self.public}")
        sup[0].settimeout(5)
        rep = sup[0].recv(64)
        magic, ver, kind, slot, first, count, _, arena = \
            struct.unpack("<IHHIIIIQ", rep)
        print(f"run: readiness: magic {magic:#x} version {ver} kind {kind} "
              f"public slot {slot} transients {first}..{first + count - 1} "
              f"arena {arena} bytes")
        sup[0].close()
        sup[1].close()

    def deadline_ms(self, kind, default):
        """The --deadline-KIND-ms this stack's PBX1 was made with."""
        opt = f"--deadline-{kind}-ms"
        g = self.geometry
        return int(g[g.index(opt) + 1]) if opt in g else default

    def launchd_opt(self, opt, default):
        """The value of launchd serve option opt this stack was started
        with (default when it was not given)."""
        a = self.launchd_args
        return int(a[a.index(opt) + 1]) if opt in a else default

    def alive(self):
        """True while powerboxd has not exited (reaped and reported when
        it has)."""
        if self.pid == 0:
            return False
        pid, status = os.waitpid(self.pid, os.WNOHANG)
        if pid == 0:
            return True
        print(f"run: powerboxd (pid {self.pid}) exited: status {status:#x}")
        self.pid = 0
        return False

    def kill_jobs(self):
        """Kills (SIGKILL, by process group) every process below the stack
        that is not in the stack's own group: jobs launched by launchd and
        whatever they started. Returns how many were found."""
        roots = [p.pid for p in self.procs] + [self.pgid]
        if self.pid:
            roots.append(self.pid)
        mine = os.getpgid(0)
        stray = descendants(roots)
        for pgid in sorted(set(stray.values())):
            if pgid not in (mine, self.pgid, 0):
                try:
                    os.killpg(pgid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        return len(stray)

    def stop(self):
        """Ends launched jobs, powerboxd and the peers (a stopped peer is
        continued first), then everything left in the stack's process
        group (launchers a failed scenario left running) and every process
        carrying the stack's mark (jobs launchd no longer holds); prints
        every peer's log, a long one only its head and tail (the whole log
        stays in WORK_DIR). The run's ending signals wait until it is
        done."""
        old = signal.pthread_sigmask(signal.SIG_BLOCK, END_SIGNALS)
        try:
            self._stop()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)

    def _stop(self):
        """stop() with the ending signals blocked."""
        left = self.kill_jobs()
        if left:
            print(f"run: {left} process(es) below the stack killed")
        if self.alive():
            os.kill(self.pid, signal.SIGTERM)
            os.kill(self.pid, signal.SIGCONT)
            for _ in range(50):
                if not self.alive():
                    break
                time.sleep(0.1)
            else:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
                self.pid = 0
        for p in self.procs:
            if p.poll() is None:
                os.kill(p.pid, signal.SIGCONT)
                p.terminate()
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.kill_jobs()
        if self.vfsd_chan is not None:
            self.vfsd_chan.close()
            self.vfsd_chan = None
        try:
            os.killpg(self.pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.keeper.wait()
        # Again while any is found: a stray may fork between two looks.
        killed = set()
        for _ in range(10):
            strays = marked(self.work)
            if not strays:
                break
            for pid in strays:
                killed.add(pid)
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.05)
        if killed:
            print(f"run: {len(killed)} process(es) launchd no longer held "
                  "killed")
        detach_mounts(self.fuse)
        drifted = False
        for name, f in sorted(self.logs.items()):
            f.seek(0)
            lines = f.read().decode(errors="replace").splitlines(True)
            # launchd and procd stop on an index drift
            # (PBX_LAUNCHD_CHECK_INDEX, PBX_PROCD_CHECK_INDEX, run.py): a
            # bug even when the scenario had passed by then.
            drifted = drifted or any("launchd: index drift:" in ln or
                                     "procd: index drift:" in ln
                                     for ln in lines)
            if len(lines) > LOG_LINES_MAX:
                head, tail = LOG_LINES_MAX // 4, LOG_LINES_MAX * 3 // 4
                lines = lines[:head] + [
                    f"run: ... {len(lines) - head - tail} lines of {name} "
                    f"left out (all in {f.name}) ...\n"] + lines[-tail:]
            sys.stderr.write("".join(lines))
            f.close()
        self.logs = {}
        if drifted:
            fail("launchd's or procd's indexes drifted (the log says which)")

    def peer_log(self, name):
        """Everything peer name (or powerboxd) has logged so far."""
        f = self.log(name)
        f.flush()
        with open(f.name, encoding="utf-8", errors="replace") as r:
            return r.read()

    def launch_argv(self, prog, job=None, entry=None, session=7, realm=3):
        """`pbx-launchd run` of prog (a list) as job ID:GEN job (None:
        launchd picks one) with program entry entry (None: prog's base
        name), in session session and realm realm (the job's: launchd
        binds its BEGINs to them); launch_wait()'s words under SLOW."""
        argv = [self.bin("launchd"), "run", "--control", self.control,
                "--session", str(session), "--realm", str(realm)] + \
            launch_wait()
        if job is not None:
            argv += ["--job", job]
        if entry is not None:
            argv += ["--entry", entry]
        return argv + ["--"] + list(prog)

    def client_argv(self, *args, scope=None, scope_fd=None):
        """pbx-client request, as a launched job runs it: session 7 realm 3
        (claims equal to the session and realm its job is launched with:
        launchd checks them) reading docs/readme.txt over the job
        connection (no job, entry or target claimed: launchd's binding
        fills them in), with a scope
        from vfsd's scope socket (or scope, another socket path), or with
        scope_fd true the scope on standard input; then args (a later
        option wins)."""
        where = ["--scope-fd", "0"] if scope_fd is not None else \
            ["--scope", scope or self.scope]
        return [self.bin("client"), "request"] + where + [
            "--selector", "docs/readme.txt", "--op", "read", "--class",
            "file", "--session", "7", "--realm", "3", "--label", "readme",
            "--wait-ms", "20000"] + list(args)

    def request_argv(self, *args, public=None, scope=None, scope_fd=None):
        """The command line of one request: launched as job 11:1 entry
        bin/cat in session 7 realm 3 (a --job, --entry, --session or
        --realm in args names the job to launch instead; the session and
        realm are claimed too, a --target claim is left to launchd's
        binding), or, with
        public, pbx-client straight to that socket with job 11:1, entry
        bin/cat and every claim in args as given. See client_argv."""
        if public is not None:
            where = ["--scope-fd", str(scope_fd)] if scope_fd is not None \
                else ["--scope", scope or self.scope]
            return [self.bin("client"), "request", "--public", public] + \
                where + ["--selector", "docs/readme.txt", "--op", "read",
                         "--class", "file", "--job", "11:1", "--session",
                         "7", "--realm", "3", "--entry", "bin/cat",
                         "--label", "readme", "--wait-ms", "20000"] + \
                list(args)
        job, entry, rest, args = "11:1", "bin/cat", [], list(args)
        where = {"--session": 7, "--realm": 3}
        i = 0
        while i < len(args):
            if args[i] in where and i + 1 < len(args):
                where[args[i]] = int(args[i + 1])
            elif args[i] in ("--job", "--entry", "--target") and \
                    i + 1 < len(args):
                if args[i] == "--job":
                    job = args[i + 1]
                elif args[i] == "--entry":
                    entry = args[i + 1]
                i += 2
                continue
            rest.append(args[i])
            i += 1
        return self.launch_argv(self.client_argv(
            *rest, scope=scope, scope_fd=scope_fd), job, entry,
            where["--session"], where["--realm"])

    def run(self, argv, stdin=subprocess.DEVNULL, seconds=60):
        """Runs argv in the stack's process group; returns the completed
        process (output captured, printed)."""
        out = subprocess.run(argv, capture_output=True, text=True,
                             check=False, timeout=seconds, stdin=stdin,
                             process_group=self.pgid)
        print(out.stdout, end="")
        print(out.stderr, end="", file=sys.stderr)
        return out

    def client(self, *args, public=None, scope=None, scope_fd=None):
        """Runs one request (see request_argv; scope_fd: a scope this
        process holds, the job's standard input); returns (rc, key=value
        dict)."""
        argv = self.request_argv(*args, public=public, scope=scope,
                                 scope_fd=scope_fd)
        if public is not None and scope_fd is not None:
            out = subprocess.run(argv, capture_output=True, text=True,
                                 check=False, timeout=60,
                                 pass_fds=(scope_fd,),
                                 process_group=self.pgid)
            print(out.stdout, end="")
            print(out.stderr, end="", file=sys.stderr)
        else:
            out = self.run(argv, stdin=scope_fd if scope_fd is not None
                           else subprocess.DEVNULL)
        return out.returncode, key_values(out.stdout)

    def launchd_expire(self, via, job="11:1"):
        """pbx-launchd expire of job via --control or --public."""
        path = self.control if via == "--control" else self.public
        out = self.run([self.bin("launchd"), "expire", via, path, "--job",
                        job], seconds=30)
        return out.returncode, out.stdout.strip()


def key_values(text):
    """The key=value lines of text as a dict (the last of a key wins)."""
    return dict(l.split("=", 1) for l in text.splitlines() if "=" in l)



def read_rows(path, seconds=5.0):
    """Returns the non-empty lines of path ([] when it does not exist).
    When path is a query socket (ttyd's, procd's) the rows are what the
    peer writes to a new connection before it closes it; a peer that does
    not answer within seconds fails the run."""
    try:
        if not stat.S_ISSOCK(os.stat(path).st_mode):
            with open(path, encoding="utf-8") as f:
                return [l for l in f.read().splitlines() if l.strip()]
    except FileNotFoundError:
        return []
    data = b""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(seconds * SLOW)
        try:
            s.connect(path)
            for _ in range(1 << 16):
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
        except OSError as e:
            fail(f"query socket {path}: {e}")
    return [l for l in data.decode("utf-8").splitlines() if l.strip()]


def wait_for(pred, what, seconds=5.0):
    """Waits (bounded) until pred() is true; fails with what otherwise."""
    deadline = time.monotonic() + seconds * SLOW
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(0.02)
    fail(what)


def cleaned(st, object_line):
    """The grant's end at the peers: procd holds no install (revoked),
    ttyd lists no active row (REMOVE), vfsd logged the exact RETIRE."""
    wait_for(lambda: read_rows(st.installs) == [],
             f"procd still holds {read_rows(st.installs)}")
    wait_for(lambda: read_rows(st.views) == [],
             f"ttyd still shows {read_rows(st.views)}")
    wait_for(lambda: f"RETIRE object {object_line}" in st.peer_log("vfsd"),
             f"vfsd never retired object {object_line}")
    print(f"run: cleanup done: revoked at procd, removed at ttyd, object "
          f"{object_line} retired at vfsd")


def last_object(st, scope=None):
    """'ID gen G' of the object vfsd resolved last; with scope (a
    request's scope=, the id vfsd's RESOLVE line names), the last it
    resolved through that scope, waited for (bounded): vfsd logs the line
    just after sending its reply, so a request's outcome can come first.
    Without scope, only once a later event of vfsd's proved it logged."""
    def found():
        return [l for l in st.peer_log("vfsd").splitlines()
                if "RESOLVE found object" in l and
                (scope is None or f" scope {scope} (" in l)]
    if scope is not None:
        wait_for(found, f"vfsd logged no RESOLVE through scope {scope}")
    lines = found()
    if not lines:
        fail("vfsd resolved nothing")
    words = lines[-1].split("RESOLVE found object ", 1)[1].split()
    return f"{words[0]} gen {words[2]}"


def fd_count(pid):
    """Open descriptors of process pid."""
    return len(os.listdir(f"/proc/{pid}/fd"))


def count(text, *words):
    """Lines of text holding every one of words."""
    return sum(1 for l in text.splitlines() if all(w in l for w in words))


def settled_fds(pid):
    """pid's descriptor count once it held still for half a second (the
    hang-ups of a finished client's scope are noticed)."""
    seen, since = fd_count(pid), time.monotonic()
    while time.monotonic() - since < 0.5:
        time.sleep(0.05)
        if fd_count(pid) != seen:
            seen, since = fd_count(pid), time.monotonic()
    return seen


def slot_rows(st, slot):
    """procd's install rows of process 42 slot slot."""
    return [r for r in read_rows(st.installs) if f" slot {slot} " in r]
