"""e2e scenarios (tests/e2e/run.py) of a peer restarted under pbx up:
restart-vfsd, restart-procd, restart-ttyd and
vfsd-restart-pending-prompt, and the helpers (Holder, Pane, ...) the
other restart scenarios share."""
import os
import re
import shutil
import signal
import socket
import subprocess
import threading

from e2e_harness import fail, key_values, read_rows, SLOW, wait_for
from e2e_up import gone, Up


class Holder:
    """A launched job holding a grant, its standard input and output piped
    to this process (docs: run.py's restart scenarios). mode "reply": `pbx
    run -- pbx-test-fdcat --open --job-lifetime [--exceptional]
    docs/readme.txt` holds a runtime-reply object and answers "read" and
    "send PATH" one line at a time; mode "install": `pbx run --grant
    read:docs/readme.txt -- pbx-test-fdcat --again 5` (install mode,
    job lifetime) prints the file's bytes, then reads again through fd 5
    on "go" and exits 0 (read) or 3 (failed). Its job ends when its
    standard input closes (launchd then EXPIREs the job)."""

    count = 0

    def __init__(self, u, mode="reply", exceptional=False):
        Holder.count += 1
        pbx = os.path.join(u.bin_dir, "pbx")
        fdcat = os.path.join(u.bin_dir, "pbx-test-fdcat")
        if mode == "install":
            argv = [pbx, "--dir", u.dir, "run", "--grant",
                    "read:docs/readme.txt", "--", fdcat, "--again", "5"]
        else:
            argv = [pbx, "--dir", u.dir, "run", "--", fdcat, "--open",
                    "--job-lifetime"] + \
                (["--exceptional"] if exceptional else []) + \
                ["docs/readme.txt"]
        self.mode, self.u, self.lines = mode, u, []
        self.errpath = os.path.join(os.path.dirname(u.dir),
                                    f"holder{Holder.count}.err")
        self.errf = open(self.errpath, "w+", encoding="utf-8")
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.errf,
                                     text=True, bufsize=1)
        self.cv = threading.Condition()
        threading.Thread(target=self._reader, daemon=True).start()
        self.job = self.pid = None

    def _reader(self):
        for line in self.proc.stdout:
            with self.cv:
                self.lines.append(line.rstrip("\n"))
                self.cv.notify_all()
        with self.cv:
            self.lines.append(None)
            self.cv.notify_all()

    def line(self, n, what, seconds=15.0):
        """The n-th line of its standard output (0-based), waited for."""
        with self.cv:
            if not self.cv.wait_for(lambda: len(self.lines) > n or
                                    None in self.lines, seconds) or \
                    len(self.lines) <= n or self.lines[n] is None:
                fail(f"{what}: holder said {self.lines}; its stderr: "
                     f"{self.stderr()}")
            return self.lines[n]

    def stderr(self):
        """What pbx run and the job wrote to standard error."""
        self.errf.flush()
        with open(self.errpath, encoding="utf-8") as f:
            return f.read()

    def launched(self, what):
        """Waits for pbx run's job line; sets job (ID:GEN) and pid."""
        pat = re.compile(r"is job (\d+:\d+) \(pid (\d+)\)")
        wait_for(lambda: pat.search(self.stderr()),
                 f"{what}: no job line in {self.stderr()!r}", 10.0)
        m = pat.search(self.stderr())
        self.job, self.pid = m.group(1), int(m.group(2))

    def opened(self, what):
        """Waits for the grant; returns its id (ID:GEN; None in install
        mode, whose job id then names it)."""
        grant = None
        if self.mode == "install":
            if self.line(0, what) != "hello from vfsd":
                fail(f"{what}: install-mode holder read {self.lines}")
        else:
            first = self.line(0, what)
            if not first.startswith("outcome=approved grant=") or \
                    self.line(1, what) != "read=ok 16":
                fail(f"{what}: holder's open: {self.lines}")
            grant = first.split("grant=", 1)[1]
        self.launched(what)
        return grant

    def read(self, what):
        """A read through its object now: True when it gave the file's
        bytes, False when it failed. An install-mode holder exits after."""
        if self.mode == "install":
            self.proc.stdin.write("go\n")
            self.proc.stdin.close()
            rc = self.proc.wait(timeout=20)
            if rc not in (0, 3):
                fail(f"{what}: install-mode holder exited {rc}: "
                     f"{self.stderr()}")
            return rc == 0
        n = len(self.lines)
        self.proc.stdin.write("read\n")
        self.proc.stdin.flush()
        said = self.line(n, what)
        if said not in ("read=ok 16",) and not said.startswith("read=failed"):
            fail(f"{what}: holder's read said {said!r}")
        return said == "read=ok 16"

    def take(self, what):
        """A copy of its object, sent to this process ("send PATH");
        returns the descriptor, which this process then owns."""
        path = os.path.join(os.path.dirname(self.u.dir),
                            f"holder{Holder.count}.sock")
        if os.path.exists(path):
            os.unlink(path)
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
            s.bind(path)
            s.settimeout(10)
            n = len(self.lines)
            self.proc.stdin.write(f"send {path}\n")
            self.proc.stdin.flush()
            _, fds, _, _ = socket.recv_fds(s, 16, 1)
            if self.line(n, what) != "send=ok" or len(fds) != 1:
                fail(f"{what}: the holder sent no object: {self.lines}")
        os.unlink(path)
        return fds[0]

    def end(self, seconds=20):
        """Closes its standard input; returns pbx run's exit status."""
        if self.proc.stdin and not self.proc.stdin.closed:
            self.proc.stdin.close()
        try:
            return self.proc.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            fail(f"a holder (job {self.job}) did not end within {seconds} s")

    def kill(self):
        """Failure cleanup."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.errf.close()


def obj_reads(bin_dir, fd):
    """Whether a read through object descriptor fd (held by this process)
    gives the file's bytes: pbx-test-fdcat reads it with the app
    library's pbx_obj_read."""
    out = subprocess.run([os.path.join(bin_dir, "pbx-test-fdcat"), str(fd)],
                         pass_fds=[fd], capture_output=True, timeout=20,
                         check=False, stdin=subprocess.DEVNULL)
    return out.returncode == 0 and out.stdout == b"hello from vfsd\n"


