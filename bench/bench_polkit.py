#!/usr/bin/env python3
"""polkit's CheckAuthorization on a private system bus (docs/BENCH.md).

Usage: bench_polkit.py WORK_DIR N ROUNDS

Starts a dbus-daemon of its own (a system-type bus listening on
WORK_DIR/bus, nothing else on it) and Debian's polkitd on that bus
(DBUS_SYSTEM_BUS_ADDRESS), starts an unprivileged subject (`sleep` as
uid 65534 under setpriv), then times ROUNDS rounds of N
CheckAuthorization calls for that subject (action
org.freedesktop.hostname1.set-hostname, no user interaction) over one
connection, and prints one line:

  polkit calls=N rounds=R median_ns=M authorized=0 challenge=C

median_ns is the median over the rounds of each round's mean call time.
The D-Bus wire format (authentication, marshalling of the call and the
reply's header) is written here from the D-Bus specification, so no
binding library is needed. Where polkitd, dbus-daemon or setpriv is
missing it prints `polkit missing=WHAT` and exits 0: the row says why it
is absent rather than vanishing.
"""
import os
import shutil
import socket
import struct
import subprocess
import sys
import time

POLKITD = "/usr/lib/polkit-1/polkitd"
ACTION = "org.freedesktop.hostname1.set-hostname"
BUS_CONF = """<!DOCTYPE busconfig PUBLIC
 "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path={path}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_destination="*"/>
    <allow receive_sender="*"/>
  </policy>
</busconfig>
"""


class Writer:
    """Little-endian D-Bus marshalling with alignment from the message
    start (the body starts 8-aligned, so offsets within it suffice)."""

    def __init__(self):
        self.buf = bytearray()

    def pad(self, n):
        """Zero bytes up to the next multiple of n."""
        while len(self.buf) % n:
            self.buf.append(0)

    def u8(self, v):
        self.buf.append(v)

    def u32(self, v):
        self.pad(4)
        self.buf += struct.pack("<I", v)

    def u64(self, v):
        self.pad(8)
        self.buf += struct.pack("<Q", v)

    def string(self, s):
        b = s.encode()
        self.u32(len(b))
        self.buf += b + b"\0"

    def sig(self, s):
        b = s.encode()
        self.u8(len(b))
        self.buf += b + b"\0"

    def array(self, align, fill):
        """An array whose elements fill() writes; its length patched."""
        self.u32(0)
        at = len(self.buf) - 4
        self.pad(align)
        start = len(self.buf)
        fill()
        struct.pack_into("<I", self.buf, at, len(self.buf) - start)


def message(serial, path, iface, member, dest, sig, body):
    """A METHOD_CALL message with its header fields and body bytes."""
    fields = [(1, "o", path), (2, "s", iface), (3, "s", member),
              (6, "s", dest)] + ([(8, "g", sig)] if sig else [])
    w = Writer()
    w.buf += b"l\x01\x00\x01" + struct.pack("<II", len(body), serial)

    def put_fields():
        for code, t, val in fields:
            w.pad(8)
            w.u8(code)
            w.sig(t)
            if t == "g":
                w.sig(val)
            else:
                w.string(val)
    w.array(8, put_fields)
    w.pad(8)
    return bytes(w.buf) + body


def check_body(pid, start_time):
    """CheckAuthorization's body: (sa{sv})sa{ss}us."""
    w = Writer()
    w.string("unix-process")

    def details():
        w.pad(8)
        w.string("pid")
        w.sig("u")
        w.u32(pid)
        w.pad(8)
        w.string("start-time")
        w.sig("t")
        w.u64(start_time)
    w.array(8, details)
    w.string(ACTION)
    w.array(8, lambda: None)
    w.u32(0)
    w.string("")
    return bytes(w.buf)


def recv_exact(s, n):
    """Exactly n bytes from s."""
    out = bytearray()
    while len(out) < n:
        chunk = s.recv(n - len(out))
        if not chunk:
            raise OSError("bus closed the connection")
        out += chunk
    return bytes(out)


def read_message(s):
    """(type, body) of the next message on s."""
    head = recv_exact(s, 16)
    body_len, fields_len = struct.unpack_from("<I", head, 4)[0], \
        struct.unpack_from("<I", head, 12)[0]
    rest = (fields_len + 7) // 8 * 8
    tail = recv_exact(s, rest + body_len)
    return head[1], tail[rest:]


