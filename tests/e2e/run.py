#!/usr/bin/env python3
"""powerboxd with the reference peers: `make run` and the peer scenarios.

Usage: run.py BIN_DIR WORK_DIR [SCENARIO...]

Plays the supervisor of docs/HOST.md: writes a PBX1 record with
`pbx geometry make`, seals it into a memfd, starts pbx-vfsd, pbx-ttyd,
pbx-procd and pbx-launchd on socketpairs and waits for each readiness
line, execs the freestanding powerboxd with fds 3..10 exactly as
capabi/pbx_capabi.h lays them out (9 left empty; 10 is powerboxd's end of
launchd's broker connection, whose other end pbx-launchd holds), waits
for its typed readiness report, then runs each scenario against that one
powerboxd. Without a scenario it runs `lifecycle` (what `make run` does).

Scenarios (each exits the run with 1 on the first failure):

Every request goes the way a running program's does: pbx-client talks to
`pbx-launchd serve --control`, which relays each frame over launchd's
broker connection (powerboxd's slot 10), the only place powerboxd accepts
BEGIN.

  lifecycle      a routine one-shot READ to APPROVED and, on the same
                 connection, CONSUME; revocation (procd), REMOVE (ttyd)
                 and RETIRE (vfsd) are then observed at the peers; vfsd
                 named the scope by the inode the client was handed
  direct         a BEGIN (install mode) sent straight to powerboxd's public
                 endpoint is refused with PBX_E_CORE_BROKER and nothing is
                 reserved; powerboxd keeps serving
  hangup         a client BEGINs and COMMITs a request and exits without
                 asking for its decision: launchd cancels the request it
                 relayed (exact id over the broker) and collects its
                 CANCELLED decision; no grant is left at procd or ttyd and
                 powerboxd's and launchd's descriptors return to baseline
  lie-scope      the same request with a scope from vfsd's --lie-scope
                 socket, whose FOUND names another scope identity: DENIED,
                 nothing installed, no row shown
  expire         a job-lifetime grant; EXPIRE on an ordinary public
                 connection is refused and the grant stays; EXPIRE through
                 launchd's broker ends it: revoke, REMOVE, RETIRE observed
  runtime-reply  a runtime-reply request relayed by launchd's broker: the
                 alias reaches the caller once with the DECISION, then
                 CONSUME through the broker ends the grant and the
                 caller's alias is revoked (vfsd RETIRE cuts it)
  prompt         an exceptional request answered on a real terminal: ttyd
                 is given a tmux pane as its terminal; the pane must show
                 the exact program entry, object and selector before `y`
                 is typed into it. tmux must be installed: without it the
                 scenario fails, it is never skipped
  prompt-pending one exceptional request's prompt stays unanswered on the
                 pane while 1,000 routine lifecycles of eight other
                 programs (8 concurrent pbx-client --repeat 125) are each
                 approved and consumed, counted at the client and at every
                 peer (INSTALL, ACTIVE, REMOVE, RETIRE, wake, CONSUME);
                 the prompt still shows, then `y` approves it and its
                 grant is consumed and cleaned; prints the wall time
  prompt-timeout (own powerboxd, prompt deadline 3000 ms) an unanswered
                 prompt: still showing shortly before the deadline, then
                 DENIED reason prompt-timeout no sooner than the deadline;
                 ttyd withdrew it from the pane; nothing installed or
                 shown, vfsd freed the object; powerboxd serves on
  prompt-cancel  a showing prompt ended by the client's exact CANCEL, and
                 another by launchd's EXPIRE of its job: each ends
                 CANCELLED and the pane says it was withdrawn; a `y` typed
                 afterwards answers nothing (ttyd discards it as type-ahead,
                 nothing installed or shown, the decision read after it is
                 still CANCELLED)
  not-found      a selector for a missing file inside the scope ends
                 NOT_FOUND (vfsd answered not-found): nothing installed at
                 procd, no row at ttyd, nothing created in vfsd's root;
                 escapes ('../', 'docs/../../', absolute selectors, and
                 symlinks in the root to files outside it, existing or
                 missing, absolute or relative) all end DENIED, never
                 NOT_FOUND or an object, and leave the same nothing
  user-deny      an exceptional request's prompt answered `n` on the tmux
                 pane: DENIED reason user, nothing installed or shown; when
                 the decision is read powerboxd's descriptor count is back
                 to its baseline and vfsd has freed the object's row
                 (HANG-UP)
  cancel-lost-reply
                 a request approved and installed whose DECISION its client
                 never reads (a lost reply) is cancelled by job and session
                 (generation zero) on the client's connection
                 (`--then cancel-session`): revoked at procd, REMOVEd at
                 ttyd, RETIREd at vfsd; with two live approved requests of
                 one job and session the same CANCEL is refused
                 PBX_E_CORE_AMBIGUOUS (0x0614) and both stay
  invocation-expiry
                 six grants of one job: invocation 5's invocation grant and
                 a one-shot made within it, invocation 6's two, a one-shot
                 made outside any invocation and a job-lifetime one;
                 `pbx-launchd expire --invocation 5` ends exactly the first
                 two (revoke, REMOVE, RETIRE), the other four stay live
  unwanted-receipts
                 BEGIN, SELECTOR, DECISION, CANCEL and CONSUME frames
                 carrying a descriptor, straight to powerboxd's public
                 endpoint: each answered PBX_E_CORE_UNEXPECTED_CAPS, the
                 descriptor closed; powerboxd's descriptors back to
                 baseline, a lifecycle succeeds (peer replies with surplus
                 receipts are covered by the unit tests)
  ttyd-stalled   (own powerboxd, ttyd deadline 1000 ms) a live grant; ttyd
                 stopped (SIGSTOP); EXPIRE revokes it: procd's install row
                 goes and vfsd RETIREs the object at once (no process
                 holds the object any more, vfsd closed its provider end)
                 while ttyd still lists the row; after SIGCONT the REMOVE
                 (retried while ttyd was stopped) empties the view file;
                 powerboxd alive throughout and serving after
  vfsd-stalled   (own powerboxd, vfsd and scope deadlines 1000 ms) vfsd
                 stopped for 30 s: a request needing vfsd ends DENIED
                 reason peer-timeout, while a decided request's DECISION,
                 a BEGIN refused on the public endpoint and the CANCEL of
                 a request waiting on vfsd are served at once; EXPIRE of a
                 live grant revokes it and REMOVEs its row, its RETIRE is
                 retried; after SIGCONT the RETIRE is acknowledged (the
                 retries stop), nothing is left installed or shown, a new
                 lifecycle succeeds and powerboxd holds no more
                 descriptors than before
  backpressure   (own powerboxd, 2 requests, 2 grants) two job-lifetime
                 requests approved and held with their decisions unread
                 fill the request and grant pools: a third request is
                 refused at BEGIN with the retryable PBX_E_CORE_BUSY
                 (0x0604); both held grants stay installed and shown and
                 their decisions then read APPROVED; once the job is
                 expired the same request is approved and consumed
  wake-backpressure
                 launchd leaves its wake route unread (serve
                 --wake-hold-file) while more requests than the route
                 holds (net.unix.max_dgram_qlen + 6) are approved and
                 consumed: each client gets its decision, powerboxd keeps
                 the refused wakes without spinning (under 0.2 s CPU over
                 2 s); when launchd reads again every wake arrives exactly
                 once

The scenarios marked "own powerboxd" run on a stack of their own, started
with their own `pbx geometry make` arguments in WORK_DIR/<scenario>; the
others share one stack in WORK_DIR. Scenarios that prompt get a tmux pane
(a window of the run's own tmux server) per stack.

Peer logs go to WORK_DIR/[<scenario>/]logs/<peer>.log and are printed at
the end (a long log only its head and tail).
"""
import fcntl
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import termios
import threading
import time

SEALS = 1 | 2 | 4 | 8  # F_SEAL_SEAL | SHRINK | GROW | WRITE
LOG_LINES_MAX = 400  # a longer peer log is printed as its head and tail
# The run's own tmux server: its socket, in WORK_DIR (set by main).
TMUX_SOCKET = []
F_ADD_SEALS = 1033
POLICY = ("* * read file routine allow\n"
          "* * read file exceptional prompt\n")


def fail(msg):
    """Ends the run with a failure message."""
    raise SystemExit(f"run: FAIL: {msg}")


def peer(argv, keep, log):
    """Starts one peer with the fds in keep and waits for `ready`."""
    r, w = os.pipe()
    proc = subprocess.Popen(argv + ["--ready-fd", str(w)],
                            pass_fds=keep + [w], stderr=log)
    os.close(w)
    with os.fdopen(r) as f:
        line = f.readline().strip()
    print(f"run: {os.path.basename(argv[0])} pid {proc.pid}: {line}")
    if line != "ready":
        fail(f"{argv[0]} did not become ready")
    return proc


def pbx1(bin_dir, work, geometry=()):
    """A sealed memfd holding a fresh PBX1 record (geometry: extra
    `pbx geometry make` arguments)."""
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


def exec_powerboxd(bin_dir, public, fds):
    """Forks and execs powerboxd with fds[i] at slot 3 + i (None: empty)."""
    pid = os.fork()
    if pid == 0:
        high = [None if fd is None else os.dup(fd) for fd in fds]
        for i, fd in enumerate(high):
            if fd is None:
                os.closerange(3 + i, 4 + i)
            else:
                os.dup2(fd, 3 + i, inheritable=True)
        os.closerange(3 + len(fds), 4096)
        os.execv(os.path.join(bin_dir, "powerboxd"), ["powerboxd", public])
    return pid