def log_events(text, event):
    """The key=value fields of every powerboxd `event=EVENT` line of
    stack.log text, in order."""
    found = []
    for l in text.splitlines():
        if f"]: event={event} " in l:
            found.append(dict(w.split("=", 1) for w in
                              l.split("]: ", 1)[1].split() if "=" in w))
    return found


def ended(u, since, job, want, what, seconds=10.0):
    """Waits until stack.log (after offset since) holds job's grant-end
    lines, each with end and reason as in want (END, REASON)."""
    def got():
        return [(e["end"], e["reason"]) for e in
                log_events(u.text()[since:], "grant-end") if
                e.get("job") == job]
    wait_for(lambda: got() != [], f"{what}: no grant-end of job {job}",
             seconds)
    if set(got()) != {want}:
        fail(f"{what}: grant ends of job {job}: {got()}, want {want}")


def restarted(u, name, pid, routes, since):
    """Waits until the supervisor logged the kill of name[pid], its
    restart and every route in routes accepted by powerboxd (after offset
    since); returns the new pid."""
    u.wait_log(f"{name}[{pid}] killed unexpectedly by signal 9", name)
    pat = re.compile(rf"up\[\d+\]: {name}\[(\d+)\] restarted and attached")
    wait_for(lambda: pat.search(u.text()[since:]), f"{name} never restarted",
             20.0)
    new = int(pat.search(u.text()[since:]).group(1))
    for r in routes:
        if f"attach {r} route of pid {new}: accepted by powerboxd" not in \
                u.text()[since:]:
            fail(f"{name}: route {r} of pid {new} not accepted")
    gone([pid], f"after {name}'s restart")
    return new


def grants_listed(u):
    """The grant ids `pbx grants` (ttyd's query) lists, as ID:GEN: the
    wire part of each N-ID.GEN it prints (a job knows only that part),
    each checked to be of that form. Bounded by 20 s (times SLOW: chaos
    under make memcheck)."""
    out = subprocess.run([os.path.join(u.bin_dir, "pbx"), "--dir", u.dir,
                          "grants", "--format", "kv"], capture_output=True,
                         text=True, timeout=20 * SLOW, check=False)
    if out.returncode != 0:
        fail(f"pbx grants: rc {out.returncode} {out.stderr}")
    ids = [key_values(l.replace(" ", "\n")).get("grant", "")
           for l in out.stdout.splitlines()]
    if any(not re.fullmatch(r"[1-9]\d*-\d+\.\d+", g) for g in ids):
        fail(f"pbx grants: an id not spelled N-I.G in {ids}")
    return sorted(g.split("-", 1)[1].replace(".", ":") for g in ids)