def call(s, serial, *args):
    """Sends one call and returns the body of its reply (signals, such as
    NameAcquired, are skipped; an ERROR reply raises)."""
    s.sendall(message(serial, *args))
    for _ in range(64):
        kind, body = read_message(s)
        if kind == 2:
            return body
        if kind == 3:
            raise OSError(f"D-Bus error reply: {body[:200]!r}")
    raise OSError("no reply among 64 messages")


def connect(path):
    """An authenticated connection to the bus at path, after Hello."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    s.sendall(b"\0AUTH EXTERNAL " + str(os.getuid()).encode().hex().encode()
              + b"\r\n")
    line = s.recv(512)
    if not line.startswith(b"OK"):
        raise OSError(f"bus refused authentication: {line!r}")
    s.sendall(b"BEGIN\r\n")
    call(s, 1, "/org/freedesktop/DBus", "org.freedesktop.DBus", "Hello",
         "org.freedesktop.DBus", "", b"")
    return s


def start_time(pid):
    """Field 22 of /proc/PID/stat: the process's start time in ticks."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
        return int(f.read().rsplit(")", 1)[1].split()[19])


def wait_for_path(path, seconds):
    """Whether path appears within seconds (polled every 10 ms)."""
    for _ in range(int(seconds * 100)):
        if os.path.exists(path):
            return True
        time.sleep(0.01)
    return False


def first_call(s, body, seconds):
    """The first CheckAuthorization reply, retried (at most seconds)
    until polkitd owns its name on the bus."""
    err = None
    for i in range(int(seconds * 20)):
        try:
            return call(s, 100 + i, *ARGS, body)
        except OSError as e:
            err = e
            time.sleep(0.05)
    raise OSError(f"polkitd never answered: {err}")


ARGS = ("/org/freedesktop/PolicyKit1/Authority",
        "org.freedesktop.PolicyKit1.Authority", "CheckAuthorization",
        "org.freedesktop.PolicyKit1", "(sa{sv})sa{ss}us")


def measure(s, body, n, rounds):
    """Each round's mean ns per call, and the last reply's body."""
    means, reply, serial = [], b"", 1000
    for _ in range(rounds):
        t0 = time.perf_counter_ns()
        for _ in range(n):
            serial += 1
            reply = call(s, serial, *ARGS, body)
        means.append((time.perf_counter_ns() - t0) / n)
    return means, reply


def main():
    work, n, rounds = os.path.abspath(sys.argv[1]), int(sys.argv[2]), \
        int(sys.argv[3])
    for what in (POLKITD, shutil.which("dbus-daemon"),
                 shutil.which("setpriv")):
        if what is None or not os.path.exists(what):
            print(f"polkit missing={what or 'dbus-daemon/setpriv'}")
            return 0
    os.makedirs(work, exist_ok=True)
    path = os.path.join(work, "bus")
    if os.path.exists(path):
        os.unlink(path)
    conf = os.path.join(work, "bus.conf")
    with open(conf, "w", encoding="ascii") as f:
        f.write(BUS_CONF.format(path=path))
    env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=f"unix:path={path}")
    procs = []
    try:
        log = open(os.path.join(work, "polkit.log"), "wb")
        procs.append(subprocess.Popen(["dbus-daemon", "--nofork",
                                       "--config-file", conf],
                                      stdout=log, stderr=log))
        if not wait_for_path(path, 20):
            raise OSError("dbus-daemon did not listen")
        procs.append(subprocess.Popen([POLKITD, "--no-debug"], env=env,
                                      stdout=log, stderr=log))
        procs.append(subprocess.Popen(["setpriv", "--reuid=65534",
                                       "--regid=65534", "--clear-groups",
                                       "sleep", "600"]))
        time.sleep(0.05)
        subject = procs[-1].pid
        body = check_body(subject, start_time(subject))
        s = connect(path)
        reply = first_call(s, body, 20)
        means, reply = measure(s, body, n, rounds)
        means.sort()
        print(f"polkit calls={n} rounds={rounds} "
              f"median_ns={means[len(means) // 2]:.0f} "
              f"authorized={reply[0]} challenge={reply[4]}")
    finally:
        for p in reversed(procs):
            p.kill()
            p.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
