"""The real stack's message pattern, recorded with strace (docs/BENCH.md).

record() attaches `strace -f -yy -xx` to powerboxd and every peer (launchd
with -f, so the client job it launches is traced from its start), runs one
client, and turns the trace into the events each process performed on
AF_UNIX sockets: S (send: bytes, descriptors passed), R (receive), H
(receive of a hang-up: 0 bytes), W (a wait that returned ready, kept only
where the process's next event is a receive, so a replay never waits for
a timer or a child), C (close of a socket, or a dup2 or dup3 onto one:
the port releases a transient slot so). Failed calls (EAGAIN, EBADF)
are the stack's overhead, not messages, and are left out, as are messages with processes outside the
trace (inside()). Every system
call of every traced process is counted too (strace -c's figure,
counted from the same trace).

pattern_text() writes those events in pbx-bench-skel's format;
needed() drops, per lifecycle, launchd's first DECISION to powerboxd
and its reply where it sends a second one (issue 23: the needed pattern
has one DECISION to powerboxd, after the wake).
"""
import re
import signal
import subprocess
import threading
import time

LINE = re.compile(r"^(\d+)\s+(.*)$")
FD_UNIX = re.compile(r"^(\w+)\((\d+)<UNIX:\[(\d+)(?:->(\d+))?")
# dup2 or dup3 onto a descriptor that held a socket closes that socket (the
# port releases a transient slot by duplicating its placeholder over it).
DUP_ONTO_UNIX = re.compile(
    r"^dup[23]\(\d+<[^>]*>(?:\([^)]*\))?, (\d+)<UNIX:\[(\d+)(?:->(\d+))?")
RET = re.compile(r"\)\s+= (-?\d+)")
PASSED = re.compile(r"(?:\[|, )\d+<")
OPBYTES = re.compile(r'iov_base="((?:\\x[0-9a-f]{2}){8})')
SENDS = ("sendmsg", "sendto", "write", "writev")
RECVS = ("recvmsg", "recvfrom", "read", "readv")
WAITS = ("epoll_wait", "epoll_pwait", "poll", "ppoll")
# /proc/net/unix socket types: 1 stream, 2 datagram, 5 seqpacket.
TYPES = {1: "t", 2: "d", 5: "s"}
DECISION = 0x0004
REPLY = 0x8000


def snapshot_types(types, stop):
    """Socket inode -> type from /proc/net/unix, every 5 ms until stop."""
    while not stop.is_set():
        with open("/proc/net/unix", encoding="ascii") as f:
            for line in f.readlines()[1:]:
                cols = line.split()
                if len(cols) >= 7:
                    types[int(cols[6])] = TYPES.get(int(cols[4], 16), "s")
        stop.wait(0.005)


def attach(pids, out):
    """strace -f on every pid, returned once it reports all attached."""
    args = ["strace", "-f", "-yy", "-xx", "-s", "8", "-o", out]
    for p in pids:
        args += ["-p", str(p)]
    tr = subprocess.Popen(args, stderr=subprocess.PIPE, text=True)
    seen = 0
    for _ in range(256):
        line = tr.stderr.readline()
        seen += "attached" in line
        if not line or seen >= len(pids):
            break
    return tr


def record(roles, argv, out):
    """Runs argv (one client) with the stack's processes (roles: pid ->
    name) traced; returns (completed client, calls, types) where calls is
    a list of (pid, text) in trace order and types inode -> type."""
    types, stop = {}, threading.Event()
    th = threading.Thread(target=snapshot_types, args=(types, stop))
    th.start()
    tr = attach(list(roles), out)
    try:
        res = subprocess.run(argv, capture_output=True, text=True,
                             check=False, timeout=600)
        time.sleep(0.5)
    finally:
        tr.send_signal(signal.SIGINT)
        tr.communicate(timeout=120)
        stop.set()
        th.join()
    return res, parse_lines(out), types


def parse_lines(path):
    """[(pid, whole call text)] in the order the calls completed (a
    receive that blocked is placed where its message arrived), an
    unfinished call joined to its resumption."""
    calls, partial = [], {}
    with open(path, encoding="ascii", errors="replace") as f:
        for raw in f:
            m = LINE.match(raw.rstrip("\n"))
            if m is None:
                continue
            pid, text = int(m.group(1)), m.group(2)
            if text.startswith(("+++", "---")):
                continue
            if text.endswith("<unfinished ...>"):
                partial[pid] = text[:-len("<unfinished ...>")]
                continue
            if text.startswith("<..."):
                rest = text.split(">", 1)[1] if ">" in text else ""
                text = partial.pop(pid, "") + rest
            calls.append((pid, text))
    return calls


def classify(text):
    """(kind, inode, peer, size, nfds, op) of one socket call, or None."""
    name = text.split("(", 1)[0]
    m, r = FD_UNIX.match(text), RET.findall(text)
    ret = int(r[-1]) if r else -1
    if name in WAITS:
        return ("W", 0, 0, 0, 0, 0) if ret > 0 else None
    d = DUP_ONTO_UNIX.match(text)
    if d is not None and ret >= 0:
        return ("C", int(d.group(2)), int(d.group(3) or 0), 0, 0, 0)
    if m is None or ret < 0:
        return None
    a, b = int(m.group(3)), int(m.group(4) or 0)
    nfds = len(PASSED.findall(text.split("cmsg_data=", 1)[1])) \
        if "cmsg_data=" in text else 0
    op = 0
    o = OPBYTES.search(text)
    if o is not None:
        hexes = o.group(1).split("\\x")[1:]
        op = int(hexes[6], 16) | int(hexes[7], 16) << 8
    if name in SENDS and ret > 0:
        return ("S", a, b, ret, nfds, op)
    if name in RECVS:
        return ("H", a, b, 0, 0, 0) if ret == 0 else ("R", a, b, ret, nfds,
                                                       op)
    if name == "close":
        return ("C", a, b, 0, 0, 0)
    return None


