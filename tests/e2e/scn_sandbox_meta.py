"""e2e scenarios (tests/e2e/run.py) of what a sandboxed program may learn
or hold: sandbox-metadata, sandbox-setattr, sandbox-ipc and
hold-release."""
import os
import socket
import subprocess

from e2e_harness import fail, wait_for
from e2e_jobs import clear_pane, Launched, tmux
from scn_any import broker_prompt, broker_root_file, broker_run


SANDBOX_METADATA_PROG = """
import ctypes, errno, os, sys
# The program names itself pbx-demo (its argv[0], by a re-exec of its
# own command line, and its comm): the entry stays the launcher's.
if len(sys.argv) == 4:
    with open("/proc/self/cmdline", "rb") as f:
        argv = f.read().split(b"\\0")[:-1]
    os.execv("/usr/bin/python3", [b"pbx-demo"] + argv[1:] + [b"renamed"])
ctypes.CDLL(None).prctl(15, b"pbx-demo", 0, 0, 0)
with open("/proc/self/cmdline", "rb") as f:
    print("argv0=" + f.read().split(b"\\0")[0].decode(), flush=True)
with open("/proc/self/comm") as f:
    print("comm=" + f.read().strip(), flush=True)
def attempt(key, fn):
    try:
        print(key + "=ok:" + str(fn()), flush=True)
    except OSError as e:
        print(key + "=" + errno.errorcode.get(e.errno, str(e.errno)),
              flush=True)
def meta(path):
    s = os.stat(path)
    return "%d/%d/%o" % (s.st_size, s.st_mtime_ns, s.st_mode)
def read(path):
    fd = os.open(path, os.O_RDONLY)
    return os.read(fd, 64).decode().strip()
docs, out, link = sys.argv[1:4]
attempt("stat-scope", lambda: meta(os.path.join(docs, "meta.txt")))
attempt("stat-out", lambda: meta(out))
attempt("access-out", lambda: os.access(out, os.R_OK))
attempt("readlink-scope", lambda: os.readlink(link))
attempt("list-scope", lambda: len(os.listdir(docs)))
attempt("list-out", lambda: len(os.listdir(os.path.dirname(out))))
attempt("read-out", lambda: read(out))
attempt("chdir-scope", lambda: os.chdir(docs))
attempt("list-cwd", lambda: len(os.listdir(".")))
attempt("list-proc-cwd", lambda: len(os.listdir("/proc/self/cwd")))
attempt("read-scope", lambda: read(os.path.join(docs, "meta.txt")))
"""


def sandbox_metadata(st):
    """What a sandboxed program (python3, `pbx run --sandbox --scope
    root`) learns of files without a grant: stat of a file of the scope
    and of a file of the user's outside it (mode 0600) gives their exact
    size, modification time and mode; access() says the file outside is
    readable (its mode's answer, not Landlock's); readlink of a symlink
    in the scope gives its target; chdir into the scope works. Listing
    is refused: the scope's directory and the cwd in it (EACCES: the
    broker hands over no directory), the directory outside the scope
    (EACCES: the broker, outside the scope) and the cwd through
    /proc/self/cwd (the broker continues it: EACCES from Landlock, no
    READ_DIR right); reading the file outside is refused (EACCES, no
    prompt) and reading the scope file is brokered: its prompt names it,
    `y` gives exactly its bytes. The program first names itself pbx-demo
    (argv[0] by a re-exec, and comm): the prompt still names the entry
    its launcher chose, python3 (a program cannot choose an entry that
    `pbx up`'s built-in policy lets read routinely)."""
    broker_root_file(st)
    docs = os.path.join(os.path.realpath(st.root), "docs")
    mfile = os.path.join(docs, "meta.txt")
    out = os.path.join(os.path.realpath(st.work), "meta-outside.txt")
    link = os.path.join(docs, "meta-link")
    with open(mfile, "w", encoding="utf-8") as f:
        f.write("the scope file's bytes\n")
    with open(out, "w", encoding="utf-8") as f:
        f.write("a file of the user's, outside the scope\n")
    os.chmod(out, 0o600)
    if not os.path.islink(link):
        os.symlink(out, link)

    def meta(path):
        s = os.stat(path)
        return f"ok:{s.st_size}/{s.st_mtime_ns}/{s.st_mode:o}"
    clear_pane(st)
    job = broker_run(st, ["/usr/bin/python3", "-c", SANDBOX_METADATA_PROG,
                          docs, out, link],
                     os.path.join(st.work, "sandbox-metadata.err"))
    screen = broker_prompt(st, "docs/meta.txt", "python3")
    if mfile[-50:] not in screen:
        fail(f"sandbox-metadata: the prompt does not name {mfile}:\n"
             f"{screen}")
    tmux("send-keys", "-t", st.pane, "y")
    job.wait_line(lambda l: l.startswith("read-scope="), "read-scope=",
                  seconds=20)
    if job.wait(timeout=30) != 0:
        fail(f"sandbox-metadata: python3 exited {job.proc.returncode}")
    kv = job.kv()
    want = {"stat-scope": meta(mfile), "stat-out": meta(out),
            "access-out": "ok:True", "readlink-scope": f"ok:{out}",
            "list-scope": "EACCES", "list-out": "EACCES",
            "read-out": "EACCES", "chdir-scope": "ok:None",
            "list-cwd": "EACCES", "list-proc-cwd": "EACCES",
            "argv0": "pbx-demo", "comm": "pbx-demo",
            "read-scope": "ok:the scope file's bytes"}
    for k, v in want.items():
        if kv.get(k) != v:
            fail(f"sandbox-metadata: {k}={kv.get(k)!r}, want {v!r} ({kv})")
    print("run: sandbox-metadata: " +
          " ".join(f"{k}={kv[k]}" for k in want))


