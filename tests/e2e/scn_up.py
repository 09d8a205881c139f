"""e2e scenarios (tests/e2e/run.py) of `pbx up` and its supervisor: up,
up-restart, up-backoff, restart-during-restart and grants-cli."""
import calendar
import fcntl
import hashlib
import os
import re
import signal
import subprocess
import time

from e2e_harness import fail, key_values, read_rows, wait_for
from e2e_jobs import Shell
from e2e_up import chaos_quiet, gone, latest_pids, Starts, Up, UP_LINE, UpJobs


# The PBX1 pools `pbx up` sizes for a table of 1,024 live grants plus the
# default geometry's room (tools/pbx/pbx_up_stack.c, issue 23 item 3).
UP_GRANT_POOLS = ("requests", "grants", "policies", "decisions",
                  "resolutions", "notifications")


def up_holds_1000_grants(u):
    """powerboxd's usage report under pbx up: every pool a live grant or a
    lifecycle keeps a record in holds 1,152 (1,024 live grants and 128
    beside them) and there are 1,472 transient slots (a procd handle for
    each of 1,024 grants and 448 beside them)."""
    # Imported here: scn_chaos imports this module.
    from scn_chaos import usage  # pylint: disable=import-outside-toplevel
    _, pools, _, line = usage(u, "up")
    caps = {k: pools[k][1] for k in UP_GRANT_POOLS + ("tslots",)}
    want = dict({k: 1152 for k in UP_GRANT_POOLS}, tslots=1472)
    if caps != want:
        fail(f"up: pbx up's PBX1 does not hold 1,024 grants: {line}")
    print(f"run: pbx up's pools hold 1,024 live grants: {line}")


def up(bin_dir, work):
    """pbx up: ready line, a lifecycle, a second pbx up refused naming the
    holder, SIGTERM stops all (a held job too), exit 0, lock free."""
    u = Up(bin_dir, work)
    try:
        u.out.flush()
        if f"pbx up: ready in {u.dir}" not in open(u.out.name).read():
            fail("pbx up printed no readiness line")
        procs = u.stack()
        if len(procs) != 5:
            fail(f"pbx up runs {procs}, not the five stack processes")
        u.lifecycle("up")
        up_holds_1000_grants(u)
        for name in ("vfsd", "ttyd", "procd", "launchd", "powerboxd"):
            if f" up[{u.proc.pid}]: {name}[{procs[name]}] started: " not in \
                    u.text():
                fail(f"stack.log has no start line of {name}")
        # vfsd's lines reach stack.log through pbx up's relay a moment
        # after the lifecycle ended: wait for its RESOLVE line, bounded.
        u.wait_log(f" vfsd[{procs['vfsd']}]: vfsd: RESOLVE found object",
                   "up: vfsd's stderr is not in stack.log under its name "
                   "and pid")
        text = u.text()
        bad = [l for l in text.splitlines() if not UP_LINE.match(l)]
        if bad:
            fail(f"stack.log lines without the time name[pid] prefix: "
                 f"{bad[:3]}")
        second = subprocess.run(
            [os.path.join(bin_dir, "pbx"), "up", "--dir", u.dir],
            capture_output=True, text=True, check=False, timeout=30)
        if second.returncode != 1 or \
                f"pid {u.proc.pid}" not in second.stderr:
            fail(f"a second pbx up on {u.dir} was not refused naming pid "
                 f"{u.proc.pid}: rc {second.returncode} {second.stderr!r}")
        print(f"run: second pbx up refused: {second.stderr.strip()}")
        launcher, job = u.held_job()
        u.stop()
        gone(list(procs.values()) + [job], "after SIGTERM")
        launcher.wait(timeout=10)
        with open(os.path.join(u.dir, "lock"), "w") as f:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        if "stopped (exit 0)" not in u.text():
            fail("stack.log does not record the stop")
        print(f"run: SIGTERM: exit 0; the five stack processes and held job "
              f"{job} gone; {u.dir}/lock free")
    finally:
        u.close()


def log_time(text, line):
    """The time (s since the epoch) of the first stack.log line holding
    line."""
    for l in text.splitlines():
        if line in l:
            stamp = time.strptime(l.split(".", 1)[0], "%Y-%m-%dT%H:%M:%S")
            return calendar.timegm(stamp) + int(l[20:23]) / 1000.0
    fail(f"no '{line}' in stack.log")


