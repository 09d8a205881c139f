"""The program of the e2e scenario any-escape (run.py), run by python3
inside `pbx run --sandbox --scope root`: tries each way out of the exact
grant and prints one key=value line per try.

argv: ROOT SECRET MOUNT. ROOT/docs/esc-a.txt is approved (read) on the
pane; ROOT/docs/esc-b.txt is the open whose path buffer a second thread
rewrites (to SECRET) while its prompt shows, once a line comes on stdin;
ROOT/docs/esc-link points at SECRET; MOUNT is vfsd's FUSE mount.
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
    attempt("mount-open", lambda: os.open(os.path.join(mount, "x"),
                                          os.O_RDONLY))
    libc = ctypes.CDLL(None, use_errno=True)
    buf = ctypes.create_string_buffer(4096)
    buf.value = os.path.join(docs, "esc-b.txt").encode()
    got = {}

    def opener():
        got["fd"] = libc.open(buf, os.O_RDONLY)
        got["errno"] = ctypes.get_errno()

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
