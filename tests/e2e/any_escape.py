"""The program of the e2e scenario any-escape (run.py), run by python3
inside `pbx run --sandbox --scope root`: tries each way out of the exact
grant and prints one key=value line per try.

argv: ROOT SECRET MOUNT. ROOT/docs/esc-a.txt is approved (read) on the
pane; ROOT/docs/esc-b.txt is the open whose path buffer a second thread
rewrites (to SECRET) while its prompt shows, once a line comes on stdin;
ROOT/docs/esc-link points at SECRET; MOUNT is vfsd's FUSE mount;
ROOT/docs/x is a directory. Before each open that prompts, the program
prints gate=NAME and waits for a line on stdin, so that the scenario can
blank the pane first and find exactly that open's prompt.
"""
import ctypes
import errno
import os
import sys
import threading


def name(e):
    """The errno name of OSError e."""
    return errno.errorcode.get(e.errno, str(e.errno))


def attempt(key, fn):
    """Prints key=ok:RESULT or key=ERRNO for fn()."""
    try:
        r = fn()
        print(f"{key}=ok:{r}", flush=True)
    except OSError as e:
        print(f"{key}={name(e)}", flush=True)


def gate(key):
    """Prints gate=key and waits for the scenario's line on stdin."""
    print(f"gate={key}", flush=True)
    sys.stdin.readline()


def read_open(path, dir_fd=None):
    """Opens path read-only (relative to dir_fd) and returns its bytes."""
    fd = os.open(path, os.O_RDONLY, dir_fd=dir_fd)
    try:
        return os.read(fd, 64).decode().strip()
    finally:
        os.close(fd)


def directories(docs, secret):
    """The directory cases: a directory of the scope is never handed over
    (O_DIRECTORY or O_PATH by its path, or "." after a chdir); chdir into
    the scope works (Landlock does not mediate it) and a relative `..`
    out of it is refused; /proc/self/cwd and /proc/thread-self/cwd lead
    nowhere but Landlock's refusal; an O_PATH directory descriptor of the
    scope, which /proc/self/cwd gives (Landlock does not mediate O_PATH),
    used with openat and `..`, gets nothing outside the scope, and inside
    it only the object its prompt named; a relative open with `..` from
    a cwd in the scope asks for the object it resolves to."""
    out = os.path.relpath(secret, docs)
    attempt("dir-opath", lambda: os.open(docs, os.O_PATH | os.O_DIRECTORY))
    attempt("chdir", lambda: os.chdir(docs))
    attempt("cwd-dir", lambda: os.open(".", os.O_RDONLY | os.O_DIRECTORY))
    attempt("cwd-dotdot", lambda: read_open(out))
    attempt("cwd-x-dotdot", lambda: read_open(os.path.join("x", "..", out)))
    attempt("proc-cwd-dir",
            lambda: os.open("/proc/self/cwd", os.O_RDONLY | os.O_DIRECTORY))
    attempt("proc-cwd-file", lambda: read_open("/proc/self/cwd/esc-a.txt"))
    attempt("proc-tself-file",
            lambda: read_open("/proc/thread-self/cwd/esc-a.txt"))
    attempt("proc-cwd-out", lambda: read_open("/proc/self/cwd/" + out))
    attempt("proc-cwd-opath-read", lambda: os.read(
        os.open("/proc/self/cwd/esc-a.txt", os.O_PATH), 1))
    dfd = os.open("/proc/self/cwd", os.O_PATH | os.O_DIRECTORY)
    print(f"dfd=ok:{'dir' if os.path.isdir(f'/proc/self/fd/{dfd}') else '?'}",
          flush=True)
    # The cwd moves on to docs/x, so that a path resolved against the cwd
    # instead of the descriptor names another object (docs/x/x is
    # missing).
    os.chdir("x")
    attempt("dfd-dotdot", lambda: read_open(out, dir_fd=dfd))
    attempt("dfd-x-dotdot",
            lambda: read_open(os.path.join("x", "..", out), dir_fd=dfd))
    gate("dfd-inside")
    attempt("dfd-inside", lambda: read_open("x/../esc-a.txt", dir_fd=dfd))
    gate("cwd-inside")
    attempt("cwd-inside", lambda: read_open("../esc-b.txt"))
    os.close(dfd)


def main():
    root, secret, mount = sys.argv[1:4]
    docs = os.path.join(root, "docs")
    a = os.path.join(docs, "esc-a.txt")
    fd = os.open(a, os.O_RDONLY)
    print(f"granted={os.read(fd, 64).decode().strip()}", flush=True)
    attempt("reopen-write",
            lambda: os.open(f"/proc/self/fd/{fd}", os.O_WRONLY))
    attempt("reopen-read",
            lambda: os.open(f"/proc/self/fd/{fd}", os.O_RDONLY))
    attempt("dir", lambda: os.open(docs, os.O_RDONLY | os.O_DIRECTORY))
    attempt("dotdot", lambda: os.open("../../secret", os.O_RDONLY,
                                      dir_fd=fd))
    attempt("dotdot-scope", lambda: os.open(
        os.path.join(docs, "..", "..", os.path.basename(secret)),
        os.O_RDONLY))
    attempt("symlink", lambda: os.open(os.path.join(docs, "esc-link"),
                                       os.O_RDONLY))
    attempt("o-path", lambda: os.open(a, os.O_PATH))
    attempt("hardlink", lambda: os.link(a, os.path.join(docs, "esc-hard")))
    attempt("rename", lambda: os.rename(a, os.path.join(docs, "esc-moved")))
    attempt("write-grant", lambda: os.write(fd, b"x"))
    attempt("mount-list", lambda: len(os.listdir(mount)))
    # The granted descriptor's real entry in the mount (not a guessed
    # name, which Landlock alone would refuse): the broker refuses it.
    entry = os.readlink(f"/proc/self/fd/{fd}")
    print(f"mount-entry={entry}", flush=True)
    attempt("mount-open", lambda: os.open(entry, os.O_RDONLY))
    directories(docs, secret)
    libc = ctypes.CDLL(None, use_errno=True)
    buf = ctypes.create_string_buffer(4096)
    buf.value = os.path.join(docs, "esc-b.txt").encode()
    got = {}

    def opener():
        got["fd"] = libc.open(buf, os.O_RDONLY)
        got["errno"] = ctypes.get_errno()

    gate("race")
    t = threading.Thread(target=opener)
    t.start()
    print("racing=1", flush=True)
    sys.stdin.readline()
    buf.value = secret.encode()
    print("rewritten=1", flush=True)
    t.join(60)
    if got.get("fd", -1) >= 0:
        data = os.read(got["fd"], 64).decode().strip()
        print(f"race=ok:{data}", flush=True)
    else:
        print(f"race={errno.errorcode.get(got.get('errno', 0), '?')}",
              flush=True)
    print("done=1", flush=True)


main()