def in_flight(u):
    """A job started just before a kill: three one-shot lifecycles
    (pbx-test-fdcat --cycles 3) racing the death; returns the Popen."""
    return subprocess.Popen(
        [os.path.join(u.bin_dir, "pbx"), "--dir", u.dir, "run", "--",
         os.path.join(u.bin_dir, "pbx-test-fdcat"), "--cycles", "3",
         "docs/readme.txt"], stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)


def landed(p, what, seconds=20):
    """The in-flight job p ended within seconds (whatever its outcome);
    returns what it printed last."""
    try:
        out, _ = p.communicate(timeout=seconds)
    except subprocess.TimeoutExpired:
        p.kill()
        fail(f"{what}: the request in flight still waits after {seconds} s")
    return (out.strip().splitlines() or ["(nothing)"])[-1]


def honest(u, what):
    """Honest requests succeed again: a lifecycle and a fresh job-lifetime
    holder whose read works and whose grant then ends by its job's end."""
    u.lifecycle(what)
    since = len(u.text())
    h = Holder(u)
    try:
        h.opened(what)
        if not h.read(what):
            fail(f"{what}: a fresh grant's object does not read")
        h.end()
        ended(u, since, h.job, ("expired", "expire"), what)
    finally:
        h.kill()


def objects_of(text, pid):
    """Objects ("ID gen G") vfsd[pid] minted and has not retired or freed
    (from its stack.log lines)."""
    live = set()
    for l in text.splitlines():
        if f" vfsd[{pid}]: " not in l:
            continue
        m = re.search(r"RESOLVE found object (\d+) gen (\d+)", l)
        if m:
            live.add(f"{m.group(1)} gen {m.group(2)}")
        m = re.search(r"(RETIRE|HANG-UP) object (\d+) gen (\d+)", l)
        if m:
            live.discard(f"{m.group(2)} gen {m.group(3)}")
    return live


def restart_vfsd(bin_dir, work):
    """kill -9 of vfsd with a runtime-reply and an install-mode grant live
    and a job's requests in flight."""
    u = Up(bin_dir, work)
    hs = []
    try:
        reply, inst = Holder(u), Holder(u, "install")
        hs += [reply, inst]
        g = reply.opened("restart-vfsd")
        inst.opened("restart-vfsd")
        old = u.stack()["vfsd"]
        # vfsd's lines reach stack.log through pbx up a moment after the
        # holders have their objects: wait for them, bounded.
        wait_for(lambda: len(objects_of(u.text(), old)) == 2,
                 f"restart-vfsd: vfsd holds objects "
                 f"{objects_of(u.text(), old)}, not the two", 10)
        live = objects_of(u.text(), old)
        since = len(u.text())
        racing = in_flight(u)
        os.kill(old, signal.SIGKILL)
        new = restarted(u, "vfsd", old, ["vfsd"], since)
        for h in (reply, inst):
            ended(u, since, h.job, ("lost", "provider-lost"), "restart-vfsd")
        if reply.read("restart-vfsd") or inst.read("restart-vfsd"):
            fail("restart-vfsd: an object of a lost grant still reads")
        absent = {f"{m.group(1)} gen {m.group(2)}" for m in re.finditer(
            rf" vfsd\[{new}\]: vfsd: RETIRE object (\d+) gen (\d+): absent "
            rf"\(another vfsd incarnation minted it\)", u.text())}
        wait_for(lambda: live <= {f"{m.group(1)} gen {m.group(2)}" for m in
                                  re.finditer(rf" vfsd\[{new}\]: vfsd: "
                                              rf"RETIRE object (\d+) gen "
                                              rf"(\d+): absent", u.text())},
                 f"restart-vfsd: the new vfsd answered absent only {absent} "
                 f"of {live}")
        wait_for(lambda: grants_listed(u) == [] and
                 read_rows(os.path.join(u.dir, "procd.sock")) == [],
                 "restart-vfsd: a lost grant is still shown or installed")
        last = landed(racing, "restart-vfsd")
        print(f"run: kill -9 of vfsd[{old}]: grant {g} (runtime-reply) and "
              f"job {inst.job}'s (install mode) ended lost reason "
              f"provider-lost, their reads fail; vfsd[{new}] answered the "
              f"RETIRE of {sorted(live)} absent; nothing shown or installed; "
              f"the job in flight ended ({last})")
        for h in hs:
            h.end()
        honest(u, "after vfsd's restart")
        u.stop()
    finally:
        for h in hs:
            h.kill()
        u.close()