def broker_restarted(u, old, since, what):
    """Waits until stack.log (after offset since) shows powerboxd[old]'s
    death and powerboxd restarted alone: the 0.5 s plan, the new
    powerboxd's start and readiness, its fresh routes handed to the
    running peers (each peer's attach line), and no whole-stack restart;
    returns the new powerboxd's pid."""
    u.wait_log(f"powerboxd[{old}] killed unexpectedly by signal 9 (KILL)",
               what)
    pat = re.compile(r" up\[\d+\]: powerboxd\[(\d+)\] restarted with fresh "
                     r"routes to the peers")
    wait_for(lambda: pat.search(u.text()[since:]),
             f"{what}: powerboxd never restarted with fresh routes", 20.0)
    new = int(pat.search(u.text()[since:]).group(1))
    # The peers' attach lines are relayed from their pipes by pbx up, a
    # moment after its own `restarted with fresh routes` line may be
    # written: wait for every line, bounded.
    lines = ("restarting powerboxd alone in 500 ms (restart 1 within 60 s)",
             f"powerboxd[{new}] started: ",
             f"powerboxd[{new}] ready on {u.dir}/public.sock",
             f"vfsd: attach channel: route pair made for pid {new} (",
             f"vfsd: route from pid {new}: its RESOLVEs are served",
             "ttyd: attach channel: route(s) adopted",
             "procd: attach channel: route(s) adopted",
             "launchd: attach channel: route(s) adopted")
    missing = lambda: [l for l in lines if l not in u.text()[since:]]
    wait_for(lambda: not missing(), f"{what}: no {missing()} in stack.log "
             f"after powerboxd's death", 10.0)
    text = u.text()[since:]
    for line in ("restarting the whole stack", "stack ready again"):
        if line in text:
            fail(f"{what}: stack.log says '{line}'")
    gone([old], f"{what}: the old powerboxd")
    return new


