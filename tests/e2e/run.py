#!/usr/bin/env python3
"""make run: powerboxd with the reference peers, one request to a decision.

Usage: run.py BIN_DIR WORK_DIR

Plays the supervisor of docs/HOST.md: writes a PBX1 record with
`pbx geometry make`, seals it into a memfd, starts pbx-vfsd, pbx-ttyd,
pbx-procd and pbx-launchd on socketpairs and waits for each readiness
line, execs the freestanding powerboxd with fds 3..8 exactly as
capabi/pbx_capabi.h lays them out (9 left empty), waits for its typed
readiness report, then runs pbx-client for one routine one-shot READ of
a file to its decision and, on the same connection (the core accepts
CONSUME only from the caller that began the request), consumes the grant.
Consumption starts the cleanup chain: procd's revocation handle deleted,
the REMOVE row reconciled with ttyd, the object retired at vfsd; run.py
waits for those peer log lines. Everything printed is what the processes
said. Exits 0 only when the decision was APPROVED and the chain finished.
"""
import fcntl
import os
import signal
import socket
import struct
import subprocess
import sys
import time

SEALS = 1 | 2 | 4 | 8  # F_SEAL_SEAL | SHRINK | GROW | WRITE
F_ADD_SEALS = 1033


def peer(argv, keep):
    """Starts one peer with the fds in keep and waits for `ready`."""
    r, w = os.pipe()
    proc = subprocess.Popen(argv + ["--ready-fd", str(w)],
                            pass_fds=keep + [w])
    os.close(w)
    with os.fdopen(r) as f:
        line = f.readline().strip()
    print(f"run: {os.path.basename(argv[0])} pid {proc.pid}: {line}")
    if line != "ready":
        raise SystemExit(f"run: {argv[0]} did not become ready")
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


def start_powerboxd(bin_dir, public, fds):
    """Forks and execs powerboxd with fds[i] at slot 3 + i."""
    pid = os.fork()
    if pid == 0:
        high = [os.dup(fd) for fd in fds]
        for i, fd in enumerate(high):
            os.dup2(fd, 3 + i, inheritable=True)
        os.closerange(3 + len(fds), 4096)
        os.execv(os.path.join(bin_dir, "powerboxd"), ["powerboxd", public])
    return pid


def pairs(n, kind):
    """n socketpairs of kind."""
    return [socket.socketpair(socket.AF_UNIX, kind) for _ in range(n)]


def main():
    bin_dir, work = sys.argv[1], os.path.abspath(sys.argv[2])
    os.makedirs(os.path.join(work, "root", "docs"), exist_ok=True)
    with open(os.path.join(work, "root", "docs", "readme.txt"), "w") as f:
        f.write("hello from vfsd\n")
    with open(os.path.join(work, "policy"), "w") as f:
        f.write("* * read file routine allow\n")
    scope = os.path.join(work, "scope.sock")
    public = os.path.join(work, "public.sock")
    for p in (scope, public):
        if os.path.exists(p):
            os.unlink(p)
    sup = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    vfs, tty, proc = pairs(3, socket.SOCK_SEQPACKET)
    wake = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    b = lambda n: os.path.join(bin_dir, "pbx-" + n)
    peers = [
        peer([b("vfsd"), "--root", os.path.join(work, "root"), "--scope",
              scope, "--route-fd", str(vfs[1].fileno())], [vfs[1].fileno()]),
        peer([b("ttyd"), "--policy", os.path.join(work, "policy"), "--tty",
              "/dev/null", "--view-file", os.path.join(work, "views"),
              "--route-fd", str(tty[1].fileno())],
             [tty[1].fileno()]),
        peer([b("procd"), "--stage", "42:5", "--state-file",
              os.path.join(work, "installs"), "--route-fd",
              str(proc[1].fileno())], [proc[1].fileno()]),
    ]
    peers.append(subprocess.Popen([b("launchd"), "serve", "--wake-fd",
                                   str(wake[1].fileno())],
                                  pass_fds=[wake[1].fileno()]))
    pid = start_powerboxd(bin_dir, public, [
        pbx1(bin_dir, work), sup[1].fileno(), vfs[0].fileno(),
        tty[0].fileno(), proc[0].fileno(), wake[0].fileno()])
    print(f"run: powerboxd pid {pid} on {public}")
    sup[0].settimeout(5)
    rep = sup[0].recv(64)
    magic, ver, kind, slot, first, count, _, arena = \
        struct.unpack("<IHHIIIIQ", rep)
    print(f"run: readiness: magic {magic:#x} version {ver} kind {kind} "
          f"public slot {slot} transients {first}..{first + count - 1} "
          f"arena {arena} bytes")
    ok = client(bin_dir, public, scope) and cleaned(work)
    os.kill(pid, signal.SIGTERM)
    os.waitpid(pid, 0)
    for p in peers:
        p.terminate()
        p.wait()
    return 0 if ok else 1


def client(bin_dir, public, scope):
    """One routine request to a decision."""
    cli = os.path.join(bin_dir, "pbx-client")
    out = subprocess.run(
        [cli, "request", "--public", public, "--scope", scope, "--selector",
         "docs/readme.txt", "--op", "read", "--class", "file", "--lifetime",
         "one-shot", "--urgency", "routine", "--job", "11:1", "--session",
         "7", "--realm", "3", "--entry", "bin/cat", "--label", "readme",
         "--target", "42:5", "--slot", "20", "--wait-ms", "5000",
         "--then", "consume"],
        capture_output=True, text=True, check=False)
    print(out.stdout, end="")
    print(out.stderr, end="", file=sys.stderr)
    kv = dict(l.split("=", 1) for l in out.stdout.splitlines() if "=" in l)
    if kv.get("outcome") != "approved":
        print(f"run: decision {kv.get('outcome')}")
        return False
    print(f"run: decision approved: grant {kv.get('grant')} "
          f"installed at slot {kv.get('slot')}")
    if kv.get("consume") != "accepted":
        print("run: consumption was not accepted")
        return False
    print("run: grant consumed; powerboxd now revokes, removes and retires it")
    return True


def cleaned(work):
    """Waits (bounded) until ttyd lists no active row and procd no install.

    Both files are rewritten by the peers on every change, so empty files
    after a consumed grant show that the revocation handle was deleted
    (procd dropped the install) and the REMOVE row was reconciled.
    """
    views = os.path.join(work, "views")
    installs = os.path.join(work, "installs")
    for _ in range(60):
        rows = [read_rows(views), read_rows(installs)]
        if rows == [[], []]:
            print("run: cleanup done: procd holds no install, ttyd shows no "
                  "active grant")
            return True
        time.sleep(0.05)
    print(f"run: cleanup incomplete: views {rows[0]} installs {rows[1]}")
    return False


def read_rows(path):
    """Returns the non-empty lines of path ([] when it does not exist)."""
    try:
        with open(path, encoding="utf-8") as f:
            return [l for l in f.read().splitlines() if l.strip()]
    except FileNotFoundError:
        return []


if __name__ == "__main__":
    sys.exit(main())