class Stack:
    """powerboxd and the four reference peers, started as docs/HOST.md says.

    tty is the terminal ttyd prompts on (a tmux pane's tty, or /dev/null
    when no scenario prompts), pane that tmux pane (or None); geometry
    holds extra `pbx geometry make` arguments.
    """

    def __init__(self, bin_dir, work, tty="/dev/null", pane=None,
                 geometry=()):
        self.bin_dir, self.work = bin_dir, work
        self.tty, self.pane, self.geometry = tty, pane, list(geometry)
        os.makedirs(os.path.join(work, "root", "docs"), exist_ok=True)
        os.makedirs(os.path.join(work, "logs"), exist_ok=True)
        with open(os.path.join(work, "root", "docs", "readme.txt"), "w",
                  encoding="utf-8") as f:
            f.write("hello from vfsd\n")
        with open(os.path.join(work, "policy"), "w", encoding="utf-8") as f:
            f.write(POLICY)
        self.scope = os.path.join(work, "scope.sock")
        self.lie_scope = os.path.join(work, "lie-scope.sock")
        self.public = os.path.join(work, "public.sock")
        self.control = os.path.join(work, "launchd.sock")
        self.views = os.path.join(work, "views")
        self.installs = os.path.join(work, "installs")
        # While this file exists launchd leaves its wake route unread.
        self.wake_hold = os.path.join(work, "wake.hold")
        for p in (self.wake_hold, self.scope, self.lie_scope, self.public, self.control, self.views,
                  self.installs):
            if os.path.exists(p):
                os.unlink(p)
        self.procs = []
        self.logs = {}
        self.pid = 0
        self._start(tty)

    def log(self, name):
        """The open log file of peer name."""
        if name not in self.logs:
            self.logs[name] = open(os.path.join(self.work, "logs",
                                                name + ".log"), "w+b")
        return self.logs[name]

    def _start(self, tty):
        w = self.work
        b = lambda n: os.path.join(self.bin_dir, "pbx-" + n)
        sup = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        ttyp, proc, broker = [
            socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            for _ in range(3)]
        wake = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        # vfsd's route is a connection to vfsd's own --route listener, not
        # a socketpair made here: powerboxd accepts a scope only from the
        # process at the other end of slot 5 (SO_PEERCRED), and a
        # socketpair's peer would be this supervisor.
        route = os.path.join(w, "vfsd-route.sock")
        self.procs = [
            peer([b("vfsd"), "--root", os.path.join(w, "root"), "--scope",
                  self.scope, "--lie-scope", self.lie_scope, "--route",
                  route], [], self.log("vfsd")),
            peer([b("ttyd"), "--policy", os.path.join(w, "policy"), "--tty",
                  tty, "--view-file", self.views, "--route-fd",
                  str(ttyp[1].fileno())], [ttyp[1].fileno()],
                 self.log("ttyd")),
            peer([b("procd"), "--stage", "42:5", "--state-file",
                  self.installs, "--route-fd", str(proc[1].fileno())],
                 [proc[1].fileno()], self.log("procd")),
            peer([b("launchd"), "serve", "--wake-fd", str(wake[1].fileno()),
                  "--broker-fd", str(broker[1].fileno()), "--control",
                  self.control, "--wake-hold-file", self.wake_hold],
                 [wake[1].fileno(), broker[1].fileno()], self.log("launchd")),
        ]
        vfs = [socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)]
        vfs[0].connect(route)
        vfs.append(vfs[0])
        self.pid = exec_powerboxd(self.bin_dir, self.public, [
            pbx1(self.bin_dir, w, self.geometry), sup[1].fileno(), vfs[0].fileno(),
            ttyp[0].fileno(), proc[0].fileno(), wake[0].fileno(), None,
            broker[0].fileno()])
        vfs[0].close()
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

    def deadline_ms(self, kind, default):
        """The --deadline-KIND-ms this stack's PBX1 was made with."""
        opt = f"--deadline-{kind}-ms"
        g = self.geometry
        return int(g[g.index(opt) + 1]) if opt in g else default

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

    def stop(self):
        """Ends powerboxd and the peers (a stopped peer is continued
        first); prints every peer's log, a long one only its head and
        tail (the whole log stays in WORK_DIR)."""
        if self.alive():
            os.kill(self.pid, signal.SIGTERM)
            os.waitpid(self.pid, 0)
            self.pid = 0
        for p in self.procs:
            if p.poll() is None:
                os.kill(p.pid, signal.SIGCONT)
                p.terminate()
            p.wait()
        for name, f in sorted(self.logs.items()):
            f.seek(0)
            lines = f.read().decode(errors="replace").splitlines(True)
            if len(lines) > LOG_LINES_MAX:
                head, tail = LOG_LINES_MAX // 4, LOG_LINES_MAX * 3 // 4
                lines = lines[:head] + [
                    f"run: ... {len(lines) - head - tail} lines of {name} "
                    f"left out (all in {f.name}) ...\n"] + lines[-tail:]
            sys.stderr.write("".join(lines))
            f.close()
        self.logs = {}

    def peer_log(self, name):
        """Everything peer name has logged so far."""
        f = self.log(name)
        f.flush()
        with open(f.name, encoding="utf-8", errors="replace") as r:
            return r.read()

    def request_argv(self, *args, public=None, scope=None, scope_fd=None):
        """The pbx-client request command line: job 11:1 session 7 realm
        3 reading docs/readme.txt through launchd's control socket (or
        public), with a scope from vfsd's scope socket (or scope_fd, a
        scope this process holds), then args (a later option wins)."""
        where = ["--scope-fd", str(scope_fd)] if scope_fd is not None else \
            ["--scope", scope or self.scope]
        return [os.path.join(self.bin_dir, "pbx-client"), "request",
                "--control", public or self.control] + where + [
                    "--selector", "docs/readme.txt", "--op", "read",
                    "--class", "file", "--job", "11:1", "--session", "7",
                    "--realm", "3", "--entry", "bin/cat", "--label",
                    "readme", "--wait-ms", "20000"] + list(args)

    def client(self, *args, public=None, scope=None, scope_fd=None):
        """Runs pbx-client request with args through launchd's control
        socket (or public); returns (rc, key=value dict)."""
        argv = self.request_argv(*args, public=public, scope=scope,
                                 scope_fd=scope_fd)
        out = subprocess.run(argv, capture_output=True, text=True,
                             check=False, timeout=60,
                             pass_fds=() if scope_fd is None else (scope_fd,))
        print(out.stdout, end="")
        print(out.stderr, end="", file=sys.stderr)
        kv = dict(l.split("=", 1) for l in out.stdout.splitlines()
                  if "=" in l)
        return out.returncode, kv

    def launchd_expire(self, via, job="11:1"):
        """pbx-launchd expire of job via --control or --public."""
        path = self.control if via == "--control" else self.public
        out = subprocess.run([os.path.join(self.bin_dir, "pbx-launchd"),
                              "expire", via, path, "--job", job],
                             capture_output=True, text=True, check=False,
                             timeout=30)
        print(out.stdout, end="")
        print(out.stderr, end="", file=sys.stderr)
        return out.returncode, out.stdout.strip()


def read_rows(path):
    """Returns the non-empty lines of path ([] when it does not exist)."""
    try:
        with open(path, encoding="utf-8") as f:
            return [l for l in f.read().splitlines() if l.strip()]
    except FileNotFoundError:
        return []


def wait_for(pred, what, seconds=5.0):
    """Waits (bounded) until pred() is true; fails with what otherwise."""
    deadline = time.monotonic() + seconds
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


def last_object(st):
    """'ID gen G' of the object vfsd resolved last."""
    lines = [l for l in st.peer_log("vfsd").splitlines()
             if "RESOLVE found object" in l]
    if not lines:
        fail("vfsd resolved nothing")
    words = lines[-1].split("RESOLVE found object ", 1)[1].split()
    return f"{words[0]} gen {words[2]}"


def lifecycle(st):
    """A routine one-shot request, consumed on the caller's connection."""
    rc, kv = st.client("--lifetime", "one-shot", "--urgency", "routine",
                       "--target", "42:5", "--slot", "20", "--then",
                       "consume")
    if rc != 0 or kv.get("outcome") != "approved" or \
            kv.get("consume") != "accepted":
        fail(f"lifecycle: {kv}")
    print(f"run: decision approved: grant {kv.get('grant')} installed at "
          f"slot {kv.get('slot')}; consumed")
    named = [l for l in st.peer_log("vfsd").splitlines()
             if "RESOLVE found object" in l][-1].split(" scope ", 1)[1]
    if named.split()[0] != kv.get("scope"):
        fail(f"vfsd named scope {named}, the client was handed "
             f"{kv.get('scope')}")
    print(f"run: scope {kv.get('scope')} named by the inode of the end "
          f"vfsd handed out, as powerboxd's fstat of its copy reports")
    cleaned(st, last_object(st))


def lie_scope(st):
    """A FOUND naming another scope than the committed one is refused."""
    rc, kv = st.client("--lifetime", "one-shot", "--urgency", "routine",
                       "--target", "42:5", "--slot", "23",
                       scope=st.lie_scope)
    if rc != 3 or kv.get("outcome") != "denied":
        fail(f"lie-scope: a misnamed scope was not denied: {kv}")
    if "(a lie: --lie-scope)" not in st.peer_log("vfsd"):
        fail("vfsd never answered through the lying scope")
    time.sleep(0.2)
    if read_rows(st.installs) or read_rows(st.views):
        fail("a denied misnamed scope left an install or a row")
    obj = last_object(st)
    wait_for(lambda: f"HANG-UP object {obj}" in st.peer_log("vfsd"),
             f"vfsd kept the row of refused object {obj}")
    print(f"run: FOUND naming another identity than scope "
          f"{kv.get('scope')} denied; nothing installed; vfsd freed the "
          f"row of object {obj} when its last copy hung up")