def up_restart(bin_dir, work):
    """pbx up restarts a dead peer alone and attaches its new route(s):
    kill -9 of vfsd, then of launchd with a job running (killed as an
    orphan), each restarted after the 0.5 s backoff with its routes
    accepted by the same powerboxd; then kill -9 of powerboxd restarts
    powerboxd alone with fresh routes handed to the four peers, which keep
    their pids. A lifecycle succeeds after each; stack.log shows each
    start, exit, restart and attach answer."""
    u = Up(bin_dir, work)
    try:
        u.lifecycle("up-restart")
        first = u.stack()
        os.kill(first["vfsd"], signal.SIGKILL)
        died = f"vfsd[{first['vfsd']}] killed unexpectedly by signal 9 (KILL)"
        u.wait_log(died, "vfsd killed")
        u.wait_log("restarting vfsd alone in 500 ms (restart 1", "vfsd")
        u.wait_log("attach vfsd route of pid ", "vfsd attach")
        u.wait_log("] restarted and attached", "vfsd restart")
        text = u.text()
        started = re.findall(r" up\[\d+\]: vfsd\[(\d+)\] started: ", text)
        if len(started) != 2:
            fail(f"stack.log shows {len(started)} starts of vfsd, not 2")
        waited = (log_time(text, f"vfsd[{started[1]}] started") -
                  log_time(text, died))
        if waited < 0.5:
            fail(f"restarted {waited:.3f} s after the death, before the "
                 f"0.5 s backoff")
        if f"attach vfsd route of pid {started[1]}: accepted" not in text:
            fail("the new vfsd's route was not accepted by powerboxd")
        # The new vfsd's own ready line is relayed from its pipe, maybe
        # after pbx up's `restarted and attached`: wait for it, bounded.
        u.wait_log(f" vfsd[{started[1]}]: vfsd: ready: ",
                   "up-restart: the new vfsd's ready line")
        text = u.text()
        incs = dict(re.findall(
            r" vfsd\[(\d+)\]: vfsd: ready: .*, incarnation (\d+)", text))
        was, now = incs.get(str(first["vfsd"])), incs.get(started[1])
        if was is None or now is None or was == now:
            fail(f"the restarted vfsd's incarnation {now} is not another "
                 f"than the first one's {was}")
        print(f"run: vfsd incarnation {was}, restarted as {now}")
        gone([first["vfsd"]], "after vfsd's restart")
        u.lifecycle("after vfsd's restart")
        second = u.stack()
        if second["powerboxd"] != first["powerboxd"]:
            fail("powerboxd was restarted for a vfsd death")
        launcher, job = u.held_job()
        os.kill(second["launchd"], signal.SIGKILL)
        u.wait_log(f"launchd[{second['launchd']}] killed unexpectedly by "
                   f"signal 9 (KILL)", "launchd killed")
        u.wait_log("restarting launchd alone in 500 ms (restart 1",
                   "launchd")
        u.wait_log("attach broker route of pid ", "launchd attach")
        died = (f"launchd[{second['launchd']}] killed unexpectedly by "
                f"signal 9 (KILL)")
        _, _, m = found_line(u, u.text().find(died), r" up\[\d+\]: launchd\[(\d+)\] "
                             r"restarted and attached", "launchd restart",
                             15.0)
        gone([second["launchd"], job], "after launchd's restart")
        launcher.wait(timeout=10)
        text = u.text()
        waited = (log_time(text, f"launchd[{m.group(1)}] started") -
                  log_time(text, died))
        # Stamps cut to the millisecond: 2 ms of rounding (up-backoff).
        if waited < 0.5 - 0.002:
            fail(f"launchd restarted {waited:.3f} s after its death, before "
                 f"the 0.5 s backoff")
        for route in ("wake", "broker"):
            if f"attach {route} route of pid {m.group(1)}: accepted" not in \
                    text:
                fail(f"launchd's new {route} route was not accepted")
        u.lifecycle("after launchd's restart")
        third = u.stack()
        since = len(u.text())
        os.kill(third["powerboxd"], signal.SIGKILL)
        fresh = broker_restarted(u, third["powerboxd"], since, "up-restart")
        fourth = u.stack()
        peers = {n: p for n, p in third.items() if n != "powerboxd"}
        if {n: fourth.get(n) for n in peers} != peers or \
                fourth.get("powerboxd") != fresh:
            fail(f"up-restart: after powerboxd's restart the stack is "
                 f"{fourth}; the peers were {peers}, the new powerboxd "
                 f"{fresh}")
        u.lifecycle("after powerboxd's restart")
        u.stop()
        gone(list(fourth.values()), "after SIGTERM")
        print(f"run: kill -9 of vfsd, then of launchd (its job killed): each "
              f"restarted alone after 0.5 s, its routes attached to the same "
              f"powerboxd; kill -9 of powerboxd[{third['powerboxd']}]: "
              f"powerboxd[{fresh}] restarted alone with fresh routes, the "
              f"four peers kept their pids {peers}; a lifecycle after each; "
              f"every start, exit, restart and attach logged")
    finally:
        u.close()


