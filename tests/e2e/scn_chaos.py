"""The e2e scenario chaos (tests/e2e/run.py): random kills of the stack's
processes under client load, and the accounting of its logs."""
import os
import random
import re
import select
import signal
import socket
import subprocess
import threading
import time

from e2e_harness import fail, read_rows, settled_fds, SLOW, wait_for
from e2e_up import (chaos_quiet, latest_pids, stack_child, STACK_COMM,
                    Starts, Up)
from scn_up import stamp_of
from scn_restart import ended, grants_listed, Holder, log_events, objects_of


# A client job that has not ended after this long waits forever (30 s;
# SLOW times that under PBX_E2E_SLOW, where every program runs under
# valgrind many times slower: docs/TESTING.md, "Memory checks").
CHAOS_BOUND_S = int(30 * SLOW)


def chaos_target(u, starts, rng, aimed):
    """The (name, pid) to kill now, or None when no stack process is
    alive: aimed, the process whose start line appears next, or half the
    time (when alive) the one it needs routes from or hands them to
    (powerboxd for a peer, a peer for powerboxd); else any process alive
    at this moment (its latest start, alive in /proc)."""
    names = sorted(STACK_COMM)
    if aimed:
        name, pid = starts.next_after(starts.size())
        if rng.random() < 0.5:
            other = "powerboxd" if name != "powerboxd" else \
                rng.choice([n for n in names if n != "powerboxd"])
            if stack_child(u, other, starts.latest.get(other, 0)):
                name, pid = other, starts.latest[other]
        return (name, pid) if stack_child(u, name, pid) else None
    starts.poll()
    alive = [n for n in names if stack_child(u, n, starts.latest[n])]
    if not alive:
        return None
    name = rng.choice(alive)
    return name, starts.latest[name]


def install_job(argv, rng):
    """One install-mode client job (`pbx run --grant ... -- pbx-test-fdcat
    --again 5`): waits (bounded) for its first read's bytes, holds the
    grant 0..0.3 s, then sends "go" for the second read. Returns its
    record (the hold is SLOW times longer under PBX_E2E_SLOW): exit
    status ('hung' past CHAOS_BOUND_S), job (ID:GEN from
    pbx run's job line, or None), wall times of its spawn and of the
    "go" (None when the first read never came), its standard error."""
    t0, rec = time.monotonic(), {"spawn": time.time(), "go": None}
    p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    got = b""
    while len(got) < 16 and time.monotonic() - t0 < CHAOS_BOUND_S:
        ready, _, _ = select.select([p.stdout], [], [], 0.1)
        if ready:
            chunk = os.read(p.stdout.fileno(), 64)
            if not chunk:
                break
            got += chunk
    if got == b"hello from vfsd\n":
        time.sleep(rng.uniform(0.0, 0.3) * SLOW)
        rec["go"] = time.time()
    try:
        _, err = p.communicate(b"go\n", timeout=max(
            0.1, CHAOS_BOUND_S - (time.monotonic() - t0)))
        rec["rc"] = p.returncode
    except subprocess.TimeoutExpired:
        p.kill()
        _, err = p.communicate()
        rec["rc"] = "hung"
    rec["err"] = err.decode("utf-8", "replace")
    m = re.search(r"pbx run: \S+ is job (\d+:\d+) \(pid \d+\)", rec["err"])
    rec["job"] = m.group(1) if m else None
    return rec


def chaos_client(u, stop, results, install, rng, installs):
    """One client: jobs in a loop until stop is set, each one's (kind,
    exit status) appended to results ('hung' when it did not end within
    CHAOS_BOUND_S). Runtime-reply: three one-shot lifecycles
    (pbx-test-fdcat --cycles 3, 0 when all approved). Install mode: `pbx
    run --grant read:docs/readme.txt -- pbx-test-fdcat --again 5`, which
    reads fd 5, holds the grant (job lifetime) 0..0.3 s after that read
    and reads again (0: both read, 3: the second failed, the grant having
    ended); each install job's record (install_job) is appended to
    installs."""
    pbx, fdcat = (os.path.join(u.bin_dir, n) for n in ("pbx",
                                                        "pbx-test-fdcat"))
    if install:
        argv = [pbx, "--dir", u.dir, "run", "--grant", "read:docs/readme.txt",
                "--", fdcat, "--again", "5"]
    else:
        argv = [pbx, "--dir", u.dir, "run", "--", fdcat, "--cycles", "3",
                "docs/readme.txt"]
    kind = "install" if install else "reply"
    while not stop.is_set():
        if install:
            rec = install_job(argv, rng)
            installs.append(rec)
            results.append((kind, rec["rc"]))
        else:
            p = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                                 stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
            try:
                p.wait(timeout=CHAOS_BOUND_S)
                results.append((kind, p.returncode))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
                results.append((kind, "hung"))
        if results[-1][1] != 0:
            time.sleep(0.05)


