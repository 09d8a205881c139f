"""e2e scenarios (tests/e2e/run.py) of many connections at once:
many-clients, idle-flood and quota."""
import os
import socket
import struct
import subprocess
import time

from e2e_harness import (cleaned, count, E_CORE_BROKER, E_CORE_BUSY,
                         E_PEER_BUSY, fail, fd_count, key_values, last_object,
                         OP_BEGIN, OP_DECISION, REPLY_BIT, settled_fds,
                         SLOW, wait_for)
from e2e_jobs import begin_body, frame, Launched, Program, Shell
from scn_lifecycle import relayed
from scn_backpressure import request_lines, write_file


def many_clients(st):
    """(own stack) 64 concurrent launched clients, 10,000 runtime-reply
    lifecycles in all, each client its own file, verified by identity."""
    clients, total = 64, 10000
    for k in range(clients):
        write_file(st, f"many/f{k:02d}.txt", f"file {k} " + "x" * k + "\n")
    # Every client takes its own scope from vfsd (a scope is a connection
    # a request's resolution is asked over; the clients do not share).
    retired = st.peer_log("vfsd").count("RETIRE object")
    reps = [total // clients + (1 if k < total % clients else 0)
            for k in range(clients)]
    # Under PBX_E2E_SLOW each client waits SLOW times its 20 s for each
    # decision (a later --wait-ms wins); without it the line is as before.
    wait = [] if SLOW == 1 else ["--wait-ms", str(int(20000 * SLOW))]
    t0 = time.monotonic()
    procs = [subprocess.Popen(st.request_argv(
        "--job", f"{400 + k}:1", "--entry", f"bin/reader{k}", "--mode",
        "runtime-reply", "--selector", f"many/f{k:02d}.txt",
        "--verify-object", st.root, "--then", "consume", "--repeat",
        str(reps[k]), *wait), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, process_group=st.pgid)
        for k in range(clients)]
    # 600 s natively; SLOW times that under valgrind (make memcheck).
    outs = [p.communicate(timeout=600 * SLOW) for p in procs]
    wall = time.monotonic() - t0
    done = 0
    for k, (p, (out, err)) in enumerate(zip(procs, outs)):
        kv = key_values(out)
        if p.returncode != 0 or kv.get("repeat") != str(reps[k]) or \
                kv.get("mismatches") != "0" or \
                kv.get("decisions_per_lifecycle") != "1.000":
            fail(f"many-clients: client {k} (rc {p.returncode}): {out} "
                 f"{err[-2000:]}")
        done += int(kv["repeat"])
    if done != total:
        fail(f"many-clients: {done} lifecycles, not {total}")
    print(f"run: {clients} clients ran {done} lifecycles in {wall:.1f} s "
          f"({done / wall:.0f}/s): every decision named its own request, "
          f"every object was its own file: zero mismatches; one DECISION "
          f"call per lifecycle (no client polled)")
    ends = {}
    for l in st.peer_log("launchd").splitlines():
        if " outcome approved" in l and " job " in l:
            key = l.split(" job ", 1)[1].split(" outcome ", 1)[0]
            ends[key] = ends.get(key, 0) + 1
    for k in range(clients):
        n = ends.get(f"{400 + k}.1 entry bin/reader{k}", 0)
        if n != reps[k]:
            fail(f"many-clients: launchd logged {n} approvals for job "
                 f"{400 + k}.1, not {reps[k]}")
    retires = lambda: st.peer_log("vfsd").count("RETIRE object") - retired
    deadline = time.monotonic() + 20.0 * SLOW
    while retires() != total and time.monotonic() < deadline:
        time.sleep(0.5)
    if retires() != total:
        fail(f"many-clients: vfsd retired {retires()} objects, not {total}")
    print(f"run: launchd logged each job's {total // clients} or so "
          f"approvals as its own; vfsd retired all {total} objects")


def connect_all(path, n):
    """n connections to the SOCK_SEQPACKET socket at path (a refused one
    is still connected: the server closes it)."""
    conns = []
    deadline = time.monotonic() + 10.0
    for _ in range(n):
        c = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        c.settimeout(5)
        while True:
            try:
                c.connect(path)
                break
            except BlockingIOError:
                # The listen backlog is full until the server accepts.
                if time.monotonic() > deadline:
                    fail(f"{path} accepts no connections")
                time.sleep(0.005)
        conns.append(c)
    return conns


