"""Launched jobs and tmux panes of the e2e run (tests/e2e/run.py): the
tmux helpers a prompting scenario reads and types with, Launched and its
kinds (Client, Shell, Program), the wire frames a Program speaks, the
program run.py --program runs, and Panes (the run's own tmux server)."""
import hashlib
import os
import shutil
import shlex
import socket
import struct
import subprocess
import sys
import termios
import threading
import time

from e2e_harness import (fail, OP_BEGIN, OP_CANCEL, OP_DECISION, OP_SELECTOR,
                         OUTCOMES, REPLY_BIT, RUN_PY, SLOW, TMUX_SOCKET,
                         wait_for)


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


class Launched:
    """A launched job (argv: its `pbx-launchd run` command line) running
    in the background, in the stack's process group: its stdout lines are
    collected as they come, with the time each arrived. stdin is a pipe
    (write() feeds it) unless stdin gives a descriptor (a scope)."""

    def __init__(self, st, argv, stdin=None, stderr=None):
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE if stdin is None else stdin,
            stdout=subprocess.PIPE, text=True, stderr=stderr,
            process_group=st.pgid)
        self.lines = []
        self.times = []
        self.cv = threading.Condition()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            print(line, end="")
            with self.cv:
                self.lines.append(line.rstrip("\n"))
                self.times.append(time.monotonic())
                self.cv.notify_all()
        with self.cv:
            self.lines.append(None)
            self.times.append(time.monotonic())
            self.cv.notify_all()

    def kv(self, start=0, end=None):
        """The key=value lines printed (from line start to end) so far
        (the last of a key wins)."""
        with self.cv:
            return dict(l.split("=", 1) for l in self.lines[start:end]
                        if l is not None and "=" in l)

    def wait_line(self, pred, what, seconds=10.0, start=0):
        """Waits until a line from index start on satisfies pred; returns
        its index."""
        deadline = time.monotonic() + seconds * SLOW
        with self.cv:
            while True:
                for i in range(start, len(self.lines)):
                    if self.lines[i] is not None and pred(self.lines[i]):
                        return i
                left = deadline - time.monotonic()
                if None in self.lines[start:] or left <= 0:
                    fail(f"the launched job never printed {what} "
                         f"({self.lines[start:]})")
                self.cv.wait(left)

    def wait_key(self, key, seconds=10.0, start=0):
        """Waits until key= was printed; returns its value."""
        i = self.wait_line(lambda l: l.startswith(key + "="), key + "=",
                           seconds, start)
        with self.cv:
            return self.lines[i].split("=", 1)[1]

    def when(self, key):
        """When the first key= line arrived (monotonic seconds)."""
        with self.cv:
            for l, t in zip(self.lines, self.times):
                if l is not None and l.startswith(key + "="):
                    return t
        fail(f"no {key}= line")
        return 0.0

    def write(self, text):
        """Writes text to the job's standard input."""
        self.proc.stdin.write(text)
        self.proc.stdin.flush()

    def wait(self, timeout):
        """Waits (timeout seconds) for the launcher's exit, then (bounded)
        for the reader to reach the end of its output, so every line the
        job printed is in self.lines when this returns; returns the exit
        status. A bare proc.wait() can return while the reader thread
        still holds the last lines (sandbox failed so: cat's bytes were on
        the pipe, not yet in lines)."""
        rc = self.proc.wait(timeout=timeout)
        deadline = time.monotonic() + 10.0 * SLOW
        with self.cv:
            while None not in self.lines:
                left = deadline - time.monotonic()
                if left <= 0:
                    fail("the launched job's output never ended after its "
                         "exit")
                self.cv.wait(left)
        return rc

    def running(self):
        """True while the launcher (and so the job) has not exited."""
        return self.proc.poll() is None

    def finish(self, seconds=30.0):
        """Closes the job's stdin, waits for its exit; returns (rc,
        key=value dict)."""
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        except BrokenPipeError:
            pass
        try:
            rc = self.wait(timeout=seconds * SLOW)
        except subprocess.TimeoutExpired:
            fail(f"the launched job did not end within {seconds:.0f} s "
                 f"({self.kv()})")
        self.reader.join(timeout=5)
        return rc, self.kv()


