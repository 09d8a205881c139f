"""The e2e scenario route-hijack (tests/e2e/run.py): a sandboxed program
that tries to take over the stack's routes across restarts."""
import os
import re
import signal
import stat
import subprocess
import time

from e2e_harness import descendants, fail, proc_table, wait_for
from e2e_up import proc_comm, Up


# route-hijack: how many times each of vfsd and powerboxd is killed (and
# restarted by pbx up) while foreign programs try to become vfsd's route.
HIJACK_RESTARTS = 20
# ... and how many times launchd is (its jobs, the sandboxed foreign
# program included, die with it).
HIJACK_LAUNCHD_RESTARTS = 5


def hijack_last(path):
    """The key=value fields of the last whole line pbx-test-hijack wrote
    to path ({} when none)."""
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = [l for l in f.read().split("\n")[:-1] if l.startswith("round=")]
    return dict(w.split("=", 1) for w in lines[-1].split()) if lines else {}


def hijack_restart(u, name, what):
    """Kills stack process name with SIGKILL and waits (20 s) until pbx up
    logged its restart (powerboxd: with fresh routes; a peer: attached to
    the running powerboxd); returns the new pid."""
    old = u.stack()[name]
    since = len(u.text())
    os.kill(old, signal.SIGKILL)
    tail = "with fresh routes to the peers" if name == "powerboxd" else \
        "and attached"
    pat = re.compile(rf" up\[\d+\]: {name}\[(\d+)\] restarted {tail}")
    wait_for(lambda: pat.search(u.text()[since:]),
             f"{what}: {name}[{old}] never restarted {tail}", 20.0)
    return int(pat.search(u.text()[since:]).group(1))


def hijack_routes(u, what):
    """Every route vfsd served RESOLVE on (its `route from pid N` lines in
    stack.log) names a powerboxd pbx up started; returns how many."""
    want = 2 * HIJACK_RESTARTS + 1
    # vfsd's route lines reach stack.log through pbx up a moment after
    # the restart they follow: wait (bounded) until the restarts' are in.
    count = lambda: len(re.findall(r" vfsd\[\d+\]: vfsd: route from pid "
                                   r"\d+: its RESOLVEs are served",
                                   u.text()))
    try:
        wait_for(lambda: count() >= want, "", 10.0)
    except SystemExit:
        pass  # the failure below counts them
    text = u.text()
    pbx = set(re.findall(r" up\[\d+\]: powerboxd\[(\d+)\] started: ", text))
    routes = re.findall(r" vfsd\[\d+\]: vfsd: route from pid (\d+): its "
                        r"RESOLVEs are served", text)
    foreign = sorted(set(r for r in routes if r not in pbx))
    if foreign:
        fail(f"{what}: vfsd served RESOLVE on routes of pids {foreign}, "
             f"none of them a powerboxd (powerboxds: {sorted(pbx)})")
    if len(routes) < want:
        fail(f"{what}: {len(routes)} routes, fewer than the "
             f"{want} the restarts make")
    return len(routes)


