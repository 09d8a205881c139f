"""e2e scenarios (tests/e2e/run.py) of the broker side restarted under
pbx up: restart-launchd, restart-powerboxd and ids-across-restarts."""
import os
import re
import signal
import subprocess

from e2e_harness import fail, key_values, read_rows, wait_for
from e2e_up import proc_comm, Up
from scn_up import broker_restarted
from scn_restart import (ended, grants_listed, Holder, honest, log_events,
                         obj_reads, objects_of, Pane, restarted,
                         routine_policy)


def held_request(u):
    """A request begun and committed whose decision its client asks only
    when a line comes (pbx-client --then hold, job 15:1): in flight."""
    b = lambda n: os.path.join(u.bin_dir, "pbx-" + n)
    return subprocess.Popen(
        [b("launchd"), "run", "--control", os.path.join(u.dir, "launchd.sock"),
         "--session", "7", "--realm", "3", "--job", "15:1", "--entry",
         "bin/held", "--", b("client"), "request", "--scope",
         os.path.join(u.dir, "scope.sock"), "--selector", "docs/readme.txt",
         "--op", "read", "--class", "file", "--session", "7", "--realm",
         "3", "--lifetime", "one-shot", "--urgency", "routine", "--then",
         "hold"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)


def restart_launchd(bin_dir, work):
    """kill -9 of launchd with a job's live grant (its object copied to
    this process) and a request in flight."""
    os.makedirs(work, exist_ok=True)
    pane = Pane(work)
    u = None
    hs = []
    fd = -1
    try:
        u = Up(bin_dir, work, ["--tty", pane.tty, "--policy",
                                 routine_policy(work)])
        reply = Holder(u)
        hs.append(reply)
        g = reply.opened("restart-launchd")
        fd = reply.take("restart-launchd")
        if not obj_reads(bin_dir, fd):
            fail("restart-launchd: the copied object does not read")
        asking = Holder(u, exceptional=True)
        hs.append(asking)
        asking.launched("restart-launchd")
        wait_for(lambda: "Approve?" in pane.text(),
                 "restart-launchd: the prompt never showed", 10.0)
        old = u.stack()["launchd"]
        since = len(u.text())
        os.kill(old, signal.SIGKILL)
        new = restarted(u, "launchd", old, ["wake", "broker"], since)
        ended(u, since, reply.job, ("expired", "expire"), "restart-launchd")
        # powerboxd may decide the prompted request after it ends the
        # grant: wait (bounded) for its decision line too.
        decided = lambda: [e for e in log_events(u.text()[since:],
                                                 "decision")
                           if e.get("job") == asking.job]
        wait_for(decided, f"restart-launchd: no decision of job "
                 f"{asking.job} after launchd's death", 10.0)
        cancelled = decided()
        if [e.get("outcome") for e in cancelled] != ["cancelled"]:
            fail(f"restart-launchd: the prompted request ended {cancelled}")
        for h in (reply, asking):
            if h.end() == 0:
                fail("restart-launchd: the dead launchd's job was not ended")
        wait_for(lambda: "withdrawn" in pane.text(),
                 "restart-launchd: the pane never said the prompt was "
                 "withdrawn")
        wait_for(lambda: not obj_reads(bin_dir, fd),
                 "restart-launchd: the expired grant's object still reads")
        print(f"run: kill -9 of launchd[{old}]: the prompted request in "
              f"flight ended cancelled (withdrawn on the pane), grant {g} expired with its killed job and its "
              f"object reads no more; launchd[{new}] attached")
        honest(u, "after launchd's restart")
        u.stop()
    finally:
        if fd >= 0:
            os.close(fd)
        for h in hs:
            h.kill()
        if u is not None:
            u.close()
        pane.stop()


def broker_events(text, pid, event):
    """The key=value fields of powerboxd[pid]'s `event=EVENT` lines."""
    return log_events("\n".join(l for l in text.splitlines()
                                if f" powerboxd[{pid}]: " in l), event)


def peer_lines(text, name, pid, pattern):
    """The match groups of pattern in every stack.log line of name[pid]."""
    pat = re.compile(pattern)
    return [m.groups() for l in text.splitlines()
            if f" {name}[{pid}]: " in l for m in [pat.search(l)] if m]


def live_views(text, ttyd):
    """The grants (I.G) ttyd[ttyd] logged ACTIVE and not yet REMOVEd or
    ended."""
    live = set()
    for l in text.splitlines():
        if f" ttyd[{ttyd}]: " not in l:
            continue
        m = re.search(r"VIEW ACTIVE grant (\d+\.\d+)", l)
        if m:
            live.add(m.group(1))
        m = re.search(r"VIEW (REMOVE|ended) grant (\d+\.\d+)", l)
        if m:
            live.discard(m.group(2))
    return live


def live_installs(text, procd):
    """The grants (I.G) procd[procd] logged INSTALLed and not yet dropped
    (a handle closed or failed, an undeliverable install, a route
    lost)."""
    live = set()
    for g in peer_lines(text, "procd", procd,
                        r"INSTALL (grant|ended grant) (\d+\.\d+)"):
        (live.add if g[0] == "grant" else live.discard)(g[1])
    for (g,) in peer_lines(text, "procd", procd,
                           r": grant (\d+\.\d+) leaves process "):
        live.discard(g)
    return live


def restart_powerboxd(bin_dir, work):
    """kill -9 of powerboxd with two runtime-reply grants whose objects
    this process holds copies of, an install-mode grant and a request in
    flight: powerboxd restarted alone; every grant of the old powerboxd
    ended with a per-grant record at the peers."""
    u = Up(bin_dir, work)
    hs, fds = [], []
    what = "restart-powerboxd"
    try:
        grants = []
        for mode in ("reply", "reply"):
            h = Holder(u, mode)
            hs.append(h)
            grants.append(h.opened(what).replace(":", "."))
            fds.append(h.take(what))
        inst = Holder(u, "install")
        hs.append(inst)
        inst.opened(what)
        if not all(obj_reads(bin_dir, fd) for fd in fds):
            fail(f"{what}: a copied object does not read")
        held = held_request(u)
        old = u.stack()
        wait_for(lambda: broker_events(u.text(), old["powerboxd"],
                                       "decision") and
                 any(e.get("job") == "15:1" for e in broker_events(
                     u.text(), old["powerboxd"], "decision")),
                 f"{what}: the held request was never decided", 10.0)
        snap = []

        def whole():
            # The peers' and powerboxd's lines reach stack.log through
            # pbx up a moment after the holders have their grants: the
            # accounts are read once they agree (waited for, bounded).
            text = u.text()
            approved = {e["request"] for e in broker_events(
                text, old["powerboxd"], "decision")
                if e.get("outcome") == "approved"}
            ended_reqs = {e["request"] for e in broker_events(
                text, old["powerboxd"], "grant-end")}
            live_reqs = approved - ended_reqs
            views = live_views(text, old["ttyd"])
            mine = peer_lines(text, "procd", old["procd"],
                              rf"INSTALL grant (\d+\.\d+) into process "
                              rf"{inst.pid} ")
            installed = live_installs(text, old["procd"])
            ok = len(live_reqs) == len(views) and set(grants) <= views \
                and len(mine) == 1 and mine[0][0] in installed and \
                installed <= views
            snap[:] = [len(text), live_reqs, views, mine, installed, ok]
            return ok
        try:
            wait_for(whole, "", 10.0)
        except SystemExit:
            pass  # the failure below says what disagreed
        since, live_reqs, views, mine, installed, ok = snap
        if not ok:
            fail(f"{what}: before the kill: approved requests not ended "
                 f"{sorted(live_reqs)}, ttyd's live rows {sorted(views)}, "
                 f"the holders' grants {grants}, procd's installs "
                 f"{sorted(installed)}, the one into pid {inst.pid} {mine}")
        os.kill(old["powerboxd"], signal.SIGKILL)
        new = broker_restarted(u, old["powerboxd"], since, what)
        now = u.stack()
        peers = {n: p for n, p in old.items() if n != "powerboxd"}
        if {n: now.get(n) for n in peers} != peers:
            fail(f"{what}: the peers were {peers}, now {now}")
        for h in hs:
            if h.proc.poll() is not None or proc_comm(h.pid) == "":
                fail(f"{what}: job {h.job} (pid {h.pid}) did not survive "
                     f"powerboxd's death")
        broker = str(old["powerboxd"])
        wait_for(lambda: peer_lines(u.text()[since:], "vfsd", old["vfsd"],
                                    rf"route to pid {broker} closed: "
                                    rf"(\d+) object"),
                 f"{what}: vfsd logged no count line for pid {broker}")
        text = u.text()[since:]
        # The objects vfsd[old] minted for the dead powerboxd and had not
        # retired or freed: from its lines before its first line about
        # the closed route (vfsd's lines reach stack.log in order, so
        # every earlier one is there once that one is).
        full = u.text()
        cut = re.search(rf" vfsd\[{old['vfsd']}\]: vfsd: (RETIRE object "
                        rf"\d+ gen \d+: )?route to pid {broker} closed",
                        full)
        objects = objects_of(full[:cut.start()], old["vfsd"])
        retired = {f"{w} gen {g}" for w, g in peer_lines(
            text, "vfsd", old["vfsd"], rf"RETIRE object (\d+) gen (\d+): "
            rf"route to pid {broker} closed$")}
        k = int(peer_lines(text, "vfsd", old["vfsd"],
                           rf"route to pid {broker} closed: (\d+) "
                           rf"object")[0][0])
        # An object only the dead powerboxd held (the in-flight request's)
        # may hang up (no copy left) before vfsd reads the route's end:
        # it ended then; every other one is retired with the route.
        hung = {f"{w} gen {g}" for w, g in peer_lines(
            text, "vfsd", old["vfsd"], r"HANG-UP object (\d+) gen (\d+): ")}
        if retired | (hung & objects) != objects or retired & hung or \
                k != len(retired) or k < len(fds) + 1:
            fail(f"{what}: vfsd held {sorted(objects)} minted for "
                 f"powerboxd[{broker}], retired {sorted(retired)} with "
                 f"count line {k}, hung up {sorted(hung)}")
        wait_for(lambda: {g for (g,) in peer_lines(
            u.text()[since:], "ttyd", old["ttyd"], r"VIEW ended grant "
            r"(\d+\.\d+): route closed \(broker lost\)$")} == views,
                 f"{what}: ttyd's broker-lost lines do not name exactly the "
                 f"live grants {sorted(views)}")
        wait_for(lambda: {g for (g,) in peer_lines(
            u.text()[since:], "procd", old["procd"], r"INSTALL ended grant "
            r"(\d+\.\d+): route closed \(broker lost\)$")} == installed,
                 f"{what}: procd's broker-lost lines do not name exactly "
                 f"the installs {sorted(installed)}")
        lost = peer_lines(u.text()[since:], "launchd", old["launchd"],
                          r"grant (\d+\.\d+) of job (\d+\.\d+) ended: "
                          r"broker lost$")
        lost_jobs = {j for _, j in lost}
        if any(h.job.replace(":", ".") not in lost_jobs for h in hs):
            fail(f"{what}: launchd's broker-lost grant lines {lost} do not "
                 f"name every holder's job {[h.job for h in hs]}")
        if any(obj_reads(bin_dir, fd) for fd in fds):
            fail(f"{what}: an object of the old powerboxd reads")
        if inst.read(what):
            fail(f"{what}: the installed object of the old powerboxd reads")
        if grants_listed(u) != [] or \
                read_rows(os.path.join(u.dir, "procd.sock")) != []:
            fail(f"{what}: pbx grants lists {grants_listed(u)}, procd holds "
                 f"{read_rows(os.path.join(u.dir, 'procd.sock'))}")
        try:
            out, err = held.communicate("\n", timeout=20)
        except subprocess.TimeoutExpired:
            held.kill()
            fail(f"{what}: the request in flight still waits 20 s after "
                 f"asking its decision")
        kv = key_values(out)
        if held.returncode == 0 or kv.get("outcome") == "approved":
            fail(f"{what}: the request in flight ended rc "
                 f"{held.returncode} {kv}: no error")
        print(f"run: kill -9 of powerboxd[{broker}]: powerboxd[{new}] "
              f"restarted alone, the peers kept {peers}, jobs "
              f"{[h.job for h in hs]} still run; vfsd retired the "
              f"{k} object(s) minted for it one line each; ttyd ended "
              f"{sorted(views)} (broker lost), procd the installs "
              f"{sorted(installed)} (job {inst.job}'s {mine[0][0]}), launchd logged {len(lost)} grant(s) "
              f"broker lost; the copies and fd 5 read no more; nothing "
              f"listed or installed; the request in flight ended rc "
              f"{held.returncode} ({err.strip().splitlines()[-1:]})")
        for h in hs:
            h.end()
        honest(u, "after powerboxd's restart")
        u.stop()
    finally:
        for fd in fds:
            os.close(fd)
        for h in hs:
            h.kill()
        u.close()


def pbx_cmd(u, *args):
    """`pbx ARGS --dir DIR` on u's runtime directory: (rc, out, err)."""
    out = subprocess.run([os.path.join(u.bin_dir, "pbx")] + list(args) +
                         ["--dir", u.dir], capture_output=True, text=True,
                         check=False, timeout=30, stdin=subprocess.DEVNULL)
    return out.returncode, out.stdout, out.stderr


def ids_restart(u, what):
    """kill -9 of the live powerboxd; waits for its death line and the
    new one's `restarted with fresh routes` line; returns (old, new)."""
    old = u.stack()["powerboxd"]
    since = len(u.text())
    os.kill(old, signal.SIGKILL)
    u.wait_log(f"powerboxd[{old}] killed unexpectedly by signal 9 (KILL)",
               what)
    pat = re.compile(r" up\[\d+\]: powerboxd\[(\d+)\] restarted with fresh "
                     r"routes to the peers")
    wait_for(lambda: pat.search(u.text()[since:]),
             f"{what}: powerboxd never restarted with fresh routes", 20.0)
    return old, int(pat.search(u.text()[since:]).group(1))


def ids_in_log(text, what):
    """Every powerboxd line of stack.log text, checked: each request= and
    grant= is N-I.G with N the incarnation of `pbx up`'s "powerboxd
    incarnation N starting" line before that pid's start. Returns
    ({pid: N}, [approved grant ids in order])."""
    inc, pids, approved = None, {}, []
    for l in text.splitlines():
        m = re.search(r" up\[\d+\]: powerboxd incarnation (\d+) starting$", l)
        if m:
            inc = int(m.group(1))
        m = re.search(r" up\[\d+\]: powerboxd\[(\d+)\] started: ", l)
        if m:
            pids[int(m.group(1))] = inc
        m = re.search(r" powerboxd\[(\d+)\]: (event=\S+ .*)$", l)
        if not m:
            continue
        f = key_values(m.group(2).replace(" ", "\n"))
        n = pids.get(int(m.group(1)))
        for k in ("request", "grant"):
            if k in f and not re.fullmatch(rf"{n}-\d+\.\d+", f[k]):
                fail(f"{what}: powerboxd[{m.group(1)}] (incarnation {n}) "
                     f"wrote {k}={f[k]}: {l}")
        if f.get("event") == "decision" and f.get("outcome") == "approved":
            approved.append(f["grant"])
    return pids, approved


def ids_log_lines(u, ids, what):
    """`pbx log` (table) lines of each grant id in ids, waited for (10 s)
    until each id has exactly one; returns {id: line}."""
    got = {}

    def each():
        rc, out, _ = pbx_cmd(u, "log")
        got.clear()
        for g in ids:
            got[g] = [l for l in out.splitlines() if f" grant {g} (" in l]
        return rc == 0 and all(len(v) == 1 for v in got.values())
    wait_for(each, f"{what}: pbx log lines per grant: {got}", 10.0)
    return {g: v[0] for g, v in got.items()}


def ids_across_restarts(bin_dir, work):
    """Grant ids stay unique across powerboxd restarts, and every end is
    recorded (standalone, `pbx up --restart-window-ms 0`). In each of
    four powerboxd incarnations (three kill -9 restarts) a job holds a
    job-lifetime grant and a lifecycle consumes a one-shot one; in the
    second an exceptional request is denied (no terminal). Each held
    grant's wire id is the same (each powerboxd numbers from 0.1), yet
    `pbx grants` lists it as N-I.G with its own incarnation N, distinct
    across the four; every id powerboxd wrote to stack.log carries its
    incarnation and the approved grant ids are all distinct; `pbx cancel`
    of incarnation 1's held grant (the same wire id as the live one) is
    refused as not live (exit 1) and the live grant stays listed; `pbx
    log` shows each dead powerboxd's held grant lost with its broker,
    recorded by vfsd and ttyd, each lifecycle grant consumed and the
    denial with its reason; after `pbx up` stops, the live grant is
    shown as "stack stopped"."""
    what = "ids-across-restarts"
    u = Up(bin_dir, work, ["--restart-window-ms", "0"])
    hs, held, dead = [], [], {}
    try:
        for inc in range(1, 5):
            # The held grant is each powerboxd's first: wire id 0.1.
            h = Holder(u)
            hs.append(h)
            g = f"{inc}-" + h.opened(what).replace(":", ".")
            rc, out, err = pbx_cmd(u, "grants", "--format", "kv")
            listed = [key_values(l.replace(" ", "\n")).get("grant")
                      for l in out.splitlines()]
            if rc != 0 or listed != [g]:
                fail(f"{what}: incarnation {inc}: pbx grants lists "
                     f"{listed}, want [{g}]: {err}")
            held.append(g)
            # A one-shot lifecycle (open, read, consume) of another job.
            p = subprocess.run(
                [os.path.join(bin_dir, "pbx"), "--dir", u.dir, "run", "--",
                 os.path.join(bin_dir, "pbx-test-fdcat"), "--cycles", "1",
                 "docs/readme.txt"], capture_output=True, text=True,
                timeout=60, check=False, stdin=subprocess.DEVNULL)
            if p.returncode != 0 or "cycles=1 ok=1" not in p.stdout:
                fail(f"{what}: incarnation {inc}: a one-shot lifecycle "
                     f"failed: {p.stdout}{p.stderr}")
            if inc == 2:
                p = subprocess.run(
                    [os.path.join(bin_dir, "pbx"), "--dir", u.dir, "run",
                     "--", os.path.join(bin_dir, "pbx-test-fdcat"), "--open",
                     "--exceptional", "docs/readme.txt"],
                    capture_output=True, text=True, timeout=60, check=False,
                    stdin=subprocess.DEVNULL)
                if p.returncode == 0 or "outcome=approved" in p.stdout:
                    fail(f"{what}: an exceptional request without a "
                         f"terminal was not refused: {p.stdout}{p.stderr}")
            if inc < 4:
                old, _ = ids_restart(u, f"{what}: restart {inc}")
                dead[g] = old
                wait_for(lambda: grants_listed(u) == [],
                         f"{what}: ttyd still lists a grant of powerboxd "
                         f"incarnation {inc}")
                # Its grant ended with its powerboxd; the job ends now.
                h.end()
        wires = [g.split("-", 1)[1] for g in held]
        if len(set(held)) != 4 or wires != ["0.1"] * 4:
            fail(f"{what}: held grants {held}: want four ids, one wire id")
        # powerboxd's lines reach stack.log through pbx up a moment late:
        # wait (bounded) for the decision line of the last held grant.
        wait_for(lambda: held[3] in ids_in_log(u.text(), what)[1],
                 f"{what}: no approved decision of {held[3]} in stack.log",
                 10.0)
        pids, approved = ids_in_log(u.text(), what)
        if sorted(pids.values()) != [1, 2, 3, 4] or \
                len(set(approved)) != len(approved) or \
                not set(held) <= set(approved):
            fail(f"{what}: stack.log: incarnations {pids}, approved grant "
                 f"ids {approved}")
        print(f"run: {what}: held grants {held} (wire id {wires[0]} each "
              f"time) listed by pbx grants as such; stack.log's "
              f"{len(approved)} approved grant ids all distinct, each "
              f"prefixed by its powerboxd's incarnation {pids}")
        rc, out, err = pbx_cmd(u, "cancel", held[0])
        if rc != 1 or "is not live" not in err or \
                "incarnation 1, which has ended" not in err:
            fail(f"{what}: pbx cancel {held[0]}: rc {rc} {out}{err}")
        rc, out, err2 = pbx_cmd(u, "cancel", "9-" + wires[0])
        if rc != 1 or "no powerboxd incarnation 9 has run" not in err2:
            fail(f"{what}: pbx cancel 9-{wires[0]}: rc {rc} {out}{err2}")
        rc, out, _ = pbx_cmd(u, "grants", "--format", "kv")
        if rc != 0 or f"grant={held[3]} " not in out or \
                len(out.splitlines()) != 1:
            fail(f"{what}: after the refused cancels pbx grants lists:\n{out}")
        print(f"run: {what}: pbx cancel {held[0]} refused (exit 1): "
              f"{err.strip()}; {held[3]} still live")
        lines = {}

        def recorded():
            """Each dead powerboxd's held grant is shown lost with it,
            recorded by vfsd and ttyd (their lines may still be on their
            way to stack.log)."""
            lines.update(ids_log_lines(u, held[:3], what))
            for g, pid in dead.items():
                m = re.search(rf"\): lost with its broker \(powerboxd\[{pid}"
                              rf"\] died; recorded by (\S+)\)$", lines[g])
                recs = m.group(1).split(",") if m else []
                if "vfsd" not in recs or "ttyd" not in recs:
                    return False
            return True
        wait_for(recorded, f"{what}: pbx log of the dead powerboxds' "
                 f"grants: {lines}", 10.0)
        got = []

        def ends():
            # The last lifecycle's consumed line reaches stack.log through
            # pbx up a moment late: read until all four are there.
            rc, out, _ = pbx_cmd(u, "log", "--format", "kv")
            kv = [key_values(l.replace(" ", "\n")) for l in out.splitlines()]
            got[:] = [out, {r["grant"].split("-")[0] for r in kv
                            if r.get("end") == "consumed" and
                            r.get("by") == "program"},
                      [r for r in kv if r.get("end") == "denied"]]
            return rc == 0 and got[1] == {"1", "2", "3", "4"}
        try:
            wait_for(ends, "", 10.0)
        except SystemExit:
            pass  # the failure below says what was logged
        out, used, denied = got
        if used != {"1", "2", "3", "4"} or len(denied) != 1 or \
                not denied[0].get("request", "").startswith("2-") or \
                denied[0].get("reason") in (None, "", "-") or \
                denied[0].get("grant") != "-":
            fail(f"{what}: pbx log --format kv: consumed in incarnations "
                 f"{sorted(used)}, denials {denied}:\n{out}")
        u.stop()
        last = ids_log_lines(u, held, what)[held[3]]
        rc, out, _ = pbx_cmd(u, "log", "--format", "kv")
        kv = {r.get("grant"): r for r in
              (key_values(l.replace(" ", "\n")) for l in out.splitlines())}
        if ": stack stopped while it was live" not in last or \
                kv.get(held[3], {}).get("end") != "stack-stopped" or \
                any(kv.get(g, {}).get("end") != "lost" for g in held[:3]):
            fail(f"{what}: after the stop, pbx log of {held[3]}: {last!r}; "
                 f"kv: {[kv.get(g) for g in held]}")
        print(f"run: {what}: pbx log: {held[:3]} lost with their dead "
              f"powerboxd (vfsd's and ttyd's records), the denial "
              f"{denied[0]['request']} ({denied[0]['reason']}), every "
              f"lifecycle grant consumed, and after the stop {held[3]}: "
              f"stack stopped")
    finally:
        for h in hs:
            h.kill()
        u.close()