def expire(st):
    """EXPIRE is launchd's only through its broker connection."""
    rc, kv = st.client("--lifetime", "job", "--urgency", "routine",
                       "--target", "42:5", "--slot", "21")
    if rc != 0 or kv.get("outcome") != "approved":
        fail(f"expire: no grant: {kv}")
    obj = last_object(st)
    rc, _ = st.launchd_expire("--public")
    if rc == 0:
        fail("EXPIRE on the public endpoint was accepted")
    time.sleep(0.2)
    if len(read_rows(st.installs)) != 1 or len(read_rows(st.views)) != 1:
        fail("a refused EXPIRE changed the grant")
    print("run: EXPIRE on an ordinary public connection refused; grant "
          "still live")
    rc, out = st.launchd_expire("--control")
    if rc != 0 or out != "expire=accepted":
        fail(f"EXPIRE through the broker: {out}")
    cleaned(st, obj)


def runtime_reply(st):
    """launchd's broker relays a running caller's runtime-reply request."""
    rc, kv = st.client("--lifetime", "one-shot", "--urgency", "routine",
                       "--mode", "runtime-reply", "--then", "consume")
    if rc != 0 or kv.get("outcome") != "approved" or \
            kv.get("mode") != "runtime-reply" or "alias_inode" not in kv:
        fail(f"runtime-reply: {kv}")
    aliases = st.peer_log("launchd").count("alias handed to the caller")
    if aliases != 1:
        fail(f"the alias crossed the broker {aliases} times")
    if kv.get("alias") != "revoked":
        fail("the caller's alias outlived the grant")
    print(f"run: alias {kv['alias_inode']} handed over once through the "
          f"broker, revoked after CONSUME")
    cleaned(st, last_object(st))


def fd_count(pid):
    """Open descriptors of process pid."""
    return len(os.listdir(f"/proc/{pid}/fd"))


def direct(st):
    """BEGIN on powerboxd's own public endpoint: refused, nothing kept."""
    base = fd_count(st.pid)
    argv = [os.path.join(st.bin_dir, "pbx-client"), "request", "--public",
            st.public, "--scope", st.scope, "--selector", "docs/readme.txt",
            "--op", "read", "--class", "file", "--lifetime", "one-shot",
            "--job", "11:1", "--session", "7", "--realm", "3", "--target",
            "42:5", "--slot", "20"]
    out = subprocess.run(argv, capture_output=True, text=True, check=False,
                         timeout=60)
    print(out.stderr, end="", file=sys.stderr)
    if out.returncode != 1 or "request=" in out.stdout or \
            "BEGIN refused" not in out.stderr or \
            f"(0x{0x061D:04x})" not in out.stderr:
        fail(f"a BEGIN on the public endpoint was not refused with "
             f"PBX_E_CORE_BROKER: {out.stdout} {out.stderr}")
    wait_for(lambda: fd_count(st.pid) == base,
             f"powerboxd holds {fd_count(st.pid)} descriptors, not {base}")
    rc, kv = st.client("--lifetime", "one-shot", "--urgency", "routine",
                       "--target", "42:5", "--slot", "20", "--then",
                       "consume")
    if rc != 0 or kv.get("consume") != "accepted":
        fail(f"powerboxd stopped serving after a refused BEGIN: {kv}")
    cleaned(st, last_object(st))
    print("run: BEGIN on the public endpoint refused (PBX_E_CORE_BROKER); "
          "the same request through launchd approved and consumed")


def hangup(st):
    """A caller that dies after COMMIT: launchd cancels its request."""
    launchd = st.procs[3].pid
    # Settled: launchd may not yet have closed the control connection of
    # the previous scenario's client.
    base = (settled_fds(st.pid), settled_fds(launchd))
    rc, kv = st.client("--lifetime", "one-shot", "--urgency", "routine",
                       "--target", "42:5", "--slot", "23", "--then",
                       "hang-up")
    if rc != 0 or kv.get("hang_up") != "after-commit" or "request" not in kv:
        fail(f"hangup: the request was not committed: {kv}")
    line = f"hang-up: CANCEL request {kv['request']} "
    wait_for(lambda: line in st.peer_log("launchd"),
             f"launchd never cancelled request {kv['request']}", 10.0)
    said = [l for l in st.peer_log("launchd").splitlines() if line in l][0]
    # Cancelled in flight; or, when the approval was already published,
    # the decision stays as published (final until delivered) and the
    # CANCEL ends the grant it names: either way nothing stays installed
    # or shown (checked below).
    if not (said.endswith("decision cancelled") or
            said.endswith("decision approved")):
        fail(f"hangup: {said}")
    wait_for(lambda: read_rows(st.installs) == [],
             f"procd still holds {read_rows(st.installs)}")
    wait_for(lambda: read_rows(st.views) == [],
             f"ttyd still shows {read_rows(st.views)}")
    wait_for(lambda: (fd_count(st.pid), fd_count(launchd)) == base,
             f"descriptors {(fd_count(st.pid), fd_count(launchd))}, "
             f"not the baseline {base}")
    print(f"run: {said.split(': ', 1)[1]}; nothing installed or shown, "
          f"descriptors back to {base}")


def simple(st, *args):
    """Runs pbx-client with args on a new control connection; returns
    (rc, stdout, stderr)."""
    out = subprocess.run([os.path.join(st.bin_dir, "pbx-client")] +
                         list(args) + ["--control", st.control],
                         capture_output=True, text=True, check=False,
                         timeout=60)
    print(out.stdout, end="")
    print(out.stderr, end="", file=sys.stderr)
    return out.returncode, out.stdout, out.stderr


def foreign(st):
    """Another program cannot drive a request or grant it did not begin:
    launchd answers PBX_E_PEER_NOT_YOURS itself; the grant outlives its
    connection and only launchd's EXPIRE ends it."""
    rc, kv = st.client("--lifetime", "one-shot", "--urgency", "routine",
                       "--target", "42:5", "--slot", "24")
    if rc != 0 or kv.get("outcome") != "approved":
        fail(f"foreign: no grant: {kv}")
    obj = last_object(st)
    relayed = st.peer_log("launchd").count("broker: op")
    for args in (["consume", "--grant", kv["grant"]],
                 ["cancel", "--request", kv["request"]],
                 ["cancel", "--job", "11:1", "--session", "7"]):
        rc, out, err = simple(st, *args)
        if rc != 1 or "accepted" in out or f"(0x{0x08C8:04x})" not in err:
            fail(f"foreign: {' '.join(args)} was not refused as not "
                 f"yours: {out} {err}")
    if st.peer_log("launchd").count("broker: op") != relayed:
        fail("foreign: a refused frame reached powerboxd")
    time.sleep(0.2)
    if len(read_rows(st.installs)) != 1 or len(read_rows(st.views)) != 1:
        fail("foreign: a refused frame changed the grant")
    print(f"run: CONSUME of grant {kv['grant']}, CANCEL of request "
          f"{kv['request']} and of its job and session from another "
          f"connection refused by launchd (0x08c8); grant still live")
    rc, out = st.launchd_expire("--control")
    if rc != 0 or out != "expire=accepted":
        fail(f"foreign: EXPIRE through the broker: {out}")
    cleaned(st, obj)


def tmux(*args):
    """Runs one tmux command on the run's own server; returns stdout."""
    out = subprocess.run(["tmux", "-S", TMUX_SOCKET[0]] + list(args),
                         capture_output=True, text=True, check=False,
                         timeout=10)
    if out.returncode != 0:
        fail(f"tmux {' '.join(args)}: {out.stderr.strip()}")
    return out.stdout


def pane_text(st):
    """What st's tmux pane shows now."""
    return tmux("capture-pane", "-p", "-t", st.pane)


def clear_pane(st):
    """Blanks st's pane (screen and history), so that what a scenario
    then finds on it was written since."""
    fd = os.open(st.tty, os.O_WRONLY | os.O_NOCTTY)
    os.write(fd, b"\033[H\033[2J")
    os.close(fd)
    tmux("clear-history", "-t", st.pane)
    wait_for(lambda: pane_text(st).strip() == "", "the pane did not clear")


def flush_typed(st):
    """Discards input typed into st's pane that nobody read."""
    fd = os.open(st.tty, os.O_RDWR | os.O_NOCTTY)
    termios.tcflush(fd, termios.TCIFLUSH)
    os.close(fd)


def wait_prompt(st, request, seconds=10.0):
    """Waits until the pane shows the prompt of request; returns the
    'ID gen G' of the object it shows."""
    def shown():
        screen = pane_text(st)
        return f"request : {request}\n" in screen and "Approve?" in screen
    wait_for(shown, f"the prompt of request {request} never appeared",
             seconds)
    screen = pane_text(st)
    obj = screen.split("object  : ", 1)[1].splitlines()[0].strip()
    return obj


def withdrawn_on_pane(st, request):
    """True when the pane says request's prompt was withdrawn."""
    return f"[prompt for request {request} withdrawn]" in pane_text(st)