def events(calls, roles):
    """The socket events of the trace and the system calls per role."""
    evs, syscalls, chan_of = [], {}, {}
    for pid, text in calls:
        role = roles.get(pid, "client")
        syscalls[role] = syscalls.get(role, 0) + 1
        if text.startswith("close(") and "EBADF" in text:
            # A launched job's sweep of descriptors it may have inherited.
            syscalls[role + "!sweep"] = syscalls.get(role + "!sweep", 0) + 1
        c = classify(text)
        if c is None:
            continue
        kind, a, b, size, nfds, op = c
        if b:
            key = (min(a, b), max(a, b))
            chan_of[a] = chan_of[b] = key
        key = chan_of.get(a, (a, 0)) if kind != "W" else None
        evs.append({"role": role, "kind": kind, "chan": key,
                    "end": 0 if key is None or a == key[0] else 1,
                    "size": size, "nfds": nfds, "op": op, "inode": a})
    return keep_waits(inside(evs)), syscalls


def inside(evs):
    """Drops messages with processes outside the trace (launchd's
    launcher, the bench itself): those on a channel only one end of which
    a traced process used."""
    ends = {}
    for e in evs:
        if e["chan"] is not None:
            ends.setdefault(e["chan"], set()).add(e["end"])
    return [e for e in evs if e["chan"] is None or e["kind"] == "C" or
            len(ends[e["chan"]]) == 2]


def keep_waits(evs):
    """Drops every wait not followed, in its role, by a receive."""
    out, last_wait = [], {}
    for e in evs:
        r = e["role"]
        if e["kind"] == "W":
            last_wait[r] = e
            continue
        w = last_wait.pop(r, None)
        if w is not None and e["kind"] in ("R", "H"):
            out.append(w)
        out.append(e)
    return out


def needed(evs):
    """evs without launchd's early DECISIONs to powerboxd and their
    replies (and the waits that woke for them)."""
    sends = [i for i, e in enumerate(evs) if e["kind"] == "S" and
             e["role"] == "launchd" and e["op"] == DECISION]
    drop = set()
    for i, j in zip(sends, sends[1:]):
        if evs[j]["chan"] == evs[i]["chan"] and not any(
                e["kind"] == "S" and e["role"] == "launchd" and
                e["chan"] == evs[i]["chan"] and e["op"] != DECISION
                for e in evs[i + 1:j]):
            drop |= message_and_reply(evs, i)
    out = []
    for k, e in enumerate(evs):
        if k in drop:
            continue
        if e["kind"] == "W" and k + 1 in drop:
            continue
        out.append(e)
    return out


def receive_of(evs, i):
    """Index of the receive of the message sent at i (FIFO per end)."""
    s = evs[i]
    nth = sum(1 for e in evs[:i] if e["kind"] == "S" and
              e["chan"] == s["chan"] and e["end"] == s["end"])
    seen = 0
    for k, e in enumerate(evs):
        if e["kind"] == "R" and e["chan"] == s["chan"] and \
                e["end"] != s["end"]:
            if seen == nth:
                return k
            seen += 1
    return None


def message_and_reply(evs, i):
    """The indices of message i, its receive, its reply and that reply's
    receive."""
    out = {i}
    r = receive_of(evs, i)
    if r is None:
        return set()
    out.add(r)
    for k in range(r + 1, len(evs)):
        e = evs[k]
        if e["kind"] == "S" and e["chan"] == evs[i]["chan"] and \
                e["end"] != evs[i]["end"] and e["op"] == DECISION | REPLY:
            rr = receive_of(evs, k)
            if rr is not None:
                out |= {k, rr}
            break
    return out


def counts(evs):
    """The figures pbx-bench-skel reports, for comparison with its own."""
    c = {"sends": 0, "recvs": 0, "fds": 0, "hangups": 0, "waits": 0,
         "closes": 0}
    names = {"S": "sends", "R": "recvs", "H": "hangups", "W": "waits",
             "C": "closes"}
    for e in evs:
        c[names[e["kind"]]] += 1
        if e["kind"] == "S":
            c["fds"] += e["nfds"]
    return c


def last_closes(evs):
    """evs with each close that is not its role's last use of that
    socket turned into a close of a received copy (chan None): the real
    process held the socket twice (received again, or duplicated) and
    closed one copy, while the skeleton's role holds one."""
    out, later = [], set()
    for e in reversed(evs):
        key = (e["role"], e["chan"], e["end"])
        if e["kind"] == "C" and e["chan"] is not None and key in later:
            e = dict(e, chan=None)
        if e["chan"] is not None:
            later.add(key)
        out.append(e)
    return out[::-1]


def pattern_text(evs, types):
    """(pattern file text, role names in index order)."""
    roles, chans = [], []
    for e in evs:
        if e["role"] not in roles:
            roles.append(e["role"])
        if e["chan"] is not None and e["chan"] not in chans:
            chans.append(e["chan"])
    evs = last_closes(evs)
    lines = [f"skeleton {len(roles)} {len(chans)}"]
    lines += [f"chan {types.get(c[0], types.get(c[1], 's'))}" for c in chans]
    for e in evs:
        ch = chans.index(e["chan"]) if e["chan"] is not None else -1
        lines.append(f"ev {roles.index(e['role'])} {e['kind']} {ch} "
                     f"{e['end']} {min(e['size'], 65536)} {min(e['nfds'], 8)}")
    return "\n".join(lines) + "\n", roles