SANDBOX_SETATTR_PROG = """
import errno, os, sys
def attempt(key, fn):
    try:
        print(key + "=ok:" + str(fn()), flush=True)
    except OSError as e:
        print(key + "=" + errno.errorcode.get(e.errno, str(e.errno)),
              flush=True)
for tag, path in (("out", sys.argv[1]), ("scope", sys.argv[2])):
    attempt("chmod-" + tag, lambda: os.chmod(path, 0o666))
    attempt("utime-" + tag, lambda: os.utime(path, (1, 1)))
    attempt("chown-" + tag, lambda: os.chown(path, os.getuid(), os.getgid()))
    attempt("setxattr-" + tag, lambda: os.setxattr(path, "user.pbx", b"x"))
"""


def sandbox_setattr(st):
    """docs/SECURITY.md 1.18. A sandboxed program (python3, `pbx run
    --sandbox --scope root`) tries chmod, utime, chown (to its own ids)
    and setxattr (user.*) of a file of the user's outside the scope
    (mode 0600) and of a file of the scope, none of which Landlock
    mediates: each must be refused (EPERM or EACCES) and each file's
    mode, times and extended attributes must be unchanged."""
    broker_root_file(st)
    scoped = os.path.join(os.path.realpath(st.root), "docs", "setattr.txt")
    out = os.path.join(os.path.realpath(st.work), "setattr-outside.txt")
    for path in (scoped, out):
        with open(path, "w", encoding="utf-8") as f:
            f.write("attributes\n")
        os.chmod(path, 0o600)

    def attrs(path):
        s = os.stat(path)
        return (s.st_mode, s.st_mtime_ns, s.st_atime_ns,
                sorted(os.listxattr(path)))
    before = {p: attrs(p) for p in (scoped, out)}
    job = broker_run(st, ["/usr/bin/python3", "-c", SANDBOX_SETATTR_PROG,
                          out, scoped],
                     os.path.join(st.work, "sandbox-setattr.err"))
    if job.wait(timeout=60) != 0:
        fail(f"sandbox-setattr: python3 exited {job.proc.returncode}")
    kv = job.kv()
    took = {k: v for k, v in kv.items() if v not in ("EPERM", "EACCES")}
    changed = {p: (before[p], attrs(p)) for p in before
               if attrs(p) != before[p]}
    if len(kv) != 8 or took or changed:
        fail(f"sandbox-setattr: not refused: {took}; changed: {changed}")
    print("run: sandbox-setattr: " + " ".join(f"{k}={kv[k]}"
                                             for k in sorted(kv)))


SANDBOX_IPC_PROG = """
import ctypes, errno, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
key, shmid, mq = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3].encode()
def attempt(name, ret, bad):
    e = ctypes.get_errno()
    print(name + "=" + ("ok" if ret != bad else errno.errorcode.get(e, str(e))),
          flush=True)
attempt("shmget", libc.shmget(key, 0, 0), -1)
attempt("shmat", libc.shmat(shmid, None, 0o10000), ctypes.c_void_p(-1).value)
attempt("semget", libc.semget(key, 0, 0), -1)
attempt("msgget", libc.msgget(key, 0, 0), -1)
attempt("mq_open", libc.mq_open(mq, os.O_RDONLY), -1)
"""