class Client:
    """A pbx-client request running in the background: its stdout lines
    are collected as they come; go() writes the line on its stdin that
    `--then hold` and `--then cancel` wait for."""

    def __init__(self, st, *args, public=None, scope_fd=None, stderr=None):
        argv = st.request_argv(*args, public=public, scope_fd=scope_fd)
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
            stderr=stderr,
            pass_fds=() if scope_fd is None else (scope_fd,))
        self.lines = []
        self.cv = threading.Condition()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            print(line, end="")
            with self.cv:
                self.lines.append(line.rstrip("\n"))
                self.cv.notify_all()
        with self.cv:
            self.lines.append(None)
            self.cv.notify_all()

    def kv(self):
        """The key=value lines printed so far (the last of a key wins)."""
        with self.cv:
            return dict(l.split("=", 1) for l in self.lines
                        if l is not None and "=" in l)

    def wait_key(self, key, seconds=10.0):
        """Waits until key= was printed; returns its value."""
        deadline = time.monotonic() + seconds
        with self.cv:
            while True:
                for l in self.lines:
                    if l is not None and l.startswith(key + "="):
                        return l.split("=", 1)[1]
                left = deadline - time.monotonic()
                if None in self.lines or left <= 0:
                    fail(f"pbx-client never printed {key}= "
                         f"({self.lines})")
                self.cv.wait(left)

    def committed(self):
        """The request id, once printed. pbx-client's stdout is a pipe,
        flushed first after COMMIT was answered, so the request is then
        committed; --then hold and --then cancel read their stdin line
        only after COMMIT in any case."""
        return self.wait_key("request")

    def go(self):
        """Lets a held client go on."""
        self.proc.stdin.write("\n")
        self.proc.stdin.flush()

    def running(self):
        """True while the client has not exited."""
        return self.proc.poll() is None

    def finish(self, seconds=30.0):
        """Waits for the client's exit; returns (rc, key=value dict)."""
        try:
            self.proc.stdin.close()
        except BrokenPipeError:
            pass
        rc = self.proc.wait(timeout=seconds)
        self.reader.join(timeout=5)
        return rc, self.kv()


def exceptional(st, *args, scope_fd=None):
    """An exceptional one-shot request of job 11:1 in the background."""
    return Client(st, "--lifetime", "one-shot", "--urgency", "exceptional",
                  "--target", "42:5", "--slot", "22", *args,
                  scope_fd=scope_fd)


def prompt(st):
    """An exceptional request approved by typing y into the tmux pane."""
    clear_pane(st)
    cli = exceptional(st, "--then", "consume")
    req = cli.committed()
    obj = wait_prompt(st, req)
    screen = pane_text(st)
    for want in ("program : bin/cat", 'selector: "docs/readme.txt"',
                 f"object  : {obj}"):
        if want not in screen:
            fail(f"the prompt does not show {want}:\n{screen}")
    if obj != last_object(st):
        fail(f"the prompt shows object {obj}, vfsd resolved "
             f"{last_object(st)}")
    print("run: the terminal shows:\n" + "\n".join(
        "    " + l for l in screen.splitlines() if l.strip()))
    tmux("send-keys", "-t", st.pane, "y", "Enter")
    rc, kv = cli.finish()
    if rc != 0 or kv.get("outcome") != "approved" or \
            kv.get("consume") != "accepted":
        fail(f"prompt: {kv}")
    print("run: approved on the terminal; consumed")
    cleaned(st, obj)


def count(text, *words):
    """Lines of text holding every one of words."""
    return sum(1 for l in text.splitlines() if all(w in l for w in words))


def prompt_pending(st):
    """1,000 routine lifecycles while one prompt waits for its user."""
    clients, each = 8, 125
    total = clients * each
    clear_pane(st)
    cli = exceptional(st, "--then", "consume", "--wait-ms", "300000")
    req = cli.committed()
    obj = wait_prompt(st, req)
    print(f"run: prompt of request {req} (object {obj}) shows; "
          f"{total} routine lifecycles start ({clients} clients x {each})")
    logs = {n: st.peer_log(n) for n in ("procd", "ttyd", "vfsd", "launchd")}
    slots = [str(100 + k) for k in range(clients)]
    t0 = time.monotonic()
    procs = [subprocess.Popen(st.request_argv(
        "--lifetime", "one-shot", "--urgency", "routine", "--target", "42:5",
        "--slot", slots[k], "--job", f"{200 + k}:1", "--entry",
        f"bin/worker{k}", "--label", f"worker {k}", "--then", "consume",
        "--repeat", str(each)), stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True) for k in range(clients)]
    outs = [p.communicate(timeout=150) for p in procs]
    wall = time.monotonic() - t0
    done, medians, p99s = 0, [], []
    for k, (p, (out, err)) in enumerate(zip(procs, outs)):
        kv = dict(l.split("=", 1) for l in out.splitlines() if "=" in l)
        if p.returncode != 0 or kv.get("repeat") != str(each):
            fail(f"prompt-pending: worker {k} (rc {p.returncode}) did not "
                 f"approve and consume all {each}: {out} {err}")
        done += int(kv["repeat"])
        medians.append(int(kv["median_ns"]))
        p99s.append(int(kv["p99_ns"]))
    print(f"run: {done} routine lifecycles approved and consumed in "
          f"{wall:.2f} s wall ({done / wall:.0f}/s; per-client median "
          f"{min(medians) / 1e3:.0f}..{max(medians) / 1e3:.0f} us, p99 up "
          f"to {max(p99s) / 1e3:.0f} us) while the prompt waited")
    # Every one of them, counted at the peers: installed into its
    # worker's slot, shown, decided (wake), consumed, revoked, removed,
    # retired.
    def news(name):
        return st.peer_log(name)[len(logs[name]):]
    want = [("procd INSTALL", lambda: sum(count(
                news("procd"), "INSTALL grant", f"slot {s}") for s in slots)),
            ("procd revocation", lambda: sum(count(
                news("procd"), "leaves process 42 slot " + s)
                for s in slots)),
            ("ttyd ACTIVE", lambda: count(news("ttyd"), "VIEW ACTIVE")),
            ("ttyd REMOVE", lambda: count(news("ttyd"), "VIEW REMOVE")),
            ("vfsd RETIRE", lambda: count(news("vfsd"), "RETIRE object")),
            ("launchd wake", lambda: sum(count(
                news("launchd"), "wake request", f"job {200 + k}.1")
                for k in range(clients))),
            ("accepted CONSUME", lambda: count(
                news("launchd"), "broker: op 0x0006", "status 0x0000"))]
    for what, n in want:
        wait_for(lambda n=n: n() == total,
                 f"prompt-pending: {what} counted {n()}, not {total}", 20.0)
    print(f"run: counted at the peers: {total} of each of "
          f"{', '.join(w for w, _ in want)}")
    screen = pane_text(st)
    said = st.peer_log("ttyd")
    if not cli.running() or f"request : {req}\n" not in screen or \
            "[approved]" in screen or "[denied]" in screen or \
            withdrawn_on_pane(st, req) or \
            count(said, f"PROMPT {req}: showing") != 1 or \
            count(said, f"PROMPT {req}: approve") or \
            count(said, f"PROMPT {req}: deny") or \
            count(said, f"WITHDRAW {req} "):
        fail(f"prompt-pending: the prompt of {req} did not stay pending "
             f"and showing:\n{screen}")
    if read_rows(st.installs) or read_rows(st.views):
        fail("prompt-pending: rows left after the lifecycles")
    print(f"run: the prompt of request {req} still shows, unanswered")
    tmux("send-keys", "-t", st.pane, "y", "Enter")
    rc, kv = cli.finish()
    if rc != 0 or kv.get("outcome") != "approved" or \
            kv.get("consume") != "accepted":
        fail(f"prompt-pending: the prompt's request: {kv}")
    print(f"run: request {req} approved on the terminal; grant "
          f"{kv['grant']} consumed")
    cleaned(st, obj)


def prompt_timeout(st):
    """An unanswered prompt ends at its deadline, withdrawn."""
    limit = st.deadline_ms("prompt", 300000) / 1000.0
    clear_pane(st)
    t0 = time.monotonic()
    cli = exceptional(st)
    req = cli.committed()
    obj = wait_prompt(st, req)
    shown = time.monotonic()
    time.sleep(max(0.0, shown + limit - 0.5 - time.monotonic()))
    if not cli.running() or withdrawn_on_pane(st, req) or \
            "WITHDRAW" in st.peer_log("ttyd"):
        fail(f"prompt-timeout: the prompt ended before its deadline "
             f"({time.monotonic() - shown:.2f} s after it showed)")
    print(f"run: {limit - 0.5:.1f} s after it showed, the prompt of "
          f"request {req} still shows and its request waits")
    rc, kv = cli.finish(limit + 10)
    end = time.monotonic()
    if rc != 3 or kv.get("outcome") != "denied" or \
            kv.get("reason") != "prompt-timeout":
        fail(f"prompt-timeout: {kv}")
    if end - t0 < limit or end - shown < limit - 0.25 or \
            end - shown > limit + 2.0:
        fail(f"prompt-timeout: decided {end - shown:.2f} s after the "
             f"prompt showed ({end - t0:.2f} s after the client started); "
             f"the deadline is {limit:.1f} s")
    print(f"run: DENIED reason prompt-timeout {end - shown:.2f} s after the "
          f"prompt showed ({end - t0:.2f} s after BEGIN; deadline "
          f"{limit:.1f} s)")
    wait_for(lambda: withdrawn_on_pane(st, req),
             f"the pane never said the prompt of {req} was withdrawn")
    if f"WITHDRAW {req} object {obj}: withdrawn from the terminal" not in \
            st.peer_log("ttyd"):
        fail("prompt-timeout: ttyd logged no WITHDRAW from the terminal")
    wait_for(lambda: f"HANG-UP object {obj}" in st.peer_log("vfsd"),
             f"vfsd kept object {obj} of the timed-out prompt")
    if read_rows(st.installs) or read_rows(st.views) or \
            "INSTALL" in st.peer_log("procd"):
        fail("prompt-timeout: something was installed or shown")
    print(f"run: the pane says the prompt of {req} was withdrawn; nothing "
          f"installed or shown; vfsd freed object {obj}")
    lifecycle(st)
    if not st.alive():
        fail("prompt-timeout: powerboxd exited")
    print(f"run: powerboxd (pid {st.pid}) alive and serving")