def restart_procd(bin_dir, work):
    """kill -9 of procd with an install-mode grant (procd installed it)
    and a runtime-reply grant (procd never saw it) live, and an install in
    flight."""
    u = Up(bin_dir, work)
    hs = []
    try:
        reply, inst = Holder(u), Holder(u, "install")
        hs += [reply, inst]
        g = reply.opened("restart-procd")
        inst.opened("restart-procd")
        old = u.stack()["procd"]
        since = len(u.text())
        racing = subprocess.Popen(
            [os.path.join(bin_dir, "pbx"), "--dir", u.dir, "run", "--grant",
             "read:docs/readme.txt", "--",
             os.path.join(bin_dir, "pbx-test-fdcat"), "5"],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, text=True)
        os.kill(old, signal.SIGKILL)
        new = restarted(u, "procd", old, ["procd"], since)
        ended(u, since, inst.job, ("lost", "installer-lost"), "restart-procd")
        if inst.read("restart-procd"):
            fail("restart-procd: the installed object still reads")
        if not reply.read("restart-procd"):
            fail("restart-procd: the runtime-reply grant stopped working")
        if grants_listed(u) != [g]:
            fail(f"restart-procd: pbx grants lists {grants_listed(u)}, "
                 f"want [{g}]")
        landed(racing, "restart-procd")
        reply.end()
        ended(u, since, reply.job, ("expired", "expire"), "restart-procd")
        print(f"run: kill -9 of procd[{old}]: job {inst.job}'s install-mode "
              f"grant ended lost reason installer-lost and its fd 5 reads "
              f"no more; runtime-reply grant {g} kept working, listed, then "
              f"expired with its job; procd[{new}] took over")
        out = subprocess.run(
            [os.path.join(bin_dir, "pbx"), "--dir", u.dir, "run", "--grant",
             "read:docs/readme.txt", "--",
             os.path.join(bin_dir, "pbx-test-fdcat"), "5"],
            capture_output=True, timeout=30, check=False,
            stdin=subprocess.DEVNULL)
        if out.returncode != 0 or out.stdout != b"hello from vfsd\n":
            fail(f"restart-procd: a new install-mode grant: rc "
                 f"{out.returncode} {out.stderr!r}")
        honest(u, "after procd's restart")
        u.stop()
    finally:
        for h in hs:
            h.kill()
        u.close()


class Pane:
    """A tmux server of a standalone scenario's own (socket in its work
    directory) with one pane: ttyd's terminal."""

    def __init__(self, work):
        if shutil.which("tmux") is None:
            fail("restart-ttyd needs tmux, which is not installed")
        self.sock = os.path.join(work, "tmux.sock")
        self.pane = self.tmux("new-session", "-d", "-P", "-F", "#{pane_id}",
                              "-x", "120", "-y", "40", "sleep 900").strip()
        self.tty = self.tmux("display", "-p", "-t", self.pane,
                             "#{pane_tty}").strip()

    def tmux(self, *args):
        """One tmux command on this server; its stdout."""
        return subprocess.run(["tmux", "-S", self.sock] + list(args),
                              capture_output=True, text=True, check=True,
                              timeout=10).stdout

    def text(self):
        """What the pane shows."""
        return self.tmux("capture-pane", "-p", "-t", self.pane)

    def clear(self):
        """Blanks the pane."""
        self.tmux("send-keys", "-t", self.pane, "-R")
        self.tmux("clear-history", "-t", self.pane)

    def stop(self):
        """Ends the server."""
        subprocess.run(["tmux", "-S", self.sock, "kill-server"],
                       capture_output=True, check=False)