def connect_all_spread(path, n, per=4):
    """n connections to the SOCK_SEQPACKET socket at path, as connect_all,
    but opened by fresh child processes of at most per connections each
    (passed back with SCM_RIGHTS): powerboxd bounds what one process holds
    (8 public connections, PBX_PORT_CLIENTS_PER_PID), so a flood meant to
    fill its whole table comes from several processes."""
    conns = []
    for start in range(0, n, per):
        k = min(per, n - start)
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        pid = os.fork()
        if pid == 0:
            status = 1
            try:
                ours.close()
                got = connect_all(path, k)
                socket.send_fds(theirs, [b"1"], [c.fileno() for c in got])
                status = 0
            finally:
                os._exit(status)
        theirs.close()
        ours.settimeout(15)
        try:
            _, fds, _, _ = socket.recv_fds(ours, 1, k)
        except OSError:
            fds = []
        ours.close()
        os.waitpid(pid, 0)
        if len(fds) != k:
            fail(f"{path}: a child passed {len(fds)} connections, not {k}")
        for fd in fds:
            c = socket.socket(fileno=fd)
            c.settimeout(5)
            conns.append(c)
    return conns


def all_closed(conns, seconds):
    """True when every connection in conns reads end of file within
    seconds."""
    deadline = time.monotonic() + seconds
    for c in conns:
        c.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            for _ in range(16):
                if c.recv(65536) == b"":
                    break
            else:
                return False
        except (socket.timeout, TimeoutError):
            return False
        except (ConnectionResetError, BrokenPipeError):
            pass
    return True


def public_answered(st):
    """A fresh public connection's DECISION of an unknown request is
    answered (an error reply); False when the connection is closed."""
    c = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    c.settimeout(2)
    try:
        c.connect(st.public)
        c.send(frame(OP_DECISION, b"", 0, (1, 1), 9))
        msg = c.recv(65536)
        return len(msg) >= 32 and \
            struct.unpack("<H", msg[6:8])[0] == OP_DECISION | REPLY_BIT
    except OSError:
        return False
    finally:
        c.close()


def public_idle_closed(st):
    """How many idle public connections powerboxd logged it closed."""
    n = 0
    for l in st.peer_log("powerboxd").splitlines():
        if "powerboxd: closed " in l and " idle public connection" in l:
            n += int(l.split("powerboxd: closed ", 1)[1].split()[0])
    return n


def half_begun(p, job, n):
    """Program p (job, already started) makes n half-begun requests: the
    first half BEGIN alone, the rest BEGIN and one selector chunk of two.
    Returns (program, request ids)."""
    said = p.cmd(f"begin {n - n // 2}") + p.cmd(f"begin {n // 2} partial")
    ids = [l.split("=", 1)[1] for l in said if l.startswith("begun=")]
    chunks = [l for l in said if l.startswith("chunk=")]
    if len(ids) != n or len(chunks) != n // 2 or \
            any(not l.endswith(" 0x0000") for l in chunks):
        fail(f"{job}: not {n} half-begun requests: {said}")
    return p, ids


def control_refused(st, limit, live):
    """idle-flood: with launchd's limit of control connections held by
    launchers of live jobs (live of them already), none can be evicted:
    one more connection is refused, logged, and sees end of file; the
    launchers then end their jobs."""
    refused0 = count(st.peer_log("launchd"), "control connection refused")
    evicted0 = count(st.peer_log("launchd"), "evicted for a new one")
    cats = [Launched(st, st.launch_argv(["/bin/cat"], None, "bin/cat"))
            for _ in range(limit - live)]
    for c in cats:
        c.write("up\n")
    for c in cats:
        c.wait_line(lambda l: l == "up", "its input back")
    extra = connect_all(st.control, 1)
    if not all_closed(extra, 3.0):
        fail("idle-flood: a control connection past the limit, with every "
             "one held by a live job, was not closed")
    extra[0].close()
    wait_for(lambda: count(st.peer_log("launchd"), "control connection "
                           f"refused: limit {limit}") - refused0 == 1,
             "idle-flood: launchd did not log the refused connection")
    if count(st.peer_log("launchd"), "evicted for a new one") != evicted0:
        fail("idle-flood: a launcher of a live job was evicted")
    for c in cats:
        if c.finish()[0] != 0:
            fail("idle-flood: a launched cat failed")
    print(f"run: {limit} control connections held by launchers of live "
          f"jobs: one more refused (logged, end of file); none evicted")