def untouched(st, req, installs):
    """Nothing followed request req's end: no install, no row, no answer
    at ttyd."""
    time.sleep(0.5)
    if read_rows(st.installs) or read_rows(st.views) or \
            count(st.peer_log("procd"), "INSTALL") != installs or \
            count(st.peer_log("ttyd"), f"PROMPT {req}: approve") or \
            count(st.peer_log("ttyd"), f"PROMPT {req}: deny"):
        fail(f"the y typed after request {req} ended changed something")


def prompt_cancel(st):
    """A showing prompt ended by CANCEL, another by EXPIRE: withdrawn."""
    installs = count(st.peer_log("procd"), "INSTALL")
    # The client's own exact CANCEL.
    clear_pane(st)
    cli = exceptional(st, "--then", "cancel")
    req = cli.committed()
    obj = wait_prompt(st, req)
    cli.go()
    if cli.wait_key("cancel") != "accepted":
        fail(f"prompt-cancel: CANCEL of {req} refused")
    wait_for(lambda: withdrawn_on_pane(st, req),
             f"the pane never said the prompt of {req} was withdrawn")
    if f"WITHDRAW {req} object {obj}: withdrawn from the terminal" not in \
            st.peer_log("ttyd"):
        fail("prompt-cancel: ttyd logged no WITHDRAW from the terminal")
    tmux("send-keys", "-t", st.pane, "y", "Enter")
    untouched(st, req, installs)
    rc, kv = cli.finish()
    if rc != 3 or kv.get("outcome") != "cancelled":
        fail(f"prompt-cancel: CANCEL: {kv}")
    print(f"run: CANCEL of request {req} withdrew its prompt from the pane; "
          f"a y typed after it answered nothing; the decision read after "
          f"it: cancelled")
    # launchd's EXPIRE of the job; the y typed above is still unread.
    clear_pane(st)
    cli = exceptional(st, "--job", "13:1", "--then", "hold")
    req2 = cli.committed()
    obj = wait_prompt(st, req2)
    if f"PROMPT {req2}: RETRY (input pending)" not in st.peer_log("ttyd"):
        fail("prompt-cancel: the y typed after the first prompt was not "
             "discarded as type-ahead")
    rc, out = st.launchd_expire("--control", job="13:1")
    if rc != 0 or out != "expire=accepted":
        fail(f"prompt-cancel: EXPIRE of job 13:1: {out}")
    wait_for(lambda: withdrawn_on_pane(st, req2),
             f"the pane never said the prompt of {req2} was withdrawn")
    if f"WITHDRAW {req2} object {obj}: withdrawn from the terminal" not in \
            st.peer_log("ttyd"):
        fail("prompt-cancel: ttyd logged no WITHDRAW from the terminal")
    tmux("send-keys", "-t", st.pane, "y", "Enter")
    untouched(st, req2, installs)
    cli.go()
    rc, kv = cli.finish()
    if rc != 3 or kv.get("outcome") != "cancelled":
        fail(f"prompt-cancel: EXPIRE: {kv}")
    flush_typed(st)
    print(f"run: EXPIRE of job 13:1 withdrew the prompt of request {req2} "
          f"from the pane (the earlier y was discarded as type-ahead "
          f"before it showed); a y typed after it answered nothing; the "
          f"decision asked for after it: cancelled")


def stack_pids(st):
    """powerboxd's and every peer's pid."""
    return [st.pid] + [p.pid for p in st.procs]


def holders(st, inode):
    """The stack's processes holding a descriptor of socket inode."""
    want, found = f"socket:[{inode}]", []
    for pid in stack_pids(st):
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") == want:
                    found.append(pid)
            except FileNotFoundError:
                pass
    return found


def settled_fds(pid):
    """pid's descriptor count once it held still for half a second (the
    hang-ups of a finished client's scope are noticed)."""
    seen, since = fd_count(pid), time.monotonic()
    while time.monotonic() - since < 0.5:
        time.sleep(0.05)
        if fd_count(pid) != seen:
            seen, since = fd_count(pid), time.monotonic()
    return seen


def stop_peer(p):
    """SIGSTOPs peer process p and waits until it is stopped."""
    os.kill(p.pid, signal.SIGSTOP)

    def stopped():
        with open(f"/proc/{p.pid}/stat", encoding="ascii") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "T"
    wait_for(stopped, f"peer {p.pid} did not stop")


def ttyd_stalled(st):
    """Revocation goes on while ttyd is stopped; REMOVE completes after."""
    vfsd, ttyd, procd = st.procs[0], st.procs[1], st.procs[2]
    rc, kv = st.client("--lifetime", "job", "--urgency", "routine",
                       "--target", "42:5", "--slot", "25", "--job", "14:1")
    if rc != 0 or kv.get("outcome") != "approved":
        fail(f"ttyd-stalled: no grant: {kv}")
    obj = last_object(st)
    oid = obj.split()[0]
    if holders(st, oid) != [procd.pid] or len(read_rows(st.views)) != 1:
        fail(f"ttyd-stalled: object {oid} held by {holders(st, oid)}")
    vfsd_fds = settled_fds(vfsd.pid)
    stop_peer(ttyd)
    t0 = time.monotonic()
    print(f"run: grant {kv['grant']} live (object {obj} installed at "
          f"procd); ttyd (pid {ttyd.pid}) stopped")
    rc, out = st.launchd_expire("--control", job="14:1")
    if rc != 0 or out != "expire=accepted":
        fail(f"ttyd-stalled: EXPIRE: {out}")
    wait_for(lambda: read_rows(st.installs) == [],
             f"procd still holds {read_rows(st.installs)}")
    wait_for(lambda: f"RETIRE object {obj}" in st.peer_log("vfsd"),
             f"vfsd never retired object {obj} while ttyd was stopped")
    retired = time.monotonic() - t0
    wait_for(lambda: holders(st, oid) == [] and
             fd_count(vfsd.pid) == vfsd_fds - 1,
             f"object {oid} still held by {holders(st, oid)}; vfsd holds "
             f"{fd_count(vfsd.pid)} descriptors, was {vfsd_fds}")
    if len(read_rows(st.views)) != 1:
        fail("ttyd-stalled: the stopped ttyd's view changed")
    print(f"run: EXPIRE revoked at procd and vfsd retired object {obj} "
          f"{retired:.2f} s after it, with ttyd stopped: no process holds "
          f"the object, vfsd closed its provider end; ttyd still lists "
          f"the row")
    limit = st.deadline_ms("ttyd", 5000) / 1000.0
    while time.monotonic() < t0 + 3 * limit:
        if not st.alive():
            fail("ttyd-stalled: powerboxd exited while ttyd was stopped")
        time.sleep(0.1)
    os.kill(ttyd.pid, signal.SIGCONT)
    wait_for(lambda: read_rows(st.views) == [],
             f"ttyd still shows {read_rows(st.views)} after SIGCONT")
    remove = f"VIEW REMOVE grant {kv['grant']}"
    wait_for(lambda: count(st.peer_log("ttyd"), remove) >= 2,
             f"ttyd-stalled: REMOVE sent "
             f"{count(st.peer_log('ttyd'), remove)} time(s) in "
             f"{3 * limit:.0f} s against a {limit:.0f} s deadline")
    time.sleep(0.5)
    removes = count(st.peer_log("ttyd"), remove)
    if "reply send failed" in st.peer_log("ttyd") or not st.alive():
        fail("ttyd-stalled: powerboxd did not take ttyd's late replies")
    print(f"run: ttyd continued after {time.monotonic() - t0:.1f} s and "
          f"served REMOVE of grant {kv['grant']} {removes} times (retried "
          f"while it was stopped); the view file is empty")
    if not st.alive():
        fail("ttyd-stalled: powerboxd exited")
    lifecycle(st)
    print(f"run: powerboxd (pid {st.pid}) alive throughout and serving")