def routine_policy(work):
    """Writes pbx up's built-in policy for a stack without a terminal
    (routine reads and lists allowed for every entry, exceptional requests
    asked) to WORK/routine.policy and returns its path: a scenario that
    prompts on a pane but is not about the policy passes it as --policy,
    since on a terminal the built-in policy asks for every routine request
    of an entry that is not pbx-* (docs/HOST.md, "Policy rules")."""
    path = os.path.join(work, "routine.policy")
    with open(path, "w", encoding="utf-8") as f:
        f.write("* * read file routine allow\n"
                "* * list directory routine allow\n"
                "* * * * exceptional prompt\n")
    return path


def restart_ttyd(bin_dir, work):
    """kill -9 of ttyd (prompting on a tmux pane) with two live grants and
    a prompt showing."""
    os.makedirs(work, exist_ok=True)
    pane = Pane(work)
    u = None
    hs = []
    try:
        u = Up(bin_dir, work, ["--tty", pane.tty, "--policy",
                                 routine_policy(work)])
        reply, inst = Holder(u), Holder(u, "install")
        hs += [reply, inst]
        g = reply.opened("restart-ttyd")
        inst.opened("restart-ttyd")
        listed = grants_listed(u)
        if len(listed) != 2 or g not in listed:
            fail(f"restart-ttyd: pbx grants lists {listed}")
        asking = Holder(u, exceptional=True)
        hs.append(asking)
        wait_for(lambda: "Approve?" in pane.text(),
                 "restart-ttyd: the prompt never showed", 10.0)
        old = u.stack()["ttyd"]
        since = len(u.text())
        pane.clear()
        if "Approve?" in pane.text():
            fail("restart-ttyd: the pane still shows the prompt once cleared")
        os.kill(old, signal.SIGKILL)
        new = restarted(u, "ttyd", old, ["ttyd"], since)
        wait_for(lambda: grants_listed(u) == listed,
                 f"restart-ttyd: pbx grants lists {grants_listed(u)} after "
                 f"the restart, want {listed}")
        wait_for(lambda: "Approve?" in pane.text(),
                 "restart-ttyd: the prompt was not shown again", 10.0)
        if not reply.read("restart-ttyd"):
            fail("restart-ttyd: the runtime-reply grant stopped working")
        pane.tmux("send-keys", "-t", pane.pane, "y")
        g3 = asking.opened("restart-ttyd")
        # No grant ended for ttyd's death: powerboxd's lines reach
        # stack.log in order, a moment late, so the absence is read once
        # its later approval of the prompted request is there (bounded).
        wait_for(lambda: [e for e in log_events(u.text()[since:],
                                                "decision")
                          if e.get("job") == asking.job and
                          e.get("outcome") == "approved"],
                 f"restart-ttyd: no approved decision of job {asking.job} "
                 f"in stack.log", 10.0)
        if log_events(u.text()[since:], "grant-end"):
            fail("restart-ttyd: a grant ended for a ttyd death")
        print(f"run: kill -9 of ttyd[{old}]: no grant ended; ttyd[{new}] "
              f"lists {listed} again; the showing prompt was shown again "
              f"and y approved it (grant {g3})")
        if not inst.read("restart-ttyd"):
            fail("restart-ttyd: the install-mode grant stopped working")
        for h in (reply, asking):
            h.end()
        for h in (reply, inst, asking):
            ended(u, since, h.job, ("expired", "expire"), "restart-ttyd")
        wait_for(lambda: grants_listed(u) == [],
                 f"restart-ttyd: ttyd still lists {grants_listed(u)}")
        print("run: every grant kept working and then ended expired with "
              "its job; ttyd lists none")
        honest(u, "after ttyd's restart")
        u.stop()
    finally:
        for h in hs:
            h.kill()
        if u is not None:
            u.close()
        pane.stop()