class Client(Launched):
    """A pbx-client request launched as a job (see Stack.request_argv)
    running in the background; go() writes the line on its stdin that
    `--then hold` and `--then cancel` wait for. With scope_fd the scope is
    the job's stdin instead (then nothing can be written)."""

    def __init__(self, st, *args, scope_fd=None, stderr=None):
        Launched.__init__(self, st, st.request_argv(*args,
                                                    scope_fd=scope_fd),
                          stdin=scope_fd, stderr=stderr)

    def committed(self):
        """The request id, once printed. pbx-client's stdout is a pipe,
        flushed first after COMMIT was answered, so the request is then
        committed; --then hold and --then cancel read their stdin line
        only after COMMIT in any case."""
        return self.wait_key("request")

    def go(self):
        """Lets a held client go on."""
        self.write("\n")


class Shell(Launched):
    """A launched job whose program is a shell running, one at a time, the
    command lines written to it (each with stdin from /dev/null), so that
    the job, and with it its grants, outlives each client it runs; every
    client talks over the job's one connection, in turn."""

    LOOP = 'while IFS= read -r l; do eval "$l"; echo "done=$?"; done'

    def __init__(self, st, job, entry="bin/cat", stderr=None, session=7):
        self.st = st
        Launched.__init__(self, st, st.launch_argv(
            ["/bin/sh", "-c", self.LOOP], job, entry, session),
            stderr=stderr)

    def start(self, line):
        """Sends one shell command line; returns the index its output
        starts at."""
        with self.cv:
            mark = len(self.lines)
        self.write(line + " </dev/null\n")
        return mark

    def done(self, mark, seconds=60.0):
        """Waits for the command started at mark; returns (rc, key=value
        dict of its output)."""
        i = self.wait_line(lambda l: l.startswith("done="), "done=",
                           seconds, mark)
        with self.cv:
            rc = int(self.lines[i].split("=", 1)[1])
        return rc, self.kv(mark, i)

    def sh(self, line, seconds=60.0):
        """Runs one shell command line; returns (rc, key=value dict)."""
        return self.done(self.start(line), seconds)

    def run(self, argv, stderr=None, seconds=60.0):
        """Runs argv (stderr to file stderr, if given); returns (rc,
        key=value dict)."""
        line = shlex.join(argv)
        if stderr is not None:
            line += " 2>" + shlex.quote(stderr)
        return self.sh(line, seconds)

    def request(self, *args, stderr=None):
        """One pbx-client request in this job (see Stack.client_argv)."""
        return self.run(self.st.client_argv(*args), stderr=stderr)

    def target(self):
        """The job's staged process (PBX_TARGET), '' when it has none."""
        return self.sh('echo "target=$PBX_TARGET"')[1].get("target", "")

    def close(self, seconds=30.0):
        """Ends the shell (end of its input), and so the job; returns the
        launcher's exit status."""
        rc, _ = self.finish(seconds)
        return rc


class Program(Launched):
    """A launched job whose program is this file's raw program
    (job_program): it speaks ipc v2 frames itself on its job connection,
    one command line at a time (see job_program)."""

    def __init__(self, st, job, entry):
        Launched.__init__(self, st, st.launch_argv(
            [sys.executable, RUN_PY, "--program"], job,
            entry))

    def cmd(self, line, seconds=30.0):
        """Runs one command; returns its output lines (without done)."""
        with self.cv:
            mark = len(self.lines)
        self.write(line + "\n")
        i = self.wait_line(lambda l: l == "done", "done", seconds, mark)
        with self.cv:
            return self.lines[mark:i]