def up_backoff(bin_dir, work):
    """pbx up's backoff and give-up: vfsd killed as soon as each restart
    attached; see the docstring list."""
    u = Up(bin_dir, work)
    try:
        launcher, job = u.held_job()
        first = u.stack()
        pid, gaps = first["vfsd"], []
        for k in range(1, 7):
            since = len(u.text())
            os.kill(pid, signal.SIGKILL)
            died = f"vfsd[{pid}] killed unexpectedly by signal 9 (KILL)"
            u.wait_log(died, f"up-backoff: kill {k}")
            if k == 6:
                break
            delay = 500 << (k - 1)
            plan = (f"restarting vfsd alone in {delay} ms (restart {k} "
                    f"within 60 s)")
            u.wait_log(plan, f"up-backoff: kill {k}")
            pat = re.compile(r" up\[\d+\]: vfsd\[(\d+)\] restarted and "
                             r"attached")
            wait_for(lambda: pat.search(u.text()[since:]),
                     f"up-backoff: vfsd never attached after kill {k}",
                     delay / 1000.0 + 10.0)
            text = u.text()
            new = int(pat.search(text[since:]).group(1))
            gap = log_time(text, f"vfsd[{new}] started: ") - \
                log_time(text, died)
            # Both stamps are cut to the millisecond, as is the monotonic
            # clock the supervisor plans by: 2 ms of rounding at most.
            if gap < delay / 1000.0 - 0.002:
                fail(f"up-backoff: vfsd[{new}] started {gap:.3f} s after "
                     f"kill {k}, sooner than the {delay} ms backoff")
            if gap >= delay / 1000.0 + 1.0:
                fail(f"up-backoff: vfsd[{new}] started {gap:.3f} s after "
                     f"kill {k}, a second or more past the {delay} ms "
                     f"backoff")
            gaps.append((delay, round(gap, 3)))
            pid = new
        u.wait_log("giving up: vfsd died again after 5 restarts within 60 s",
                   "up-backoff: the sixth kill")
        try:
            rc = u.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            fail("up-backoff: pbx up still runs 15 s after giving up")
        if rc != 1:
            fail(f"up-backoff: pbx up exited {rc} after giving up, not 1")
        plans = re.findall(r"restarting (\w+) alone in (\d+) ms", u.text())
        if plans != [("vfsd", str(500 << k)) for k in range(5)]:
            fail(f"up-backoff: restarts planned {plans}, want vfsd's five")
        rest = [p for n, p in first.items() if n != "vfsd"]
        gone(rest + [pid, job], "up-backoff: after giving up")
        launcher.wait(timeout=10)
        print(f"run: up-backoff: vfsd's restarts (backoff ms, measured s "
              f"from its death to the new start): {gaps}; the sixth kill: "
              f"'giving up', pbx up exit 1, the stack processes and held "
              f"job {job} gone")
    finally:
        u.close()


def stamp_of(line):
    """The time (s since the epoch) a stack.log line is stamped with."""
    stamp = time.strptime(line.split(".", 1)[0], "%Y-%m-%dT%H:%M:%S")
    return calendar.timegm(stamp) + int(line[20:23]) / 1000.0


def found_line(u, since, pattern, what, seconds):
    """Waits (bounded) for the first stack.log line after byte offset
    since that pattern (a regular expression) matches; returns (its
    offset in the log, its stamp, the match)."""
    pat = re.compile(pattern)
    got = []

    def seen():
        text = u.text()
        m = pat.search(text, since)
        if m:
            start = text.rfind("\n", 0, m.start()) + 1
            got[:] = [(start, stamp_of(text[start:]), m)]
        return bool(m)
    wait_for(seen, f"{what}: no line /{pattern}/ in stack.log", seconds)
    return got[0]


def children(pid):
    """The pids of pid's children now (its main thread's, from /proc)."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children", encoding="ascii") as f:
            return {int(w) for w in f.read().split()}
    except OSError:
        return set()


def kill_mid_restart(u, first, victim, what, hold=None):
    """Kills first (name, pid) and, as soon as stack.log shows the
    supervisor's `started` line of its successor, kill -9 victim (name,
    pid). The successor is stopped (SIGSTOP) as soon as it appears as pbx
    up's child (followed every 0.2 ms, before its start line is read) and
    continued 0.3 s after victim's kill, so that the supervisor is surely
    still inside the successor's restart (waiting for its readiness) when
    victim dies. hold (a pid, or None) is stopped before the first kill
    and continued with the successor: powerboxd's successor becomes ready
    within a millisecond of its start, so holding vfsd, whose route pair
    its start waits for, keeps the supervisor inside the restart however
    late the successor is caught. Returns (the successor's pid, the byte
    offset before the first kill)."""
    starts = Starts(u)
    held = None
    try:
        if hold is not None:
            os.kill(hold, signal.SIGSTOP)
        mark = starts.size()
        known = children(u.proc.pid)
        os.kill(first[1], signal.SIGKILL)
        deadline = time.monotonic() + 10.0
        while held is None and time.monotonic() < deadline:
            new = children(u.proc.pid) - known
            for pid in new:
                os.kill(pid, signal.SIGSTOP)
                held = pid
            time.sleep(0.0002)
        if held is None:
            fail(f"{what}: pbx up started no process within 10 s of the "
                 f"kill of {first[0]}[{first[1]}]")
        name, pid = starts.next_after(mark, 10.0)
        if (name, pid) != (first[0], held):
            fail(f"{what}: {name}[{pid}] started first after the kill of "
                 f"{first[0]}[{first[1]}], child {held} held")
        os.kill(victim[1], signal.SIGKILL)
        time.sleep(0.3)
    finally:
        if held is not None:
            os.kill(held, signal.SIGCONT)
        if hold is not None:
            os.kill(hold, signal.SIGCONT)
        starts.f.close()
    return held, mark


def planned_at_once(u, since, victim, restarting, what):
    """victim (name, pid) died while restarting (name, pid) was being
    restarted (its death line before restarting's `restarted` line, if
    any), and its restart was planned within 1.5 s of that death line.
    Returns the death line's stamp."""
    name, pid = victim
    at, died, _ = found_line(
        u, since, rf" {name}\[{pid}\] killed unexpectedly by signal 9 ",
        what, 10.0)
    done = re.search(rf" {restarting[0]}\[{restarting[1]}\] restarted ",
                     u.text()[since:])
    if done and since + done.start() < at:
        fail(f"{what}: {name} died after {restarting[0]}'s restart was done: "
             f"the kill missed the restart")
    plan = re.compile(rf" up\[\d+\]: restarting {name} alone in 500 ms "
                      rf"\(restart 1 within 60 s\)")
    try:
        _, planned, _ = found_line(u, at, plan.pattern, what, 3.0)
    except SystemExit:
        tail = u.text()[since:]
        fail(f"{what}: the death of {name}[{pid}] during {restarting[0]}'s "
             f"restart was never planned (no 'restarting {name} alone in "
             f"500 ms' within 3 s); stack.log since the first kill:\n{tail}")
    if planned - died > 1.5:
        fail(f"{what}: {name}'s restart planned {planned - died:.3f} s after "
             f"its death, not within 1.5 s")
    return died