def grants_in_use(u, seconds=1.0):
    """SIGUSR1 to pbx up; powerboxd's grants in use from the usage line
    that follows (read from stack.log's end), or None when no report came
    within seconds times SLOW (powerboxd down or restarting)."""
    since = os.path.getsize(u.log)
    os.kill(u.proc.pid, signal.SIGUSR1)
    deadline = time.monotonic() + seconds * SLOW
    with open(u.log, "rb") as f:
        while time.monotonic() < deadline:
            f.seek(since)
            text = f.read().decode("utf-8", "replace")
            m = re.search(r" up\[\d+\]: usage: (.*)\n", text)
            if m:
                g = re.search(r" grants=(\d+)/\d+ ", m.group(1))
                return int(g.group(1)) if g else None
            time.sleep(0.01)
    return None


def wait_grants_live(u, seconds=2.0):
    """Waits (bounded: seconds times SLOW) until powerboxd's usage report
    shows a grant in use; returns whether it did."""
    deadline = time.monotonic() + seconds * SLOW
    while time.monotonic() < deadline:
        n = grants_in_use(u)
        if n:
            return True
        time.sleep(0.03)
    return False


USAGE_LINE = re.compile(r" up\[\d+\]: usage: (.*)$", re.M)


def usage(u, what):
    """SIGUSR1 to pbx up; waits for its usage line and returns (powerboxd's
    pid, {pool: (in use, capacity)}, fds, the line)."""
    since = len(u.text())
    os.kill(u.proc.pid, signal.SIGUSR1)
    wait_for(lambda: USAGE_LINE.search(u.text()[since:]),
             f"{what}: pbx up logged no usage line", 10.0)
    line = USAGE_LINE.search(u.text()[since:]).group(1)
    m = re.fullmatch(r"powerboxd\[(\d+)\] ((?:\w+=\d+/\d+ )+)fds=(\d+) "
                     r"log_dropped=\d+", line)
    if m is None:
        fail(f"{what}: usage line {line!r}")
    pools = {k: tuple(int(x) for x in v.split("/")) for k, v in
             (w.split("=") for w in m.group(2).split())}
    return int(m.group(1)), pools, int(m.group(3)), line


def usage_settled(u, base, what, seconds=15.0):
    """Waits (bounded: seconds times SLOW) until the usage report's pools
    (in use and capacity) and descriptor count equal base's; returns the
    line."""
    got = []
    def same():
        got[:] = [usage(u, what)]
        return got[0][1:3] == base[1:3]
    deadline = time.monotonic() + seconds * SLOW
    while not same():
        if time.monotonic() > deadline:
            fail(f"{what}: usage {got[0][3]}, baseline {base[3]}")
        time.sleep(0.5)
    return got[0][3]


def usage_baseline(u):
    """The usage report right after readiness, shown able to fail: with
    one job-lifetime grant held the report differs (grants in use > 0),
    and once the grant ended it equals the baseline again."""
    base = usage(u, "chaos: baseline")
    if any(n != 0 for n, _ in base[1].values()):
        fail(f"chaos: pools in use at readiness: {base[3]}")
    since = len(u.text())
    h = Holder(u)
    try:
        h.opened("chaos: held grant")
        held = usage(u, "chaos: a grant held")
        if held[1]["grants"][0] < 1 or held[1:3] == base[1:3]:
            fail(f"chaos: with a grant held the usage reads {held[3]}, "
                 f"the baseline {base[3]}")
        h.end()
        ended(u, since, h.job, ("expired", "expire"), "chaos: held grant")
    finally:
        h.kill()
    usage_settled(u, base, "chaos: the held grant ended")
    print(f"run: chaos: usage baseline {base[3]}; with a grant held "
          f"{held[3]}; back at the baseline once it ended")
    return base