def hijack_sandboxed(bin_dir, u, hj, work, k):
    """Starts pbx-test-hijack command hj as a job of `pbx run --sandbox`
    (its scope at fd 4), writing to work/hijack-sandboxed{k}.out; returns
    (the pbx run process, the open output file)."""
    out = open(os.path.join(work, f"hijack-sandboxed{k}.out"), "w+",
               encoding="utf-8")
    run = subprocess.Popen(
        [os.path.join(bin_dir, "pbx"), "--dir", u.dir, "run",
         "--sandbox", "--"] + hj[:1] + ["--scope-fd", "4"] + hj[1:],
        stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    return run, out


def route_hijack(bin_dir, work):
    """Foreign programs (two plain, one `pbx run --sandbox`) keep
    connecting to every socket of the stack, the old route listener's name
    included, sending RESOLVE-, INSTALL-, VIEW-, POLICY- and PROMPT-shaped
    frames and resolving through every scope they get, while vfsd and
    powerboxd are each killed and restarted HIJACK_RESTARTS times (ttyd
    and procd a fifth as often, launchd HIJACK_LAUNCHD_RESTARTS times,
    the sandboxed program started again after each); see the docstring
    list."""
    what = "route-hijack"
    u = Up(bin_dir, work, ["--restart-window-ms", "0"])
    plain, outs = [], []
    run = None
    try:
        # The directory's entry types (readdir's), so that a FUSE mount
        # point is never stat'ed.
        with os.scandir(u.dir) as it:
            socks = sorted(
                e.path for e in it if not e.is_dir(follow_symlinks=False) and
                stat.S_ISSOCK(e.stat(follow_symlinks=False).st_mode))
        scope = os.path.join(u.dir, "scope.sock")
        others = [p for p in socks if p != scope] + \
            [os.path.join(u.dir, "vfsd-route.sock")]
        hj = [os.path.join(bin_dir, "pbx-test-hijack"), "--scope", scope] + \
            others
        for i in range(2):
            outs.append(open(os.path.join(work, f"hijack{i}.out"), "w+",
                             encoding="utf-8"))
            plain.append(subprocess.Popen(
                hj, stdout=outs[i], stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL))
        run, out = hijack_sandboxed(bin_dir, u, hj, work, 0)
        outs.append(out)
        wait_for(lambda: all(hijack_last(f.name) for f in outs),
                 f"{what}: a foreign program never finished a round", 20.0)
        t0 = time.monotonic()
        every = HIJACK_RESTARTS // HIJACK_LAUNCHD_RESTARTS
        for i in range(HIJACK_RESTARTS):
            hijack_restart(u, "vfsd", what)
            hijack_restart(u, "powerboxd", what)
            # ttyd's and procd's routes too are only ever handed over.
            if i % 5 == 4:
                hijack_restart(u, "ttyd", what)
                hijack_restart(u, "procd", what)
            if i % every == every - 1:
                # launchd's death ends its jobs, the sandboxed program
                # with them: a new one is started and awaited.
                hijack_restart(u, "launchd", what)
                hijack_stop([], run)
                run, out = hijack_sandboxed(bin_dir, u, hj, work,
                                            i // every + 1)
                outs.append(out)
                wait_for(lambda: hijack_last(outs[-1].name),
                         f"{what}: the sandboxed foreign program never "
                         f"finished a round after launchd's restart", 20.0)
        took = time.monotonic() - t0
        # A round of each after the last restart, then they end.
        live = outs[:2] + outs[-1:]
        ends = [int(hijack_last(f.name)["round"]) + 1 for f in live]
        wait_for(lambda: all(int(hijack_last(f.name)["round"]) >= n
                             for f, n in zip(live, ends)),
                 f"{what}: a foreign program stopped making rounds", 20.0)
        hijack_check(u, plain, outs, what)
        print(f"run: {what}: vfsd and powerboxd each restarted "
              f"{HIJACK_RESTARTS} times, ttyd and procd "
              f"{HIJACK_RESTARTS // 5} times, launchd "
              f"{HIJACK_LAUNCHD_RESTARTS} times, in {took:.1f} s; "
              f"{hijack_routes(u, what)} routes, every one a powerboxd's")
        # The sandboxed job holds the stage a lone job gets (42:5), which
        # the lifecycle's job claims: it ends first.
        hijack_stop(plain, run)
        u.lifecycle(f"{what}: after the restarts")
        u.stop()
    finally:
        hijack_stop(plain, run)
        for f in outs:
            f.close()
        u.close()


def hijack_stop(plain, run):
    """Ends the foreign programs: the plain ones and the sandboxed job
    (by its command name below pbx run), then pbx run."""
    for p in plain:
        if p.poll() is None:
            p.kill()
        p.wait()
    if run is not None and run.poll() is None:
        for pid in descendants([run.pid]):
            if proc_comm(pid) == "pbx-test-hijack":
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        for pid in [p for p in proc_table()
                    if proc_comm(p) == "pbx-test-hijack"]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            run.wait(timeout=15)
        except subprocess.TimeoutExpired:
            run.kill()
            run.wait()


def hijack_check(u, plain, outs, what):
    """No foreign program ever got an object, a FOUND or a reply that is
    not a refusal; each plain one connected, got scopes and had its
    RESOLVEs refused by vfsd (logged naming its pid); each sandboxed one
    (outs[2:], one per launchd incarnation) connected or was refused a
    socket, never more."""
    for i, f in enumerate(outs):
        last = hijack_last(f.name)
        kind = f"sandboxed {i - 2}" if i >= 2 else f"plain {i}"
        if last.get("found") != "0" or last.get("objects") != "0":
            fail(f"{what}: the {kind} foreign program got authority: {last}")
        if last.get("replies_other") != "0":
            f.seek(0)
            said = [l for l in f.read().split("\n") if "not a refusal" in l]
            fail(f"{what}: the {kind} foreign program got replies that are "
                 f"not refusals: {last}; {said[:5]}")
        if i < 2 and (int(last["scopes"]) == 0 or
                      int(last["resolve_refused"]) == 0):
            fail(f"{what}: the {kind} foreign program never had a RESOLVE "
                 f"refused: {last}")
        if i >= 2 and int(last["connected"]) + \
                int(last["sockets_refused"]) == 0:
            fail(f"{what}: the sandboxed foreign program tried nothing: "
                 f"{last}")
        print(f"run: {what}: {kind} foreign program: {last}")
    # vfsd's refusal lines reach stack.log through pbx up a moment after
    # the refusals the programs counted: wait for each, bounded.
    for p in plain:
        u.wait_log(f"refused: sent by pid {p.pid}, not by the route's "
                   f"process", f"{what}: vfsd never logged refusing pid "
                   f"{p.pid}'s RESOLVE", 10.0)