def restart_during_restart(bin_dir, work):
    """A process that dies while another is being restarted is planned
    at once and restarted: see the docstring list."""
    u = Up(bin_dir, work)
    what = "restart-during-restart"
    try:
        first = u.stack()
        # launchd's restart, vfsd killed during it.
        # powerboxd held: launchd's restart waits for its ROUTE_ATTACH
        # answer, so the kill lands inside the restart however late the
        # successor is caught (on a loaded machine it once did not).
        launchd, since = kill_mid_restart(
            u, ("launchd", first["launchd"]), ("vfsd", first["vfsd"]),
            f"{what} (launchd)", hold=first["powerboxd"])
        died = planned_at_once(u, since, ("vfsd", first["vfsd"]),
                               ("launchd", launchd), what)
        _, back, m = found_line(u, since, r" up\[\d+\]: vfsd\[(\d+)\] "
                                r"restarted and attached", what, 6.0)
        if back - died > 5.0:
            fail(f"{what}: vfsd restarted and attached {back - died:.3f} s "
                 f"after its death, not within 5 s")
        vfsd = int(m.group(1))
        found_line(u, since, rf" up\[\d+\]: launchd\[{launchd}\] restarted "
                   r"and attached", what, 5.0)
        gone([first["launchd"], first["vfsd"]], what)
        now = u.stack()
        if now != dict(first, launchd=launchd, vfsd=vfsd):
            fail(f"{what}: the stack is {now}; want launchd[{launchd}] and "
                 f"vfsd[{vfsd}] with the others of {first}")
        u.lifecycle(f"{what}: after launchd's and vfsd's restarts")
        # powerboxd's restart, ttyd killed during it.
        broker, since = kill_mid_restart(
            u, ("powerboxd", now["powerboxd"]), ("ttyd", now["ttyd"]),
            f"{what} (powerboxd)", hold=now["vfsd"])
        planned_at_once(u, since, ("ttyd", now["ttyd"]),
                        ("powerboxd", broker), what)
        wait_for(lambda: chaos_quiet(u) and ttyd_routed(u),
                 f"{what}: the stack was not whole again (ttyd routed to "
                 f"the latest powerboxd) within 10 s of ttyd's death:\n"
                 f"{u.text()[since:]}", 10.0)
        gone([now["powerboxd"], now["ttyd"]], what)
        last = u.stack()
        print(f"run: {what}: vfsd[{first['vfsd']}] killed during launchd's "
              f"restart: planned at once, vfsd[{vfsd}] and launchd[{launchd}] "
              f"restarted and attached; ttyd[{now['ttyd']}] killed during "
              f"powerboxd[{broker}]'s restart: planned at once, the stack "
              f"whole again {last}")
        u.lifecycle(f"{what}: after powerboxd's and ttyd's restarts")
        u.stop()
    finally:
        u.close()