def installed(u):
    """Whether procd's query socket lists an install now (False when procd
    does not answer: killed or restarting)."""
    data = b""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(1.0 * SLOW)
            s.connect(os.path.join(u.dir, "procd.sock"))
            for _ in range(1 << 10):
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
    except OSError:
        return False
    return any(l.strip() for l in data.decode("utf-8", "replace").splitlines())


def wait_installed(u, seconds=2.0):
    """Waits (bounded: seconds times SLOW) until procd lists an install;
    returns whether it did."""
    deadline = time.monotonic() + seconds * SLOW
    while time.monotonic() < deadline:
        if installed(u):
            return True
        time.sleep(0.03)
    return False


def slow_target(u, starts, target):
    """Under PBX_E2E_SLOW only: the kill that waited for grants takes
    powerboxd (its latest start, when alive; else target), once procd
    lists an install (wait_installed), so that its death ends that grant
    by a loss (procd's broker-lost line). Under valgrind the clients run
    about a hundred times fewer jobs between two kills, and runs whose
    kills found grants in use (usage report) ended none by a loss and
    failed chaos_records' check (memcheck, seeds 3006699588 and
    409841252, the second with 8 powerboxd kills)."""
    pid = starts.latest.get("powerboxd", 0)
    return ("powerboxd", pid) if stack_child(u, "powerboxd", pid) else target


def chaos_kills(u, rng, kills):
    """Kills kills stack processes, each alive at that moment, gaps of
    0..0.3 s (every fifth, the third of five, 0.6..0.9 s: more than a
    restart's 0.5 s backoff, so that the stack is more often whole between
    kills), about a third aimed right after a restart's start line (when
    a killed process's restart is still to start); every fourth waits (at
    most 2 s) until powerboxd's usage report shows a grant in use.
    Returns {name: count}, the number aimed, and (the number of kills that
    waited for grants, how many of those found grants in use). Gaps and
    waits are SLOW times longer under PBX_E2E_SLOW, where a kill that
    waits for grants waits for an install procd lists and takes powerboxd
    (slow_target)."""
    killed, aimed, tries, dead = {}, 0, 0, set()
    waited, live = 0, 0
    starts = Starts(u)
    try:
        while sum(killed.values()) < kills:
            tries += 1
            if tries > 5 * kills + 20:
                fail(f"chaos: only {killed} kills found a live process in "
                     f"{tries} tries")
            k = sum(killed.values())
            # The gaps grow SLOW times under PBX_E2E_SLOW, so that the
            # clients (under valgrind) do as much between two kills.
            time.sleep(SLOW * (rng.uniform(0.6, 0.9) if k % 5 == 2 else
                               rng.uniform(0.0, 0.3)))
            starts.poll()
            # A restart is still to start while a killed pid is its
            # process's latest start.
            dead = {(n, p) for n, p in dead if starts.latest.get(n) == p}
            aim = rng.random() < 1 / 3 and bool(dead)
            wait = k % 4 == 3 and not aim
            with_grants = wait and (wait_grants_live(u) if SLOW == 1 else
                                    wait_installed(u))
            target = chaos_target(u, starts, rng, aim)
            if with_grants and SLOW != 1:
                target = slow_target(u, starts, target)
            if target is None:
                continue
            try:
                os.kill(target[1], signal.SIGKILL)
            except ProcessLookupError:
                continue
            dead.add(target)
            killed[target[0]] = killed.get(target[0], 0) + 1
            aimed += aim
            waited += wait
            live += with_grants
    finally:
        starts.f.close()
    return killed, aimed, (waited, live)