def take_scope(st):
    """One scope from vfsd's scope socket, held by this process."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.settimeout(5)
    s.connect(st.scope)
    msg, fds, _, _ = socket.recv_fds(s, 64, 1)
    s.close()
    if len(fds) != 1 or msg[:8] != b"PBXSCOPE" or \
            struct.unpack("<Q", msg[8:16])[0] != os.fstat(fds[0]).st_ino:
        fail(f"vfsd handed out no valid scope: {msg!r} {fds}")
    return fds[0]


def vfsd_stalled(st):
    """vfsd stopped for 30 s: what needs it times out, the rest goes on;
    a RETIRE owed to it is retried and acknowledged after SIGCONT."""
    vfsd = st.procs[0]
    base, vbase = fd_count(st.pid), settled_fds(vfsd.pid)
    rc, kv = st.client("--lifetime", "job", "--urgency", "routine",
                       "--target", "42:5", "--slot", "26", "--job", "15:1")
    if rc != 0 or kv.get("outcome") != "approved":
        fail(f"vfsd-stalled: no grant: {kv}")
    grant, obj = kv["grant"], last_object(st)
    held = Client(st, "--op", "write", "--job", "16:1", "--target", "42:5",
                  "--slot", "27", "--then", "hold")
    decided = held.committed()
    wait_for(lambda: f"wake request {decided} job 16.1" in
             st.peer_log("launchd"),
             f"request {decided} was never decided")
    scopes = [take_scope(st) for _ in range(3)]
    stop_peer(vfsd)
    t0 = time.monotonic()
    print(f"run: grant {grant} live (object {obj}); request {decided} "
          f"decided, its DECISION not asked yet; vfsd (pid {vfsd.pid}) "
          f"stopped")
    # Needs vfsd: the resolution through its scope gets no answer.
    limit = st.deadline_ms("scope", 2000) / 1000.0
    t = time.monotonic()
    rc, kv = st.client("--job", "17:1", "--target", "42:5", "--slot", "28",
                       scope_fd=scopes[0])
    took = time.monotonic() - t
    if rc != 3 or kv.get("outcome") != "denied" or \
            kv.get("reason") != "peer-timeout" or took < limit:
        fail(f"vfsd-stalled: a request needing vfsd: {kv} after "
             f"{took:.2f} s")
    print(f"run: request {kv['request']} needing vfsd DENIED reason "
          f"peer-timeout after {took:.2f} s (scope deadline {limit:.1f} s)")
    # Needs nothing from vfsd: served at once.
    t = time.monotonic()
    held.go()
    rc, kv = held.finish()
    if rc != 3 or kv.get("outcome") != "denied" or \
            kv.get("reason") != "policy" or time.monotonic() - t > 1.0:
        fail(f"vfsd-stalled: DECISION of decided request {decided}: {kv}")
    print(f"run: DECISION of decided request {decided}: denied (policy) in "
          f"{time.monotonic() - t:.2f} s")
    t = time.monotonic()
    out = subprocess.run(st.request_argv(
        "--target", "42:5", "--slot", "20", public=st.public,
        scope_fd=scopes[1]), capture_output=True, text=True, check=False,
        timeout=10, pass_fds=(scopes[1],))
    if out.returncode != 1 or "BEGIN refused" not in out.stderr or \
            f"(0x{0x061D:04x})" not in out.stderr:
        fail(f"vfsd-stalled: direct BEGIN: {out.stdout} {out.stderr}")
    print(f"run: BEGIN on the public endpoint refused (PBX_E_CORE_BROKER) "
          f"in {time.monotonic() - t:.2f} s")
    t = time.monotonic()
    cli = Client(st, "--job", "18:1", "--target", "42:5", "--slot", "29",
                 "--then", "cancel", scope_fd=scopes[2])
    req = cli.committed()
    cli.go()
    if cli.wait_key("cancel") != "accepted":
        fail(f"vfsd-stalled: CANCEL of {req} refused")
    cancel_took = time.monotonic() - t
    cli.go()
    rc, kv = cli.finish()
    if rc != 3 or kv.get("outcome") != "cancelled":
        fail(f"vfsd-stalled: CANCEL of request {req} waiting on vfsd: {kv}")
    print(f"run: request {req}, waiting on vfsd, cancelled: CANCEL "
          f"accepted {cancel_took:.2f} s after BEGIN, decision cancelled "
          f"{time.monotonic() - t:.2f} s after BEGIN")
    for fd in scopes:
        os.close(fd)
    # A grant revoked while vfsd is stopped.
    rc, out = st.launchd_expire("--control", job="15:1")
    if rc != 0 or out != "expire=accepted":
        fail(f"vfsd-stalled: EXPIRE: {out}")
    wait_for(lambda: read_rows(st.installs) == [] and
             read_rows(st.views) == [],
             f"vfsd-stalled: revocation or REMOVE waited on vfsd: "
             f"{read_rows(st.installs)} {read_rows(st.views)}")
    print(f"run: EXPIRE of grant {grant}: revoked at procd and REMOVEd at "
          f"ttyd while vfsd is stopped")
    while time.monotonic() < t0 + 30.0:
        if not st.alive():
            fail("vfsd-stalled: powerboxd exited while vfsd was stopped")
        time.sleep(0.1)
    os.kill(vfsd.pid, signal.SIGCONT)
    t = time.monotonic()
    print("run: vfsd continued after 30 s")
    retire = f"RETIRE object {obj}"
    wait_for(lambda: retire in st.peer_log("vfsd"),
             f"vfsd never retired object {obj}")
    # powerboxd stops sending RETIRE once one is acknowledged: the count
    # holds still for longer than a deadline and the longest backoff.
    quiet = st.deadline_ms("vfsd", 5000) / 1000.0 + 1.0
    seen, since = count(st.peer_log("vfsd"), retire), time.monotonic()
    while time.monotonic() - since < quiet:
        time.sleep(0.1)
        now = count(st.peer_log("vfsd"), retire)
        if now != seen:
            seen, since = now, time.monotonic()
        if time.monotonic() - t > 30.0:
            fail(f"vfsd-stalled: powerboxd still RETIREs object {obj} "
                 f"({seen} so far): no acknowledgement taken")
    if seen < 2:
        fail(f"vfsd-stalled: RETIRE of object {obj} sent {seen} time(s) "
             f"in 30 s")
    print(f"run: vfsd served RETIRE of object {obj} {seen} times (retried "
          f"while it was stopped); acknowledged: no more come")
    if read_rows(st.installs) or read_rows(st.views):
        fail("vfsd-stalled: rows left")
    lifecycle(st)
    wait_for(lambda: fd_count(st.pid) == base,
             f"powerboxd holds {fd_count(st.pid)} descriptors, not {base}")
    wait_for(lambda: fd_count(vfsd.pid) == vbase,
             f"vfsd holds {fd_count(vfsd.pid)} descriptors, not {vbase}")
    if not st.alive():
        fail("vfsd-stalled: powerboxd exited")
    print(f"run: powerboxd (pid {st.pid}) alive throughout, serving, "
          f"descriptors back to {base} (vfsd's to {vbase})")


def root_tree(root):
    """Every path beneath root with its inode, mode and size (symlinks
    not followed)."""
    seen = {}
    for d, dirs, files in os.walk(root):
        for n in dirs + files:
            p = os.path.join(d, n)
            s = os.lstat(p)
            seen[p] = (s.st_ino, s.st_mode, s.st_size)
    return seen


def no_authority(st, what, installs, tree):
    """Nothing installed at procd (no row, no INSTALL since), no view row
    at ttyd, nothing created or changed in vfsd's root."""
    root = os.path.join(st.work, "root")
    if read_rows(st.installs) or read_rows(st.views) or \
            count(st.peer_log("procd"), "INSTALL") != installs:
        fail(f"{what}: something was installed or shown: "
             f"{read_rows(st.installs)} {read_rows(st.views)}")
    if root_tree(root) != tree:
        fail(f"{what}: vfsd's root changed")


def not_found(st):
    """A missing file inside the scope ends NOT_FOUND, which grants
    nothing; escapes (../, an absolute selector, symlinks inside the root
    pointing outside it, to an existing or a missing file) end DENIED or
    are refused, never NOT_FOUND and never the object."""
    root = os.path.join(st.work, "root")
    outside = os.path.join(st.work, "outside.txt")
    with open(outside, "w", encoding="utf-8") as f:
        f.write("outside the scope\n")
    links = {"escape-abs": outside,
             "escape-rel": "../../outside.txt",
             "escape-missing": os.path.join(st.work, "nowhere.txt"),
             "escape-missing-rel": "../../nowhere.txt"}
    for name, to in links.items():
        p = os.path.join(root, "docs", name)
        if os.path.lexists(p):
            os.unlink(p)
        os.symlink(to, p)
    tree = root_tree(root)
    installs = count(st.peer_log("procd"), "INSTALL")
    vlog = len(st.peer_log("vfsd"))
    rc, kv = st.client("--selector", "docs/missing.txt", "--target", "42:5",
                       "--slot", "30", "--job", "19:1")
    if rc != 3 or kv.get("outcome") != "not-found" or "grant" in kv:
        fail(f"not-found: a missing file in the scope: rc {rc} {kv}")
    if "RESOLVE not-found" not in st.peer_log("vfsd")[vlog:]:
        fail("not-found: vfsd did not answer NOT_FOUND")
    time.sleep(0.2)
    no_authority(st, "not-found", installs, tree)
    print(f"run: docs/missing.txt: request {kv['request']} NOT_FOUND (vfsd "
          f"answered not-found); nothing installed, shown or created")
    escapes = ["../outside.txt", "../nowhere.txt", "docs/../../outside.txt",
               "docs/../../nowhere.txt", outside,
               os.path.join(st.work, "nowhere.txt"), "/etc/passwd"] + \
        [f"docs/{n}" for n in links]
    for sel in escapes:
        rc, kv = st.client("--selector", sel, "--target", "42:5", "--slot",
                           "30", "--job", "19:1")
        out = kv.get("outcome")
        if rc == 0 or out in ("not-found", "approved") or "grant" in kv or \
                (rc == 3 and out != "denied") or rc not in (1, 2, 3):
            fail(f"not-found: escape {sel!r}: rc {rc} {kv}")
        no_authority(st, f"not-found: escape {sel!r}", installs, tree)
        print(f"run: escape {sel!r}: "
              f"{'DENIED reason ' + kv.get('reason', '?') if rc == 3 else f'refused (rc {rc})'}"
              f"; nothing installed, shown or created")
    time.sleep(0.2)
    no_authority(st, "not-found", installs, tree)
    if "RESOLVE found" in st.peer_log("vfsd")[vlog:]:
        fail("not-found: vfsd found an object for a missing or escaping "
             "selector")


def user_deny(st):
    """A prompt answered n: DENIED reason user; every capability the
    request held (its scope and object copies) is gone by the time the
    decision is read: powerboxd's descriptors are back to the baseline and
    vfsd freed the object's row."""
    base = settled_fds(st.pid)
    installs = count(st.peer_log("procd"), "INSTALL")
    clear_pane(st)
    cli = exceptional(st, "--job", "20:1", "--then", "hold")
    req = cli.committed()
    obj = wait_prompt(st, req)
    if fd_count(st.pid) <= base:
        fail(f"user-deny: powerboxd holds {fd_count(st.pid)} descriptors "
             f"with the prompt showing, baseline {base}")
    held = fd_count(st.pid)
    tmux("send-keys", "-t", st.pane, "n", "Enter")
    wait_for(lambda: f"PROMPT {req}: deny" in st.peer_log("ttyd"),
             f"ttyd never took the n for request {req}")
    cli.go()
    rc, kv = cli.finish()
    fds, hung = fd_count(st.pid), f"HANG-UP object {obj}" in \
        st.peer_log("vfsd")
    if rc != 3 or kv.get("outcome") != "denied" or \
            kv.get("reason") != "user" or "grant" in kv:
        fail(f"user-deny: {kv}")
    if fds != base:
        fail(f"user-deny: powerboxd holds {fds} descriptors when the "
             f"decision is read, baseline {base}")
    if not hung:
        fail(f"user-deny: vfsd still holds the row of object {obj} when "
             f"the decision is read")
    time.sleep(0.2)
    if read_rows(st.installs) or read_rows(st.views) or \
            count(st.peer_log("procd"), "INSTALL") != installs:
        fail("user-deny: something was installed or shown")
    print(f"run: prompt of request {req} answered n: DENIED reason user; "
          f"when the decision was read powerboxd held {fds} descriptors "
          f"({held} while the prompt showed, baseline {base}) and vfsd had "
          f"freed object {obj}; nothing installed or shown")