def begin_body(job, entry, selector, mode=2):
    """A BEGIN body: a routine one-shot read of a file, session 7 realm 3,
    by job (id, gen) with program entry (bytes) for selector (bytes), in
    runtime-reply mode (no target) unless mode says otherwise."""
    fixed = bytearray(96)
    struct.pack_into("<QQQIIIIIHHBBB", fixed, 0, job[0], 7, 0, job[1], 3, 0,
                     0, len(selector), 1, 1, 1, mode, 1)
    struct.pack_into("<HH", fixed, 52, len(entry), 0)
    fixed[56:88] = hashlib.sha256(selector).digest()
    return bytes(fixed) + entry


def job_program():
    """run.py --program: the raw program a Program launches. It reads
    commands on stdin and prints key=value lines, then `done`:
      begin N [partial]  N BEGINs (runtime-reply, of its own job and
                         entry, docs/readme.txt; with partial a 600-byte
                         selector of which only the first chunk is sent):
                         begun=I.G or refused=0xSTATUS each
      cancel I.G         the exact CANCEL: cancel=accepted|0xSTATUS
      decision I.G       DECISION: decision=I.G OUTCOME (or 0xSTATUS)
    Each call carries its own seq; its reply must echo it and the op."""
    conn = socket.socket(fileno=int(os.environ["PBX_LAUNCHD_FD"]))
    conn.settimeout(60)
    jid, jgen = (int(x) for x in os.environ["PBX_JOB"].split(":"))
    entry = os.environ["PBX_ENTRY"].encode()
    seq = [0]

    def call(op, body=b"", req=(0, 0)):
        seq[0] += 1
        conn.send(frame(op, body, 0, req, seq[0]))
        msg, fds, _, _ = socket.recv_fds(conn, 65536, 4)
        for fd in fds:
            os.close(fd)
        if len(msg) < 32:
            raise SystemExit(f"program: short reply {msg!r}")
        _, _, rop, status, _, idx, gen, _, rseq, _ = \
            struct.unpack("<IHHHHIIIII", msg[:32])
        if rop != op | REPLY_BIT or rseq != seq[0]:
            raise SystemExit(f"program: reply op {rop:#x} seq {rseq} to op "
                             f"{op:#x} seq {seq[0]}")
        return status, f"{idx}.{gen}", msg[32:]

    def pair(text):
        return tuple(int(x) for x in text.split("."))
    for line in sys.stdin:
        w = line.split()
        if w and w[0] == "begin":
            sel = b"docs/readme.txt"
            if "partial" in w:
                sel = b"docs/" + b"x" * 595
            for _ in range(int(w[1])):
                st, rid, _ = call(OP_BEGIN, begin_body((jid, jgen), entry,
                                                       sel))
                print(f"begun={rid}" if st == 0 else f"refused={st:#06x}")
                if st == 0 and "partial" in w:
                    st, _, _ = call(OP_SELECTOR, struct.pack(
                        "<II", 0, 512) + sel[:512], pair(rid))
                    print(f"chunk={rid} {st:#06x}")
        elif w and w[0] == "cancel":
            st, _, _ = call(OP_CANCEL, bytes(24), pair(w[1]))
            print(f"cancel={'accepted' if st == 0 else f'{st:#06x}'}")
        elif w and w[0] == "decision":
            st, rid, body = call(OP_DECISION, b"", pair(w[1]))
            said = OUTCOMES.get(body[0], "?") if st == 0 and body else \
                f"{st:#06x}"
            print(f"decision={rid} {said}")
        print("done", flush=True)
    return 0


def frame(op, body=b"", caps=0, req=(0, 0), seq=1):
    """A v2 frame: the 32-byte header, then body."""
    return struct.pack("<IHHHHIIIII", 0x46584250, 2, op, 0, caps, req[0],
                       req[1], len(body), seq, 0) + body


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