def chaos(bin_dir, work):
    """8 clients while seeded random stack processes are killed
    $PBX_CHAOS_KILLS times (default 20) at any moment; see the docstring
    list."""
    kills = int(os.environ.get("PBX_CHAOS_KILLS", "20"))
    seed = int(os.environ.get("PBX_CHAOS_SEED", str(random.randrange(1 << 32))))
    print(f"run: chaos: seed {seed} (PBX_CHAOS_SEED), {kills} kills")
    rng = random.Random(seed)
    u = Up(bin_dir, work, ["--restart-window-ms", "0"])
    stop, threads, results, installs = threading.Event(), [], [], []
    try:
        first = u.stack()
        base = {n: settled_fds(p) for n, p in first.items()}
        use = usage_baseline(u)
        for i in range(8):
            t = threading.Thread(target=chaos_client, args=(
                u, stop, results, i % 2 == 1, random.Random(seed + i),
                installs), daemon=True)
            t.start()
            threads.append(t)
        t0 = time.monotonic()
        killed, aimed, (waited, live) = chaos_kills(u, rng, kills)
        took = time.monotonic() - t0
        stop.set()
        for t in threads:
            t.join(CHAOS_BOUND_S + 5)
            if t.is_alive():
                fail("chaos: a client never finished its loop")
        wait_for(lambda: chaos_quiet(u), "chaos: the stack was not whole "
                 "with no restart pending 60 s after the kills", 60.0)
        outcome = {}
        for kind, rc in results:
            outcome.setdefault(kind, {})
            outcome[kind][rc] = outcome[kind].get(rc, 0) + 1
        print(f"run: chaos: {kills} kills {killed} ({aimed} aimed right "
              f"after a restart's start; {waited} waited for grants in use, "
              f"{live} of them landed with grants in use) in {took:.1f} s; "
              f"client jobs by kind and exit status {outcome}")
        hung = sum(1 for _, rc in results if rc == "hung")
        if hung:
            fail(f"chaos: {hung} client job(s) waited longer than "
                 f"{CHAOS_BOUND_S} s")
        if not any(o.get(0) for o in outcome.values()):
            fail("chaos: no client job succeeded")
        chaos_after(u, first, base, use)
        chaos_records(u, kills)
        chaos_objects(u, installs)
        u.stop()
    finally:
        stop.set()
        u.close()


def chaos_after(u, first, base, use):
    """chaos's checks once the stack is quiet: see the docstring list."""
    u.lifecycle("chaos: after the kills")
    out = subprocess.run(
        [os.path.join(u.bin_dir, "pbx"), "--dir", u.dir, "run", "--grant",
         "read:docs/readme.txt", "--",
         os.path.join(u.bin_dir, "pbx-test-fdcat"), "--again", "5"],
        input=b"go\n", capture_output=True, timeout=30 * SLOW, check=False)
    if out.returncode != 0 or out.stdout != b"hello from vfsd\n":
        fail(f"chaos: an install-mode job after the kills: rc "
             f"{out.returncode} {out.stderr!r}")
    wait_for(lambda: grants_listed(u) == [] and
             read_rows(os.path.join(u.dir, "procd.sock")) == [],
             "chaos: a grant is still shown or installed", 15.0)
    now = u.stack()
    wait_for(lambda: objects_of(u.text(), now["vfsd"]) == set(),
             f"chaos: vfsd[{now['vfsd']}] still holds objects "
             f"{objects_of(u.text(), now['vfsd'])} with no grant live", 15.0)
    text = u.text()
    ends = log_events(text, "grant-end")
    bad = [e for e in ends if e.get("reason", "") in ("", "none",
                                                       "unknown")]
    if bad or not ends:
        fail(f"chaos: {len(bad)} of {len(ends)} grant ends without "
             f"a reason: {bad[:3]}")
    line = usage_settled(u, use, "chaos: after the kills")
    # Every vfsd holds the same descriptors: it listens for no route, and
    # its one route is a pair (handed over at a restart, or made by 'P'
    # for each powerboxd), whichever vfsd and powerboxd now run.
    want = dict(base)
    fds = {n: settled_fds(p) for n, p in now.items()}
    if fds != want:
        fail(f"chaos: descriptors {fds}, want {want} (baseline {base})")
    reasons = {}
    for e in ends:
        reasons[e["reason"]] = reasons.get(e["reason"], 0) + 1
    lost = {w: len(re.findall(p, text)) for w, p in (
        ("ttyd rows", r"ttyd: VIEW ended grant \S+: route closed"),
        ("procd installs", r"procd: INSTALL ended grant \S+: route closed"),
        ("launchd grants", r"launchd: grant \S+ of job \S+ ended: broker "
                           r"lost"),
        ("vfsd objects", r"vfsd: RETIRE object \d+ gen \d+: route to pid"))}
    print(f"run: chaos: afterwards powerboxd's usage {line} equals the "
          f"baseline; descriptors {fds} as expected; {len(ends)} grant "
          f"ends, each with its reason {reasons}; ended with a dead "
          f"powerboxd (broker lost) {lost}; no grant shown or installed, "
          f"no object left at vfsd[{now['vfsd']}]")


# The stack.log lines chaos's accounting reads (ChaosLog parses each line
# once): the supervisor's start and death lines of a stack process, vfsd's
# readiness (its incarnation) and its per-object ends, and the peers'
# per-grant broker-lost lines (the grant id I.G as group 1).
UP_PROC = re.compile(r"(vfsd|ttyd|procd|launchd|powerboxd)\[(\d+)\] "
                     r"(started: |killed |exited )")