def slot_rows(st, slot):
    """procd's install rows of process 42 slot slot."""
    return [r for r in read_rows(st.installs) if f" slot {slot} " in r]


def cancel_lost_reply(st):
    """A client whose approval reply is lost cancels by job and session
    (generation zero): the one grant it names ends. With two live
    requests of that job and session the same CANCEL is ambiguous: refused
    (PBX_E_CORE_AMBIGUOUS), both stay."""
    cli = Client(st, "--job", "21:1", "--session", "9", "--target", "42:5",
                 "--slot", "31", "--then", "cancel-session")
    req = cli.committed()
    wait_for(lambda: len(slot_rows(st, 31)) == 1,
             f"request {req} was never approved and installed")
    obj = last_object(st)
    wait_for(lambda: len(read_rows(st.views)) == 1,
             f"cancel-lost-reply: views {read_rows(st.views)}")
    print(f"run: request {req} approved and installed at slot 31; its "
          f"DECISION never read (the reply lost)")
    cli.go()
    if cli.wait_key("cancel") != "accepted":
        fail(f"cancel-lost-reply: the generation-zero CANCEL was refused")
    cleaned(st, obj)
    cli.go()
    rc, kv = cli.finish()
    if rc == 1 or kv.get("outcome") not in ("approved", "cancelled"):
        fail(f"cancel-lost-reply: decision after the CANCEL: {kv}")
    print(f"run: generation-zero CANCEL of job 21:1 session 9 accepted; "
          f"the grant ended at every peer; decision then read: "
          f"{kv.get('outcome')}")
    err = open(os.path.join(st.work, "logs", "ambiguous.err"), "w+")
    a = Client(st, "--job", "21:1", "--session", "9", "--target", "42:5",
               "--slot", "32", "--then", "cancel-session", stderr=err)
    b = Client(st, "--job", "21:1", "--session", "9", "--target", "42:5",
               "--slot", "33", "--then", "hold")
    ra, rb = a.committed(), b.committed()
    wait_for(lambda: len(slot_rows(st, 32)) == 1 and
             len(slot_rows(st, 33)) == 1 and len(read_rows(st.views)) == 2,
             f"requests {ra} and {rb} were not both approved")
    a.go()
    if a.wait_key("cancel") != "refused":
        fail("cancel-lost-reply: an ambiguous generation-zero CANCEL was "
             "accepted")
    err.flush()
    err.seek(0)
    said = err.read()
    if f"(0x{0x0614:04x})" not in said:
        fail(f"cancel-lost-reply: not refused as ambiguous: {said}")
    time.sleep(0.2)
    if len(slot_rows(st, 32)) != 1 or len(slot_rows(st, 33)) != 1 or \
            len(read_rows(st.views)) != 2:
        fail(f"cancel-lost-reply: a refused CANCEL changed a grant: "
             f"{read_rows(st.installs)} {read_rows(st.views)}")
    print(f"run: with requests {ra} and {rb} of job 21:1 session 9 live, "
          f"the generation-zero CANCEL refused: "
          f"{said.strip().splitlines()[-1]}; both still installed and shown")
    a.go()
    b.go()
    for c in (a, b):
        rc, kv = c.finish()
        if rc != 0 or kv.get("outcome") != "approved":
            fail(f"cancel-lost-reply: {kv}")
    err.close()
    rc, out = st.launchd_expire("--control", job="21:1")
    if rc != 0 or out != "expire=accepted":
        fail(f"cancel-lost-reply: EXPIRE: {out}")
    wait_for(lambda: read_rows(st.installs) == [] and
             read_rows(st.views) == [], "cancel-lost-reply: rows left")


def invocation_expiry(st):
    """launchd's EXPIRE of one invocation ends exactly its grants, the
    one-shot ones made within it included; another invocation's grants,
    a one-shot one made outside any invocation and a job-lifetime grant
    of the same job stay live."""
    made = {}
    for slot, args in ((34, ["--lifetime", "invocation", "--invocation",
                             "5"]),
                       (35, ["--lifetime", "one-shot", "--invocation", "5"]),
                       (36, ["--lifetime", "invocation", "--invocation",
                             "6"]),
                       (37, ["--lifetime", "one-shot", "--invocation", "6"]),
                       (38, ["--lifetime", "one-shot"]),
                       (39, ["--lifetime", "job"])):
        rc, kv = st.client(*args, "--job", "22:1", "--target", "42:5",
                           "--slot", str(slot))
        if rc != 0 or kv.get("outcome") != "approved":
            fail(f"invocation-expiry: slot {slot}: {kv}")
        made[slot] = (kv["grant"], last_object(st))
    if len(read_rows(st.installs)) != 6 or len(read_rows(st.views)) != 6:
        fail("invocation-expiry: not six grants live")
    vlog = len(st.peer_log("vfsd"))
    out = subprocess.run([os.path.join(st.bin_dir, "pbx-launchd"), "expire",
                          "--control", st.control, "--job", "22:1",
                          "--invocation", "5"], capture_output=True,
                         text=True, check=False, timeout=30)
    print(out.stdout, end="")
    print(out.stderr, end="", file=sys.stderr)
    if out.returncode != 0 or out.stdout.strip() != "expire=accepted":
        fail(f"invocation-expiry: EXPIRE of invocation 5: {out.stdout}")
    gone, kept = (34, 35), (36, 37, 38, 39)
    wait_for(lambda: all(not slot_rows(st, s) for s in gone),
             f"invocation-expiry: procd still holds {read_rows(st.installs)}")
    wait_for(lambda: len(read_rows(st.views)) == 4,
             f"invocation-expiry: ttyd shows {read_rows(st.views)}")
    for s in gone:
        wait_for(lambda s=s: f"RETIRE object {made[s][1]}" in
                 st.peer_log("vfsd"),
                 f"invocation-expiry: object {made[s][1]} never retired")
    time.sleep(0.3)
    views = "\n".join(read_rows(st.views))
    for s in kept:
        if len(slot_rows(st, s)) != 1 or \
                f"RETIRE object {made[s][1]}" in st.peer_log("vfsd")[vlog:]:
            fail(f"invocation-expiry: grant {made[s][0]} (slot {s}) ended")
    shown = {r.split()[1] for r in read_rows(st.views)
             if r.startswith("grant ")}
    if shown != {made[s][0] for s in kept}:
        fail(f"invocation-expiry: ttyd shows grants {sorted(shown)}:\n"
             f"{views}")
    print(f"run: EXPIRE of job 22:1 invocation 5 ended grants "
          f"{made[34][0]} (invocation) and {made[35][0]} (one-shot made "
          f"within it): revoked, removed, retired; grants "
          f"{', '.join(made[s][0] for s in kept)} (invocation 6, one-shot "
          f"within 6, one-shot outside any, job) stay live")
    rc, out2 = st.launchd_expire("--control", job="22:1")
    if rc != 0 or out2 != "expire=accepted":
        fail(f"invocation-expiry: EXPIRE of the job: {out2}")
    wait_for(lambda: read_rows(st.installs) == [] and
             read_rows(st.views) == [], "invocation-expiry: rows left")


def frame(op, body=b"", caps=0, req=(0, 0), seq=1):
    """A v2 frame: the 32-byte header, then body."""
    return struct.pack("<IHHHHIIIII", 0x46584250, 2, op, 0, caps, req[0],
                       req[1], len(body), seq, 0) + body


def unwanted_receipts(st):
    """A descriptor sent where none belongs, on every public operation
    (BEGIN, SELECTOR, DECISION, CANCEL, CONSUME), declared in cap_count or
    not, with an empty and a 96-byte body, straight to powerboxd's public
    endpoint: each is answered with the error reply
    PBX_E_CORE_UNEXPECTED_CAPS (0x0611) carrying no descriptor, the received descriptor is closed
    (the other end of the socketpair sent sees end of file), and
    powerboxd's descriptor count returns to its baseline. (Peer replies
    with surplus receipts are covered by the unit tests.)"""
    base = settled_fds(st.pid)
    ops = {"BEGIN": 0x0001, "SELECTOR": 0x0002, "DECISION": 0x0004,
           "CANCEL": 0x0005, "CONSUME": 0x0006}
    n = 0
    for name, op in ops.items():
        for caps in (0, 1):
            for body in (b"", bytes(96)):
                conn = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
                conn.settimeout(5)
                conn.connect(st.public)
                mine, sent = socket.socketpair(socket.AF_UNIX,
                                               socket.SOCK_SEQPACKET)
                mine.settimeout(5)
                req = (0, 0) if op == 0x0001 else (1, 1)
                socket.send_fds(conn, [frame(op, body, caps, req, 7 + n)],
                                [sent.fileno()])
                sent.close()
                msg, fds, _, _ = socket.recv_fds(conn, 65536, 4)
                for fd in fds:
                    os.close(fd)
                if len(msg) < 32:
                    fail(f"unwanted-receipts: {name}: reply {msg!r}")
                magic, _, rop, status, rcaps = struct.unpack("<IHHHH",
                                                             msg[:12])
                if magic != 0x46584250 or rop != op | 0x8000 or \
                        status != 0x0611 or rcaps != 0 or fds:
                    fail(f"unwanted-receipts: {name} (cap_count {caps}, "
                         f"body {len(body)}): reply op {rop:#x} status "
                         f"{status:#x} caps {rcaps} fds {fds}")
                if mine.recv(16) != b"":
                    fail(f"unwanted-receipts: {name}: the descriptor "
                         f"was kept")
                mine.close()
                conn.close()
                n += 1
                print(f"run: {name} (cap_count {caps}, body {len(body)} "
                      f"bytes) with a descriptor: error {status:#06x} "
                      f"(PBX_E_CORE_UNEXPECTED_CAPS), "
                      f"descriptor closed")
    wait_for(lambda: fd_count(st.pid) == base,
             f"unwanted-receipts: powerboxd holds {fd_count(st.pid)} "
             f"descriptors, baseline {base}")
    if not st.alive():
        fail("unwanted-receipts: powerboxd exited")
    lifecycle(st)
    print(f"run: {n} frames with unwanted descriptors refused, each "
          f"descriptor closed; powerboxd back to {base} descriptors and "
          f"serving")