def idle_flood(st):
    """(own stack) idle and half-begun connections, twice every limit:
    honest programs are still served, half-begun requests end CANCELLED."""
    open_s = st.deadline_ms("open", 30000) / 1000.0
    idle_s = st.deadline_ms("idle", 30000) / 1000.0
    if st.launchd_opt("--idle-ms", 10000) / 1000.0 != idle_s:
        fail("idle-flood: launchd's and powerboxd's idle times differ")
    limit, public_limit = st.launchd_opt("--max-conns", 96), 32
    launchd = st.procs[3].pid
    base = (settled_fds(st.pid), settled_fds(launchd))
    # 16 half-begun requests of two programs fill powerboxd's 16 request
    # records: a third program's BEGIN is refused BUSY.
    # The three programs start first, each answering an empty command,
    # so that only their BEGINs fall inside the OPEN deadline (an
    # interpreter's start took 3 s on a loaded machine).
    progs = [Program(st, j, e) for j, e in (("80:1", "bin/half1"),
                                           ("81:1", "bin/half2"),
                                           ("82:1", "bin/probe"))]
    for p in progs:
        if p.cmd("begin 0") != []:
            fail("idle-flood: a program did not start")
    t_begun = time.monotonic()
    p1, ids1 = half_begun(progs[0], "80:1", 8)
    p2, ids2 = half_begun(progs[1], "81:1", 8)
    probe = progs[2]
    said = probe.cmd("begin 1")
    if time.monotonic() - t_begun >= open_s:
        fail(f"idle-flood: too slow to probe within the OPEN deadline")
    if said != [f"refused={E_CORE_BUSY:#06x}"]:
        fail(f"idle-flood: a BEGIN with 16 half-begun requests held: "
             f"{said}")
    probe.finish()
    # One DECISION asked now, held by launchd until the request ends: it
    # must end at its OPEN deadline, not sooner.
    with p2.cv:
        mark = len(p2.lines)
    p2.write(f"decision {ids2[0]}\n")
    print(f"run: 16 half-begun requests (8 BEGIN alone, 8 with one "
          f"selector chunk of two) hold every request record: another "
          f"program's BEGIN refused PBX_E_CORE_BUSY")
    # The flood: twice launchd's control connection limit, twice
    # powerboxd's public one (a quarter of those send a BEGIN, answered
    # with a refusal, and then nothing).
    refused0 = count(st.peer_log("launchd"), "control connection refused")
    evicted = lambda: count(st.peer_log("launchd"), "evicted for a new one")
    evicted0 = evicted()
    prefused0 = count(st.peer_log("powerboxd"), "public connection refused")
    pidle0 = public_idle_closed(st)
    t_flood = time.monotonic()
    ctl = connect_all(st.control, 2 * limit)
    pub = connect_all_spread(st.public, public_limit // 2)
    begun = connect_all_spread(st.public, public_limit // 2)
    for i, c in enumerate(begun):
        c.send(frame(OP_BEGIN, begin_body((11, 1), b"bin/cat",
                                          b"docs/readme.txt"), 0, (0, 0),
                     100 + i))
        msg = c.recv(65536)
        if len(msg) < 32 or struct.unpack("<H", msg[8:10])[0] != \
                E_CORE_BROKER:
            fail(f"idle-flood: public BEGIN answered {msg[:32]!r}")
    pub += begun + connect_all_spread(st.public, public_limit)
    # The two half-begun programs' launchers hold the only other control
    # connections (live jobs: never evicted); each flood connection past
    # the limit evicted the longest-silent one, none was refused.
    flood_evicted = 2 * limit + 2 - limit
    wait_for(lambda: evicted() - evicted0 >= flood_evicted,
             f"idle-flood: launchd evicted {evicted() - evicted0} control "
             f"connections for the flood, not {flood_evicted}", 5.0)
    print(f"run: {len(ctl)} idle control connections to launchd (the "
          f"{evicted() - evicted0} past its limit of {limit} each evicted "
          f"the longest-silent one) and {len(pub)} to powerboxd's public "
          f"endpoint ({public_limit // 2} after a refused BEGIN)")
    # An honest program launched through launchd gets in at once (its
    # launcher's control connection evicts an idle one) and is served
    # within the idle timeout of the flood's start: its BEGIN is refused
    # PBX_E_CORE_BUSY (retryable) only while the half-begun requests hold
    # every request record, and retried by the job. A public connection
    # asking something is answered once powerboxd closed the idle ones.
    job = Shell(st, "83:1", "bin/honest")
    errf = os.path.join(st.work, "logs", "honest.err")
    for tries in range(1, 1000):
        rc, kv = job.request("--lifetime", "one-shot", "--slot", "20",
                             "--then", "consume", stderr=errf)
        with open(errf, encoding="utf-8") as f:
            said = f.read()
        if rc == 0 or f"(0x{E_CORE_BUSY:04x})" not in said or \
                time.monotonic() > t_flood + idle_s:
            break
        time.sleep(0.05)
    honest = time.monotonic() - t_flood
    if rc != 0 or kv.get("outcome") != "approved" or \
            kv.get("consume") != "accepted" or honest > idle_s:
        fail(f"idle-flood: the honest client (try {tries}) after "
             f"{honest:.2f} s: rc {rc} {kv} {said}")
    if job.close() != 0:
        fail("idle-flood: the honest job's shell failed")
    refused = count(st.peer_log("launchd"), "control connection refused") - \
        refused0
    if evicted() - evicted0 != flood_evicted + 1 or refused != 0:
        fail(f"idle-flood: {evicted() - evicted0} control connections "
             f"evicted, not {flood_evicted + 1} (the flood's and one for "
             f"the honest launcher), {refused} refused")
    wait_for(lambda: public_answered(st), "idle-flood: the public endpoint "
             "never answered", max(0.1, t_flood + idle_s + 5.0 -
                                   time.monotonic()))
    print(f"run: honest job launched at once (it evicted an idle control "
          f"connection); its request approved and consumed {honest:.2f} s "
          f"after the flood began (try {tries}, the others refused "
          f"PBX_E_CORE_BUSY while the half-begun requests held every prompt "
          f"record; idle timeout {idle_s:.1f} s); the public endpoint "
          f"answered")
    # The flood's connections are dropped idle_s after their last byte;
    # the honest job may have finished well before that.
    close_s = max(0.1, t_flood + idle_s + 5.0 - time.monotonic())
    if not all_closed(ctl, close_s) or not all_closed(pub, 3.0):
        fail("idle-flood: a flood connection was never closed")
    # A process logs what it closed after the close a client sees: wait
    # for the lines, bounded, rather than read the logs at once.
    def drop_counts():
        return (count(st.peer_log("launchd"), "idle"),
                count(st.peer_log("powerboxd"), "public connection refused")
                - prefused0, public_idle_closed(st) - pidle0)

    def drops_logged():
        d, r, i = drop_counts()
        return d >= len(ctl) - flood_evicted - 1 and r >= public_limit and \
            i >= public_limit
    t_logged = time.monotonic() + 5.0
    while not drops_logged() and time.monotonic() < t_logged:
        time.sleep(0.05)
    dropped, prefused, pidle = drop_counts()
    if dropped < len(ctl) - flood_evicted - 1 or prefused < public_limit or \
            pidle < public_limit:
        fail(f"idle-flood: launchd logged {dropped} idle drops for "
             f"{len(ctl) - flood_evicted - 1} left; powerboxd {prefused} "
             f"refusals and {pidle} idle closes")
    for c in ctl + pub:
        c.close()
    print(f"run: every flood connection closed: {flood_evicted + 1} evicted "
          f"and {dropped} dropped idle by launchd, {prefused} refused and "
          f"{pidle} closed idle by powerboxd (logged)")
    control_refused(st, limit, 2)
    # Every half-begun request ended CANCELLED at its OPEN deadline; its
    # reservation had returned before its decision was collected (the
    # honest BEGIN above got a request record).
    i = p2.wait_line(lambda l: l.startswith("decision="), "decision=",
                     max(5.0, open_s + 5.0), mark)
    p2.wait_line(lambda l: l == "done", "done", 5.0, i)
    with p2.cv:
        line, at = p2.lines[i], p2.times[i] - p2.when("begun")
    if line != f"decision={ids2[0]} cancelled" or at < open_s - 0.1 or \
            at > open_s + 5.0:
        fail(f"idle-flood: the DECISION held from before the OPEN deadline: "
             f"{line} {at:.2f} s after BEGIN (deadline {open_s:.1f} s)")
    print(f"run: request {ids2[0]}'s DECISION, asked before its OPEN "
          f"deadline, answered CANCELLED {at:.2f} s after its BEGIN")
    for p, ids in ((p1, ids1), (p2, ids2[1:])):
        for rid in ids:
            if p.cmd(f"decision {rid}") != [f"decision={rid} cancelled"]:
                fail(f"idle-flood: half-begun request {rid} did not end "
                     f"CANCELLED")
        if p.finish()[0] != 0:
            fail("idle-flood: a half-begun program failed")
    n = sum(request_lines(st, job, entry, "cancelled") for job, entry in
            (("80.1", "bin/half1"), ("81.1", "bin/half2")))
    if n != 16:
        fail(f"idle-flood: launchd logged {n} cancelled half-begun "
             f"requests, not 16")
    wait_for(lambda: (fd_count(st.pid), fd_count(launchd)) == base,
             f"idle-flood: descriptors {(fd_count(st.pid), fd_count(launchd))}"
             f", not the baseline {base}")
    print(f"run: all 16 half-begun requests ended CANCELLED (OPEN deadline "
          f"{open_s:.1f} s), their reservations returned; descriptors back "
          f"to {base}")


def quota(st):
    """One program at its open-request bound gets launchd's retryable BUSY
    while another program is served."""
    bound = st.launchd_opt("--max-open", 8)
    before = relayed(st, "begin")
    a = Program(st, "50:1", "bin/greedy")
    said = a.cmd(f"begin {bound}")
    ids = [l.split("=", 1)[1] for l in said if l.startswith("begun=")]
    if len(ids) != bound:
        fail(f"quota: the program's first {bound} BEGINs: {said}")
    said = a.cmd("begin 1")
    if said != [f"refused={E_PEER_BUSY:#06x}"]:
        fail(f"quota: BEGIN over the bound of {bound}: {said}")
    if relayed(st, "begin") - before != bound:
        fail("quota: the BEGIN over the bound reached powerboxd")
    print(f"run: job 50:1 holds {bound} open requests; its next BEGIN "
          f"refused by launchd PBX_E_PEER_BUSY, not relayed")
    rc, kv = st.client("--job", "51:1", "--entry", "bin/honest",
                       "--lifetime", "one-shot", "--slot", "20", "--then",
                       "consume")
    if rc != 0 or kv.get("outcome") != "approved" or \
            kv.get("consume") != "accepted":
        fail(f"quota: another program was not served: {kv}")
    cleaned(st, last_object(st, kv.get("scope", "none")))
    print("run: another program (job 51:1) approved and consumed meanwhile")
    if a.cmd(f"cancel {ids[0]}") != ["cancel=accepted"] or \
            a.cmd(f"decision {ids[0]}") != [f"decision={ids[0]} cancelled"]:
        fail(f"quota: CANCEL of {ids[0]}")
    said = a.cmd("begin 1")
    if len(said) != 1 or not said[0].startswith("begun="):
        fail(f"quota: the retried BEGIN: {said}")
    ids = ids[1:] + [said[0].split("=", 1)[1]]
    print(f"run: one request ended (cancelled): the retried BEGIN admitted "
          f"({ids[-1]})")
    for rid in ids:
        if a.cmd(f"cancel {rid}") != ["cancel=accepted"] or \
                a.cmd(f"decision {rid}") != [f"decision={rid} cancelled"]:
            fail(f"quota: CANCEL of {rid}")
    if a.finish()[0] != 0:
        fail("quota: the program failed")
    if request_lines(st, "50.1", "bin/greedy", "cancelled") != bound + 1:
        fail("quota: launchd did not log every request of job 50.1 "
             "cancelled")