VFSD_READY = re.compile(r"vfsd: ready: .*\bincarnation (\d+)")
VFSD_END = re.compile(r"vfsd: (RETIRE|HANG-UP) object (\d+) gen (\d+)"
                      r"(: route to pid (\d+) closed$)?")
PEER_LOST = {
    "ttyd": re.compile(r"ttyd: VIEW ended grant (\d+\.\d+): route closed "
                       r"\(broker lost\)$"),
    "procd": re.compile(r"procd: INSTALL ended grant (\d+\.\d+)\b.*"
                        r"\(broker lost\)$"),
    "launchd": re.compile(r"launchd: grant (\d+\.\d+) of job \S+ ended: "
                          r"broker lost$")}


class ChaosLog:
    """stack.log text read in one pass for chaos's accounting: every line
    is parsed once into events keyed by process and kind; a position is
    the line's index. Fields:
    starts   [(pos, name, pid)] of the supervisor's `started` lines
    deaths   {(name, pid): pos} of its `killed`/`exited` lines
    incs     {incarnation: vfsd pid} from vfsd's ready lines
    approved {powerboxd pid: [(pos, fields)]} approved decision lines
    ends     {powerboxd pid: [(pos, fields)]} grant-end lines
    objects  {"W:G": [(pos, route pid or 0)]} vfsd's RETIRE / HANG-UP
             lines (the pid of a `route to pid N closed` RETIRE)
    lost     {"I:G": [(pos, peer pid)]} peers' broker-lost grant lines
    drops    the log_dropped values of the usage reports
    noted    whether stack.log holds a dropped-lines note"""

    def __init__(self, text):
        self.starts, self.deaths, self.incs = [], {}, {}
        self.approved, self.ends, self.objects, self.lost = {}, {}, {}, {}
        self.drops, self.noted = [], False
        handlers = {"up": self.up, "powerboxd": self.broker,
                    "vfsd": self.vfsd, "ttyd": self.peer,
                    "procd": self.peer, "launchd": self.peer}
        for pos, line in enumerate(text.splitlines()):
            i = line.find("]: ", 25)
            name, _, pid = line[25:i].partition("[")
            handler = handlers.get(name) if i > 0 else None
            if handler is not None and pid.isdigit():
                handler(pos, name, int(pid), line[i + 3:])

    def up(self, pos, _name, _pid, rest):
        """A supervisor line: a start, a death, a usage report or a note
        of dropped lines."""
        m = UP_PROC.match(rest)
        if m and m.group(3) == "started: ":
            self.starts.append((pos, m.group(1), int(m.group(2))))
        elif m:
            self.deaths[(m.group(1), int(m.group(2)))] = pos
        elif rest.startswith("usage: ") and " log_dropped=" in rest:
            tail = rest.rsplit(" log_dropped=", 1)[1]
            self.drops.append(int(tail) if tail.isdigit() else -1)
        self.noted |= "log line(s) dropped" in rest

    def broker(self, pos, _name, pid, rest):
        """A powerboxd line: an approved decision, a grant end, or the
        note of dropped lines."""
        if rest.startswith("event=decision ") and " outcome=approved" in rest:
            self.approved.setdefault(pid, []).append((pos, dict(
                w.split("=", 1) for w in rest.split() if "=" in w)))
        elif rest.startswith("event=grant-end "):
            self.ends.setdefault(pid, []).append((pos, dict(
                w.split("=", 1) for w in rest.split() if "=" in w)))
        self.noted |= rest.startswith("event=log-dropped")

    def vfsd(self, pos, _name, pid, rest):
        """A vfsd line: its readiness (its incarnation) or an object's
        end."""
        if rest.startswith(("vfsd: RETIRE object ", "vfsd: HANG-UP object ")):
            m = VFSD_END.match(rest)
            if m:
                self.objects.setdefault(f"{m.group(2)}:{m.group(3)}", []) \
                    .append((pos, int(m.group(5) or 0)))
        elif rest.startswith("vfsd: ready: "):
            m = VFSD_READY.match(rest)
            if m:
                self.incs[int(m.group(1))] = pid

    def peer(self, pos, name, pid, rest):
        """A ttyd, procd or launchd line: a grant's broker-lost record."""
        if rest.endswith("broker lost") or rest.endswith("(broker lost)"):
            m = PEER_LOST[name].match(rest)
            if m:
                self.lost.setdefault(m.group(1).replace(".", ":"), []) \
                    .append((pos, pid))

    def spans(self):
        """[(pid, start, death, end)] of every powerboxd: the positions of
        its `started` line, of its death line (end when none) and of the
        next powerboxd's `started` line (past the last line for the
        last)."""
        found = [(pos, pid) for pos, name, pid in self.starts
                 if name == "powerboxd"]
        out = []
        for i, (start, pid) in enumerate(found):
            end = found[i + 1][0] if i + 1 < len(found) else 1 << 62
            out.append((pid, start, min(self.deaths.get(("powerboxd", pid),
                                                         end), end), end))
        return out