def sandbox_ipc(st):
    """docs/SECURITY.md 1.19. System V IPC objects and POSIX message
    queues are named by keys and names, not paths, so Landlock mediates
    none of them. This process makes a shared memory segment, a semaphore
    set and a message queue under one key, and a POSIX message queue,
    each mode 0600. python3 run as a plain process (the control: the
    program can reach them) attaches every one; run with `pbx run
    --sandbox` it gets EPERM for every one."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    key = 0x70627800 + (os.getpid() & 0xff)
    creat = 0o1000 | 0o600
    shmid = libc.shmget(key, 4096, creat)
    semid = libc.semget(key, 1, creat)
    msgid = libc.msgget(key, creat)
    mq = f"/pbx-ipc-{os.getpid()}".encode()
    mqd = libc.mq_open(mq, os.O_RDONLY | os.O_CREAT, 0o600, None)
    if min(shmid, semid, msgid, mqd) < 0:
        fail(f"sandbox-ipc: cannot make the objects (errno "
             f"{ctypes.get_errno()})")
    args = [str(key), str(shmid), mq.decode()]
    try:
        control = subprocess.run(["/usr/bin/python3", "-c", SANDBOX_IPC_PROG]
                                 + args, capture_output=True, text=True,
                                 timeout=60, check=False)
        ckv = dict(l.split("=", 1) for l in control.stdout.splitlines()
                   if "=" in l)
        if len(ckv) != 5 or any(v != "ok" for v in ckv.values()):
            fail(f"sandbox-ipc: the control could not reach them: {ckv} "
                 f"{control.stderr}")
        job = broker_run(st, ["/usr/bin/python3", "-c", SANDBOX_IPC_PROG]
                         + args, os.path.join(st.work, "sandbox-ipc.err"))
        if job.wait(timeout=60) != 0:
            fail(f"sandbox-ipc: python3 exited {job.proc.returncode}")
        kv = job.kv()
        if len(kv) != 5 or any(v != "EPERM" for v in kv.values()):
            fail(f"sandbox-ipc: not refused: {kv}")
        print("run: sandbox-ipc: control " + " ".join(
            f"{k}={ckv[k]}" for k in sorted(ckv)) + "; sandboxed " +
            " ".join(f"{k}={kv[k]}" for k in sorted(kv)))
    finally:
        libc.shmctl(shmid, 0, None)
        libc.semctl(semid, 0, 0)
        libc.msgctl(msgid, 0, None)
        libc.mq_unlink(mq)


HOLD_JOB_PROG = """
import os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
print("pid=" + str(os.getpid()), flush=True)
s.settimeout(30)
try:
    s.sendall(b"RELEASE 1\\n")
    closed = s.recv(16) == b""
except (BrokenPipeError, ConnectionResetError):
    closed = True
except TimeoutError:
    closed = False
print("closed=" + str(closed), flush=True)
"""


def hold_release(st):
    """What DIR/hold.sock admits (docs/SECURITY.md 6, "The hold
    socket"). A launched job (python3 under `pbx run`, not sandboxed, so
    that it may make a socket) that connects is refused: launchd logs
    the refusal naming its pid and closes the connection. Then, while a
    brokered open's prompt shows (every job's output held), this process,
    a same-user process outside launchd's tree, connects: it replaces
    ttyd as the subscriber and the hold ends with ttyd's subscription
    (launchd logs "a newer subscriber came (hold released)"), so a job's
    output would draw over the prompt."""
    broker_root_file(st)
    launchd_log = lambda: st.peer_log("launchd")
    job = Launched(st, [os.path.join(st.bin_dir, "pbx"), "--dir", st.work,
                        "run", "--quiet", "--", "/usr/bin/python3", "-c",
                        HOLD_JOB_PROG, st.hold], stdin=subprocess.DEVNULL)
    pid = job.wait_key("pid", seconds=20)
    if job.wait_key("closed", seconds=40) != "True" or \
            job.wait(timeout=30) != 0:
        fail(f"hold-release: the job's connection: {job.kv()}")
    want = f"hold subscriber refused: pid {pid} is a job's or unknown"
    wait_for(lambda: want in launchd_log(),
             f"hold-release: launchd never logged '{want}'", 20)
    print(f"run: hold-release: a launched job (pid {pid}) refused: "
          f"launchd logged '{want}'")
    mfile = os.path.join(os.path.realpath(st.root), "docs", "hold.txt")
    with open(mfile, "w", encoding="utf-8") as f:
        f.write("held\n")
    clear_pane(st)
    seen = len(launchd_log())
    job = broker_run(st, ["/bin/cat", mfile],
                     os.path.join(st.work, "hold-release.err"))
    broker_prompt(st, "docs/hold.txt", "cat")
    # The prompt shows only once launchd answered ttyd's HOLD: the hold
    # is in force now.
    wait_for(lambda: "ttyd hold subscriber pid" in launchd_log(),
             "hold-release: ttyd never subscribed", 20)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.connect(st.hold)
        want = ("ttyd hold subscription ended: a newer subscriber came "
                "(hold released)")
        wait_for(lambda: want in launchd_log()[seen:],
                 f"hold-release: launchd never logged '{want}'", 20)
        mine = f"ttyd hold subscriber pid {os.getpid()}"
        wait_for(lambda: mine in launchd_log()[seen:],
                 f"hold-release: launchd never logged '{mine}'", 20)
    tmux("send-keys", "-t", st.pane, "n")
    if job.wait(timeout=30) != 1:
        fail(f"hold-release: cat exited {job.proc.returncode}")
    print(f"run: hold-release: while the prompt showed, this process (pid "
          f"{os.getpid()}, not a job) replaced ttyd at hold.sock: launchd "
          f"logged '{want}'")
