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

Peer logs go to WORK_DIR/logs/<peer>.log and are printed at the end.
"""
import fcntl
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time

SEALS = 1 | 2 | 4 | 8  # F_SEAL_SEAL | SHRINK | GROW | WRITE
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


def pbx1(bin_dir, work):
    """A sealed memfd holding a fresh PBX1 record."""
    path = os.path.join(work, "pbx1.bin")
    subprocess.run([os.path.join(bin_dir, "pbx"), "geometry", "make",
                    "--transient-slots", "64", "-o", path], check=True)
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
    when no scenario prompts).
    """

    def __init__(self, bin_dir, work, tty="/dev/null"):
        self.bin_dir, self.work = bin_dir, work
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
        for p in (self.scope, self.lie_scope, self.public, self.control, self.views,
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
                  self.control],
                 [wake[1].fileno(), broker[1].fileno()], self.log("launchd")),
        ]
        vfs = [socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)]
        vfs[0].connect(route)
        vfs.append(vfs[0])
        self.pid = exec_powerboxd(self.bin_dir, self.public, [
            pbx1(self.bin_dir, w), sup[1].fileno(), vfs[0].fileno(),
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

    def stop(self):
        """Ends powerboxd and the peers; prints every peer's log."""
        if self.pid:
            os.kill(self.pid, signal.SIGTERM)
            os.waitpid(self.pid, 0)
            self.pid = 0
        for p in self.procs:
            p.terminate()
            p.wait()
        for name, f in sorted(self.logs.items()):
            f.seek(0)
            sys.stderr.write(f.read().decode(errors="replace"))
            f.close()
        self.logs = {}

    def peer_log(self, name):
        """Everything peer name has logged so far."""
        f = self.log(name)
        f.flush()
        with open(f.name, encoding="utf-8", errors="replace") as r:
            return r.read()

    def client(self, *args, public=None, scope=None):
        """Runs pbx-client request with args through launchd's control
        socket (or public); returns (rc, key=value dict)."""
        argv = [os.path.join(self.bin_dir, "pbx-client"), "request",
                "--control", public or self.control, "--scope",
                scope or self.scope,
                "--selector", "docs/readme.txt", "--op", "read", "--class",
                "file", "--job", "11:1", "--session", "7", "--realm", "3",
                "--entry", "bin/cat", "--label", "readme", "--wait-ms",
                "20000"] + list(args)
        out = subprocess.run(argv, capture_output=True, text=True,
                             check=False, timeout=60)
        print(out.stdout, end="")
        print(out.stderr, end="", file=sys.stderr)
        kv = dict(l.split("=", 1) for l in out.stdout.splitlines()
                  if "=" in l)
        return out.returncode, kv

    def launchd_expire(self, via):
        """pbx-launchd expire of job 11:1 via --control or --public."""
        path = self.control if via == "--control" else self.public
        out = subprocess.run([os.path.join(self.bin_dir, "pbx-launchd"),
                              "expire", via, path, "--job", "11:1"],
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
    base = (fd_count(st.pid), fd_count(launchd))
    rc, kv = st.client("--lifetime", "one-shot", "--urgency", "routine",
                       "--target", "42:5", "--slot", "23", "--then",
                       "hang-up")
    if rc != 0 or kv.get("hang_up") != "after-commit" or "request" not in kv:
        fail(f"hangup: the request was not committed: {kv}")
    line = f"hang-up: CANCEL request {kv['request']} "
    wait_for(lambda: line in st.peer_log("launchd"),
             f"launchd never cancelled request {kv['request']}", 10.0)
    said = [l for l in st.peer_log("launchd").splitlines() if line in l][0]
    if not said.endswith("decision cancelled"):
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
    out = subprocess.run(["tmux", "-L", "pbx-run"] + list(args),
                         capture_output=True, text=True, check=False,
                         timeout=10)
    if out.returncode != 0:
        fail(f"tmux {' '.join(args)}: {out.stderr.strip()}")
    return out.stdout


def prompt(st, pane):
    """An exceptional request approved by typing y into the tmux pane."""
    argv = [os.path.join(st.bin_dir, "pbx-client"), "request", "--control",
            st.control, "--scope", st.scope, "--selector", "docs/readme.txt",
            "--op", "read", "--class", "file", "--job", "11:1", "--session",
            "7", "--realm", "3", "--entry", "bin/cat", "--label", "readme",
            "--lifetime", "one-shot", "--urgency", "exceptional", "--target",
            "42:5", "--slot", "22", "--wait-ms", "20000", "--then", "consume"]
    cli = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    want = ["program : bin/cat", 'selector: "docs/readme.txt"']
    wait_for(lambda: all(w in tmux("capture-pane", "-p", "-t", pane)
                         for w in want) and
             "RESOLVE found object" in st.peer_log("vfsd"),
             "the prompt never appeared on the terminal", 10.0)
    obj = last_object(st)
    screen = tmux("capture-pane", "-p", "-t", pane)
    if f"object  : {obj}" not in screen:
        fail(f"the prompt does not show object {obj}:\n{screen}")
    print("run: the terminal shows:\n" + "\n".join(
        "    " + l for l in screen.splitlines() if l.strip()))
    tmux("send-keys", "-t", pane, "y", "Enter")
    out, _ = cli.communicate(timeout=30)
    print(out, end="")
    kv = dict(l.split("=", 1) for l in out.splitlines() if "=" in l)
    if cli.returncode != 0 or kv.get("outcome") != "approved":
        fail(f"prompt: {kv}")
    print("run: approved on the terminal; consumed")
    cleaned(st, obj)


SCENARIOS = {"lifecycle": lifecycle, "expire": expire,
             "runtime-reply": runtime_reply, "direct": direct,
             "hangup": hangup, "lie-scope": lie_scope, "foreign": foreign}


def main():
    bin_dir, work = sys.argv[1], os.path.abspath(sys.argv[2])
    names = sys.argv[3:] or ["lifecycle"]
    for n in names:
        if n not in SCENARIOS and n != "prompt":
            fail(f"unknown scenario {n}")
    tty, pane = "/dev/null", None
    if "prompt" in names:
        if shutil.which("tmux") is None:
            fail("prompt needs tmux, which is not installed")
        subprocess.run(["tmux", "-L", "pbx-run", "kill-server"],
                       capture_output=True, check=False)
        tmux("new-session", "-d", "-s", "pbx", "-x", "120", "-y", "40",
             "sleep 600")
        pane = "pbx:0.0"
        tty = tmux("display", "-p", "-t", pane, "#{pane_tty}").strip()
        print(f"run: ttyd prompts on tmux pane {pane} ({tty})")
    st = Stack(bin_dir, work, tty)
    try:
        for n in names:
            print(f"run: --- {n} ---")
            if n == "prompt":
                prompt(st, pane)
            else:
                SCENARIOS[n](st)
        print(f"run: ok: {' '.join(names)}")
    finally:
        st.stop()
        if pane is not None:
            subprocess.run(["tmux", "-L", "pbx-run", "kill-server"],
                           capture_output=True, check=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