def grant_end_record(log, span, decision, born):
    """How the end of an approved grant of a dead powerboxd that has no
    grant-end line is on record, or None: span is (pid, start, death,
    end), decision (pos, fields); born maps a pid to its start line. (a)
    vfsd's RETIRE of its object (`route to pid N closed` naming this
    powerboxd, then anywhere after its start, or a plain one) or HANG-UP
    within the span; (b) a ttyd, procd or launchd broker-lost line naming
    its grant within the span, by a peer started before the death; (c)
    its object's minting vfsd (the incarnation in the wire id's top 16
    bits) died before the span's end (the supervisor's death line): the
    object died with it. Records count from the span's start, not from
    the decision line: pbx up reads each process's pipe in turn, so a
    decision line written just before the kill can be logged after the
    peers' lines about the route's close (seen with PBX_CHAOS_SEED=200,
    200 kills: both in the same millisecond). An object id (its vfsd
    incarnation and generation) names one object only, and a grant id
    one grant of one powerboxd, so the span bounds them enough."""
    pid, start, death, end = span
    f = decision[1]
    obj = f.get("object-id", "")
    # powerboxd writes N-I.G; the peers, which never knew N, write I.G.
    wire = f.get("grant", "").split("-", 1)[-1].replace(".", ":")
    for at, route in log.objects.get(obj, ()):
        if start < at and (route == pid or (route == 0 and at < end)):
            return "vfsd" if route == 0 else "vfsd-route"
    for at, peer in log.lost.get(wire, ()):
        if start < at < end and born.get(peer, end) < death:
            return "peer"
    w = obj.split(":")[0]
    if w.isdigit():
        vfsd = log.incs.get(int(w) >> 48)
        if log.deaths.get(("vfsd", vfsd), end) < end:
            return "vfsd-died"
    return None


def chaos_account(text):
    """chaos's accounting of every grant's end from stack.log text, read
    in one pass (ChaosLog): (the failures, each a sentence naming the
    request, grant and object; the ChaosLog; the powerboxd spans; the
    count of each kind of record grant_end_record found, None for none)
    for chaos_records. A grant-end line without object-id, an approved
    decision without grant= and object-id=, and an approved grant of the
    latest powerboxd without a grant-end line are failures too."""
    log = ChaosLog(text)
    born = {pid: pos for pos, _, pid in log.starts}
    bad, how, spans = [], {}, log.spans()
    for pid, lines in log.ends.items():
        for _, f in lines:
            if "object-id" not in f:
                bad.append(f"powerboxd[{pid}]'s grant-end line of grant "
                           f"{f.get('grant')} has no object-id")
    for span in spans:
        pid = span[0]
        ended = {f.get("grant") for _, f in log.ends.get(pid, ())}
        for d in log.approved.get(pid, ()):
            f = d[1]
            if "grant" not in f or "object-id" not in f:
                bad.append(f"powerboxd[{pid}]'s approved decision of "
                           f"request {f.get('request')} names no grant= "
                           f"and object-id=")
            elif f["grant"] in ended:
                continue
            elif pid == spans[-1][0]:
                bad.append(f"the latest powerboxd[{pid}]'s approved request "
                           f"{f['request']} (grant {f['grant']}) has no "
                           f"grant-end line although no grant is in use")
            else:
                rec = grant_end_record(log, span, d, born)
                how[rec] = how.get(rec, 0) + 1
                if rec is None:
                    bad.append(f"powerboxd[{pid}] died with request "
                               f"{f['request']} grant {f['grant']} object "
                               f"{f['object-id']} approved, no grant-end "
                               f"line and no record of its end (vfsd, "
                               f"peer or its vfsd's death)")
    return bad, log, spans, how