def ttyd_routed(u):
    """Whether the latest ttyd has a route to the latest powerboxd: its
    route accepted by that powerboxd (ROUTE_ATTACH), or that powerboxd
    restarted with fresh routes after the ttyd started and the ttyd
    adopted them."""
    text = u.text()
    latest = latest_pids(text)
    ttyd, broker = latest.get("ttyd"), latest.get("powerboxd")
    if f" powerboxd[{broker}]: event=route-attach route=ttyd pid={ttyd} " \
            f"outcome=accepted" in text:
        return True
    born = text.find(f" ttyd[{ttyd}] started: ")
    fresh = text.find(f" powerboxd[{broker}] restarted with fresh routes")
    return 0 <= born < fresh and \
        f" ttyd[{ttyd}]: ttyd: attach channel: route(s) adopted" in text


def ttyd_escaped(sel):
    """sel (str) as ttyd lists a selector: every byte outside 0x21..0x7E,
    and backslash, as \\xNN."""
    return "".join(chr(b) if 0x20 < b <= 0x7E and b != 0x5C else
                   f"\\x{b:02x}" for b in sel.encode())


def grants_cli(bin_dir, work):
    """`pbx grants`, `pbx cancel` and `pbx log` on the stack `pbx up`
    runs (standalone), so DIR/stack.log is the real log. The job (81:1,
    a launched shell that outlives its clients) holds two job-lifetime
    grants the policy allowed (no prompt) until the user cancels one and
    the job's end expires the other; a third, one-shot, it consumes."""
    u = Up(bin_dir, work)
    pbx = os.path.join(bin_dir, "pbx")

    def cmd(*args):
        out = subprocess.run([pbx] + list(args) + ["--dir", u.dir],
                             capture_output=True, text=True, check=False,
                             timeout=30, stdin=subprocess.DEVNULL)
        return out.returncode, out.stdout, out.stderr

    def grants():
        rc, out, err = cmd("grants", "--format", "kv")
        if rc != 0:
            fail(f"grants-cli: pbx grants exited {rc}: {err}")
        rows = [key_values(l.replace(" ", "\n")) for l in out.splitlines()]
        return {r.get("grant"): r for r in rows}, out

    try:
        with open(os.path.join(u.root, "docs", "my notes.txt"), "w",
                  encoding="utf-8") as f:
            f.write("notes\n")
        job = Shell(UpJobs(u), "81:1", entry="bin/grants-demo")
        sels = {61: "docs/readme.txt", 62: "docs/my notes.txt"}
        made = {}
        for slot, sel in sels.items():
            rc, kv = job.request("--selector", sel, "--lifetime", "job",
                                 "--urgency", "routine", "--slot", str(slot),
                                 "--label", f"doc{slot}")
            if rc != 0 or kv.get("outcome") != "approved":
                fail(f"grants-cli: slot {slot}: {kv}")
            # The job sees the wire id; pbx and the log prefix the
            # incarnation: 1, this stack's first powerboxd.
            made[slot] = "1-" + kv["grant"]
        # pbx grants takes each exact selector from powerboxd's decision
        # line, which pbx up relays to stack.log a moment after the
        # approval: wait (bounded) until both rows name theirs from it.
        wait_for(lambda: all(grants()[0].get(g, {}).get("selector-from") ==
                             "log" for g in made.values()),
                 f"grants-cli: pbx grants never took both selectors from "
                 f"stack.log:\n{grants()[1]}", 10.0)
        listed, out = grants()
        if set(listed) != set(made.values()):
            fail(f"grants-cli: pbx grants listed {sorted(listed)}, want "
                 f"{sorted(made.values())}:\n{out}")
        for slot, g in made.items():
            sel = sels[slot]
            want = {"program": "bin/grants-demo", "job": "81:1",
                    "op": "read", "lifetime": "job", "label": f"doc{slot}",
                    "selector": ttyd_escaped(sel), "selector-from": "log",
                    "digest": hashlib.sha256(sel.encode()).hexdigest()}
            r = listed[g]
            if any(r.get(k) != v for k, v in want.items()) or \
                    not r.get("since", "").endswith("Z"):
                fail(f"grants-cli: row of grant {g}: {r}, want {want}")
        rc, table, err = cmd("grants")
        if rc != 0 or not table.startswith("GRANT") or \
                ttyd_escaped(sels[62]) not in table or \
                " 81:1 " not in table or \
                "(label)" in table or "digest only" in table:
            fail(f"grants-cli: pbx grants table:\n{table}{err}")
        print(f"run: pbx grants lists grants {made[61]} and {made[62]} "
              f"(policy-allowed, no prompt) with their exact selectors "
              f"from stack.log's decision lines, by digest:\n{table}",
              end="")
        rc, kv = job.request("--lifetime", "one-shot", "--urgency",
                             "routine", "--slot", "63", "--then", "consume")
        if rc != 0 or kv.get("consume") != "accepted":
            fail(f"grants-cli: one-shot consume: {kv}")
        used = "1-" + kv["grant"]
        gone, kept = made[61], made[62]
        rc, out, err = cmd("cancel", gone)
        if rc != 0 or f"grant {gone} cancelled" not in out:
            fail(f"grants-cli: pbx cancel {gone}: rc {rc} {out}{err}")
        procd = os.path.join(u.dir, "procd.sock")
        ttyd = os.path.join(u.dir, "ttyd.sock")
        slots = lambda s: [r for r in read_rows(procd) if f" slot {s} " in r]
        wait_for(lambda: slots(61) == [] and len(slots(62)) == 1,
                 f"grants-cli: procd holds {read_rows(procd)}")
        wait_for(lambda: ["1-" + r.split()[1] for r in read_rows(ttyd)] ==
                 [kept],
                 f"grants-cli: ttyd shows {read_rows(ttyd)}")
        if set(grants()[0]) != {kept}:
            fail(f"grants-cli: pbx grants after the cancel: {grants()[1]}")
        rc, _, _ = cmd("cancel", gone)
        if rc != 1:
            fail(f"grants-cli: a second cancel of {gone} exited {rc}")
        rc, _, _ = cmd("cancel", "x.y")
        if rc != 2:
            fail(f"grants-cli: a bad grant ID exited {rc}")
        print(f"run: pbx cancel {gone}: revoked at procd, gone from ttyd; "
              f"grant {kept} still live; a second cancel refused (exit 1)")
        if job.close() != 0:
            fail("grants-cli: the job's shell failed")
        ends = {gone: "cancelled by the user",
                used: "consumed by the program",
                kept: "expired (its job or invocation ended)"}

        last = [""]

        def ended():
            rc, out, _ = cmd("log")
            last[0] = out
            got = {}
            for l in out.splitlines():
                m = re.match(r"\S+ grant (\d+-\d+\.\d+) \(bin/grants-demo, "
                             r"job 81:1, read (\S+), \S+\): (.*)$", l)
                if m:
                    got[m[1]] = (m[2], m[3])
            return rc == 0 and all(got.get(g, ("", ""))[1] == how
                                   for g, how in ends.items())
        deadline = time.monotonic() + 10.0
        while not ended():
            if time.monotonic() > deadline:
                fail(f"grants-cli: pbx log on stack.log, want {ends}:\n"
                     f"{last[0]}")
            time.sleep(0.1)
        rc, out, _ = cmd("log", "--format", "kv")
        kv = [key_values(l.replace(" ", "\n")) for l in out.splitlines()]
        by = {r.get("grant", ""): r for r in kv}
        if rc != 0 or by[gone].get("by") != "user" or \
                by[used].get("by") != "program" or \
                by[gone].get("object") != "docs/readme.txt" or \
                by[kept].get("object") != "docs/my%20notes.txt":
            fail(f"grants-cli: pbx log --format kv:\n{out}")
        print(f"run: pbx log on {u.log}: {gone} cancelled by the user, "
              f"{used} consumed by the program, {kept} expired")
        wait_for(lambda: read_rows(ttyd) == [] and read_rows(procd) == [],
                 "grants-cli: rows left")
        u.stop()
    finally:
        u.close()