def backpressure(st):
    """(own powerboxd, 2 requests, 2 grants) two job-lifetime requests
    approved and held undelivered fill both pools; a third request is
    refused at BEGIN with the retryable PBX_E_CORE_BUSY (0x0604) and
    nothing held is dropped; once the held decisions are read (approved)
    and the job expired, the same request succeeds."""
    held = []
    for slot in (40, 41):
        c = Client(st, "--job", "31:1", "--lifetime", "job", "--urgency",
                   "routine", "--target", "42:5", "--slot", str(slot),
                   "--then", "hold")
        held.append((c, c.committed()))
    wait_for(lambda: len(slot_rows(st, 40)) == 1 and
             len(slot_rows(st, 41)) == 1 and len(read_rows(st.views)) == 2,
             f"backpressure: not both held requests approved: "
             f"{read_rows(st.installs)} {read_rows(st.views)}")
    rows = (read_rows(st.installs), read_rows(st.views))
    print(f"run: requests {held[0][1]} and {held[1][1]} approved and held "
          f"(decisions unread): the request and grant pools are full")
    argv = st.request_argv("--job", "32:1", "--lifetime", "one-shot",
                           "--urgency", "routine", "--target", "42:5",
                           "--slot", "42", "--then", "consume")
    out = subprocess.run(argv, capture_output=True, text=True, check=False,
                         timeout=60)
    print(out.stdout, end="")
    print(out.stderr, end="", file=sys.stderr)
    if out.returncode == 0 or "request=" in out.stdout or \
            "BEGIN refused" not in out.stderr or \
            f"(0x{0x0604:04x})" not in out.stderr:
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
    print("run: both held decisions read: approved")
    rc, out2 = st.launchd_expire("--control", job="31:1")
    if rc != 0 or out2 != "expire=accepted":
        fail(f"backpressure: EXPIRE: {out2}")
    wait_for(lambda: read_rows(st.installs) == [] and
             read_rows(st.views) == [], "backpressure: rows left")
    rc, kv = st.client("--job", "32:1", "--lifetime", "one-shot",
                       "--urgency", "routine", "--target", "42:5", "--slot",
                       "42", "--then", "consume")
    if rc != 0 or kv.get("outcome") != "approved" or \
            kv.get("consume") != "accepted":
        fail(f"backpressure: the same request after the pools drained: "
             f"{kv}")
    cleaned(st, last_object(st))
    print("run: pools drained (job 31:1 expired): the same request "
          "approved and consumed")


def cpu_seconds(pid):
    """utime + stime of process pid, in seconds."""
    with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wake_backpressure(st):
    """launchd stops reading its wake route (--wake-hold-file) and more
    decisions are made than the route holds: every client still gets its
    APPROVED decision, powerboxd keeps the refused wakes without spinning
    (CPU time over 2 s below 0.2 s), and once launchd reads again every
    wake arrives exactly once."""
    with open("/proc/sys/net/unix/max_dgram_qlen", encoding="utf-8") as f:
        qlen = int(f.read())
    n = qlen + 6
    with open(st.wake_hold, "w", encoding="utf-8"):
        pass
    time.sleep(0.2)  # launchd's poll round with the wake route still in it
    reqs = []
    try:
        for i in range(n):
            rc, kv = st.client("--job", "33:1", "--lifetime", "one-shot",
                               "--urgency", "routine", "--target", "42:5",
                               "--slot", "43", "--then", "consume")
            if rc != 0 or kv.get("outcome") != "approved" or \
                    kv.get("consume") != "accepted":
                fail(f"wake-backpressure: decision {i} while the wake "
                     f"route was full: {kv}")
            reqs.append(kv["request"])
        wait_for(lambda: read_rows(st.installs) == [] and
                 read_rows(st.views) == [], "wake-backpressure: rows left")
        woken = lambda: [l for l in st.peer_log("launchd").splitlines()
                         if "wake request" in l and "job 33.1" in l]
        if woken():
            fail(f"wake-backpressure: launchd read wakes while held: "
                 f"{woken()}")
        print(f"run: {n} requests approved and consumed while launchd left "
              f"its wake route (queue {qlen}) unread")
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
    time.sleep(0.5)
    got = [l.split("wake request ", 1)[1].split()[0] for l in woken()]
    if sorted(got) != sorted(reqs):
        fail(f"wake-backpressure: wakes {got}, decisions {reqs}")
    print(f"run: launchd reading again: all {n} wakes arrived, each "
          f"exactly once")


# Each scenario: its function, whether it prompts on a tmux pane, and the
# `pbx geometry make` arguments of a stack of its own (None: the shared
# stack).
SCENARIOS = {
    "lifecycle": (lifecycle, False, None),
    "expire": (expire, False, None),
    "runtime-reply": (runtime_reply, False, None),
    "direct": (direct, False, None),
    "hangup": (hangup, False, None),
    "lie-scope": (lie_scope, False, None),
    "foreign": (foreign, False, None),
    "prompt": (prompt, True, None),
    "prompt-pending": (prompt_pending, True, None),
    "prompt-cancel": (prompt_cancel, True, None),
    "prompt-timeout": (prompt_timeout, True,
                       ["--deadline-prompt-ms", "3000"]),
    "ttyd-stalled": (ttyd_stalled, False, ["--deadline-ttyd-ms", "1000"]),
    "not-found": (not_found, False, None),
    "user-deny": (user_deny, True, None),
    "cancel-lost-reply": (cancel_lost_reply, False, None),
    "invocation-expiry": (invocation_expiry, False, None),
    "unwanted-receipts": (unwanted_receipts, False, None),
    "backpressure": (backpressure, False,
                     ["--requests", "2", "--grants", "2"]),
    "wake-backpressure": (wake_backpressure, False, None),
    "vfsd-stalled": (vfsd_stalled, False,
                     ["--deadline-vfsd-ms", "1000",
                      "--deadline-scope-ms", "1000"]),
}


class Panes:
    """The run's own tmux server (its socket in WORK_DIR, apart from any
    other run's): one window (pane) per stack that prompts."""

    def __init__(self, work):
        self.started = False
        self.socket = os.path.join(work, "tmux.sock")
        TMUX_SOCKET[:] = [self.socket]

    def new(self):
        """A fresh pane; returns (pane id, its tty)."""
        if shutil.which("tmux") is None:
            fail("the prompt scenarios need tmux, which is not installed")
        if not self.started:
            pane = tmux("new-session", "-d", "-P", "-F", "#{pane_id}", "-s",
                        "pbx", "-x", "120", "-y", "40", "sleep 900").strip()
            self.started = True
        else:
            pane = tmux("new-window", "-d", "-P", "-F", "#{pane_id}", "-t",
                        "pbx", "sleep 900").strip()
        tty = tmux("display", "-p", "-t", pane, "#{pane_tty}").strip()
        print(f"run: ttyd prompts on tmux pane {pane} ({tty})")
        return pane, tty

    def stop(self):
        """Ends the tmux server."""
        if self.started:
            subprocess.run(["tmux", "-S", self.socket, "kill-server"],
                           capture_output=True, check=False)
            if os.path.exists(self.socket):
                os.unlink(self.socket)


def main():
    bin_dir, work = sys.argv[1], os.path.abspath(sys.argv[2])
    names = sys.argv[3:] or ["lifecycle"]
    for n in names:
        if n not in SCENARIOS:
            fail(f"unknown scenario {n}")
    os.makedirs(work, exist_ok=True)
    panes, shared = Panes(work), None
    shared_prompts = any(SCENARIOS[n][1] and SCENARIOS[n][2] is None
                         for n in names)
    try:
        for n in names:
            func, prompts, geometry = SCENARIOS[n]
            print(f"run: --- {n} ---")
            t0 = time.monotonic()
            if geometry is None:
                if shared is None:
                    pane, tty = panes.new() if shared_prompts else \
                        (None, "/dev/null")
                    shared = Stack(bin_dir, work, tty, pane)
                func(shared)
            else:
                pane, tty = panes.new() if prompts else (None, "/dev/null")
                own = Stack(bin_dir, os.path.join(work, n), tty, pane,
                            geometry)
                try:
                    func(own)
                finally:
                    own.stop()
            print(f"run: {n} passed in {time.monotonic() - t0:.1f} s")
        print(f"run: ok: {' '.join(names)}")
    finally:
        if shared is not None:
            shared.stop()
        panes.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