def vfsd_restart_pending_prompt(bin_dir, work):
    """Issue 20, item 5: kill -9 of vfsd while an exceptional request's
    prompt shows on a tmux pane. The request's object died with that vfsd,
    so powerboxd ends the request DENIED provider-lost at once and
    withdraws its prompt; the user's "y" afterwards approves nothing; the
    program is told it was refused; `pbx grants` lists nothing; the new
    vfsd is never asked to DETACH the dead object. A fresh request then
    succeeds (tests/test_core_provider.c shows every stage in the core)."""
    os.makedirs(work, exist_ok=True)
    pane = Pane(work)
    u = None
    hs = []
    what = "vfsd-restart-pending-prompt"
    try:
        u = Up(bin_dir, work, ["--tty", pane.tty, "--policy",
                              routine_policy(work)])
        asking = Holder(u, exceptional=True)
        hs.append(asking)
        wait_for(lambda: "Approve?" in pane.text(),
                 f"{what}: the prompt never showed", 10.0)
        asking.launched(what)
        screen = pane.text()
        request = screen.split("request : ", 1)[1].splitlines()[0].strip()
        shown = screen.split("object  : ", 1)[1].splitlines()[0].strip()
        old = u.stack()["vfsd"]
        # vfsd's RESOLVE line reaches stack.log through pbx up a moment
        # after the prompt may show: wait for it, bounded.
        wait_for(lambda: len(objects_of(u.text(), old)) == 1,
                 f"{what}: vfsd holds {objects_of(u.text(), old)}, not the "
                 f"one object the prompt shows ({shown})", 10.0)
        since = len(u.text())
        os.kill(old, signal.SIGKILL)
        new = restarted(u, "vfsd", old, ["vfsd"], since)
        wait_for(lambda: f"[prompt for request {request} withdrawn]" in
                 pane.text(), f"{what}: the prompt of request {request} was "
                 f"not withdrawn after vfsd's death", 10.0)
        pane.tmux("send-keys", "-t", pane.pane, "y")
        said = asking.line(0, what, 20.0)
        if not said.startswith("outcome=failed"):
            fail(f"{what}: the program was told {said!r} after vfsd's death")
        wait_for(lambda: [e for e in log_events(u.text()[since:], "decision")
                          if e.get("job") == asking.job],
                 f"{what}: no decision line for job {asking.job}", 10.0)
        decided = [e for e in log_events(u.text()[since:], "decision")
                   if e.get("job") == asking.job]
        if [(e.get("outcome"), e.get("reason")) for e in decided] != \
                [("denied", "provider-lost")]:
            fail(f"{what}: decisions of job {asking.job}: {decided}, want "
                 f"one denied provider-lost")
        if grants_listed(u) != []:
            fail(f"{what}: pbx grants lists {grants_listed(u)} after the "
                 f"denial")
        asking.end()
        print(f"run: kill -9 of vfsd[{old}] while request {request}'s prompt "
              f"showed (object {shown}): the prompt was withdrawn, y "
              f"approved nothing, the program was told {said!r}, decision "
              f"denied provider-lost, pbx grants lists none; vfsd[{new}] "
              f"took over")
        honest(u, f"{what}: after vfsd's restart")
        no_detach(u, new, since, what)
        u.stop()
    finally:
        for h in hs:
            h.kill()
        if u is not None:
            u.close()
        pane.stop()


def no_detach(u, vfsd, since, what):
    """vfsd[vfsd] was never asked to DETACH an object it did not mint
    itself (after offset since) before its first RETIRE (honest()'s
    consumed grant's, waited for, bounded): powerboxd's route delivers in
    order and vfsd logs each call as it serves it, so a DETACH of the
    dead object sent at the denial is logged before that RETIRE, and its
    absence is shown only once the RETIRE is there. honest()'s own
    objects (minted by vfsd[vfsd]) are DETACHed as usual."""
    pat = re.compile(rf" vfsd\[{vfsd}\]: vfsd: RETIRE object ")
    wait_for(lambda: pat.search(u.text()[since:]),
             f"{what}: vfsd[{vfsd}] logged no RETIRE", 10.0)
    text = u.text()[since:]
    before = text[:pat.search(text).start()]
    minted = set(re.findall(rf" vfsd\[{vfsd}\]: vfsd: RESOLVE found object "
                            rf"(\d+ gen \d+) ", before))
    dead = [o for o in re.findall(rf" vfsd\[{vfsd}\]: vfsd: DETACH object "
                                  rf"(\d+ gen \d+)", before)
            if o not in minted]
    if dead:
        fail(f"{what}: the new vfsd was asked to DETACH a dead object "
             f"{dead}")