def latest_unended(text):
    """The grants the latest powerboxd in stack.log text approved and
    logged no grant-end of."""
    pid = latest_pids(text).get("powerboxd")
    mine = "\n".join(l for l in text.splitlines()
                     if f" powerboxd[{pid}]: " in l)
    approved = {e.get("grant") for e in log_events(mine, "decision")
                if e.get("outcome") == "approved"}
    return approved - {e.get("grant") for e in log_events(mine, "grant-end")}


def chaos_records(u, kills):
    """Every grant's end is on record (see the docstring list and
    chaos_account): every grant-end line names its object, each dead
    powerboxd's approved grants without a grant-end line have a record of
    their end, the latest powerboxd's all ended, no log line dropped, and
    (at 20 kills or more) some grant ended by a loss."""
    # The latest powerboxd's grant-end lines reach stack.log through pbx
    # up a moment after its grants are gone from the peers and its usage
    # report: wait (bounded) until each approved grant's end is there.
    wait_for(lambda: latest_unended(u.text()) == set(),
             f"chaos: the latest powerboxd's approved grants "
             f"{sorted(latest_unended(u.text()))} have no grant-end line",
             15.0)
    t0 = time.monotonic()
    bad, log, spans, how = chaos_account(u.text())
    took = time.monotonic() - t0
    if not log.drops or any(log.drops) or log.noted:
        fail(f"chaos: log lines dropped: usage reports' log_dropped "
             f"{log.drops}, or a dropped-lines note in stack.log")
    if bad:
        fail(f"chaos: {len(bad)} grant record failure(s): "
             + "; ".join(bad[:6]))
    losses = sum(1 for lines in log.ends.values() for _, f in lines
                 if f.get("end") == "lost") + \
        sum(len(v) for v in log.lost.values())
    if kills >= 20 and losses == 0:
        fail(f"chaos: no kill ended a grant by a loss (no end=lost line, no "
             f"peer broker-lost line) in {kills} kills")
    print(f"run: chaos: {len(spans)} powerboxd incarnation(s): the approved "
          f"grants of dead ones without a grant-end line each have a "
          f"record of their end {how} (vfsd: RETIRE/HANG-UP of the object; "
          f"vfsd-route: vfsd's RETIRE on that powerboxd's route; peer: a "
          f"broker-lost line naming the grant; vfsd-died: its minting vfsd "
          f"died); every grant-end line names its object-id; {losses} loss "
          f"record(s) in all; log_dropped 0 in {len(log.drops)} usage "
          f"report(s); accounted in {took:.2f} s")


def chaos_objects(u, installs):
    """No object outlived its grant during the run: an install-mode job
    whose grant ended by a loss (an `end=lost` grant-end line of its job,
    or launchd's broker-lost line naming it) stamped more than 0.2 s
    before its second read began (the "go") must have failed that read.
    Job ids are launchd's and may come again after a launchd restart, so
    only records stamped within the job's own life count."""
    text = u.text()
    ends = [(stamp_of(l), e) for l in text.splitlines()
            if "]: event=grant-end " in l
            for e in [dict(w.split("=", 1) for w in
                           l.split("]: ", 1)[1].split() if "=" in w)]]
    lost_l = [(stamp_of(l), m.group(1)) for l in text.splitlines()
              for m in [re.search(r" launchd: grant \S+ of job (\d+\.\d+) "
                                  r"ended: broker lost$", l)] if m]
    checked, outlived = 0, []
    for rec in installs:
        if rec["job"] is None or rec["go"] is None:
            continue
        checked += 1
        job, lo, hi = rec["job"], rec["spawn"], rec["go"] - 0.2
        lost = [t for t, e in ends if e.get("job") == job and
                e.get("end") == "lost" and lo <= t < hi] + \
            [t for t, j in lost_l if j == job.replace(":", ".") and
             lo <= t < hi]
        if lost and (rec["rc"] == 0 or "read again: ok" in rec["err"]):
            outlived.append((job, rec["rc"], rec["err"].strip()[-200:]))
    if outlived:
        fail(f"chaos: {len(outlived)} install-mode job(s) read through their "
             f"object after its grant was recorded lost: {outlived[:3]}")
    print(f"run: chaos: {checked} install-mode jobs checked: none read "
          f"through its object after its grant was recorded lost")
