"""e2e scenarios (tests/e2e/run.py) of stalled or failing peers and lost
answers: ttyd-stalled, vfsd-stalled, not-found, user-deny,
cancel-lost-reply, invocation-expiry and unwanted-receipts."""
import os
import signal
import socket
import struct
import subprocess
import sys
import time

from e2e_harness import (cleaned, count, E_CORE_BROKER, fail, fd_count,
                         last_object, read_rows, settled_fds, slot_rows,
                         wait_for)
from e2e_jobs import clear_pane, Client, frame, Shell, tmux, wait_prompt
from scn_lifecycle import lifecycle
from scn_prompt import exceptional


def stack_pids(st):
    """powerboxd's and every peer's pid."""
    return [st.pid] + [p.pid for p in st.procs]


def holders(st, inode):
    """The stack's processes holding a descriptor of socket inode (an
    object id names its provider end's inode in its low 48 bits, vfsd's
    incarnation above them)."""
    want, found = f"socket:[{int(inode) & ((1 << 48) - 1)}]", []
    for pid in stack_pids(st):
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") == want:
                    found.append(pid)
            except FileNotFoundError:
                pass
    return found


def stop_peer(p):
    """SIGSTOPs peer process p and waits until it is stopped."""
    os.kill(p.pid, signal.SIGSTOP)

    def stopped():
        with open(f"/proc/{p.pid}/stat", encoding="ascii") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "T"
    wait_for(stopped, f"peer {p.pid} did not stop")


def ttyd_stalled(st):
    """Revocation goes on while ttyd is stopped; REMOVE completes after.
    The job (14:1) is a launched shell that outlives its client, so that
    the EXPIRE is what ends the grant."""
    vfsd, ttyd, procd = st.procs[0], st.procs[1], st.procs[2]
    job = Shell(st, "14:1")
    rc, kv = job.request("--lifetime", "job", "--urgency", "routine",
                         "--slot", "25")
    if rc != 0 or kv.get("outcome") != "approved":
        fail(f"ttyd-stalled: no grant: {kv}")
    obj = last_object(st, kv.get("scope", "none"))
    oid = obj.split()[0]
    if holders(st, oid) != [procd.pid] or len(read_rows(st.views)) != 1:
        fail(f"ttyd-stalled: object {oid} held by {holders(st, oid)}")
    vfsd_fds = settled_fds(vfsd.pid)
    stop_peer(ttyd)
    t0 = time.monotonic()
    print(f"run: grant {kv['grant']} live (object {obj} installed at "
          f"procd); ttyd (pid {ttyd.pid}) stopped")
    rc, out = st.launchd_expire("--control", job="14:1")
    if rc != 0 or out != "expire=accepted":
        fail(f"ttyd-stalled: EXPIRE: {out}")
    wait_for(lambda: read_rows(st.installs) == [],
             f"procd still holds {read_rows(st.installs)}")
    wait_for(lambda: f"RETIRE object {obj}" in st.peer_log("vfsd"),
             f"vfsd never retired object {obj} while ttyd was stopped")
    retired = time.monotonic() - t0
    # A READ object costs vfsd two descriptors (its provider end and the
    # file it opened for the grant, docs/HOST.md "Objects"): RETIRE
    # closes both.
    wait_for(lambda: holders(st, oid) == [] and
             fd_count(vfsd.pid) == vfsd_fds - 2,
             f"object {oid} still held by {holders(st, oid)}; vfsd holds "
             f"{fd_count(vfsd.pid)} descriptors, was {vfsd_fds}")
    # A stopped ttyd answers no query (its rows live in its memory), so
    # the row it still holds is seen only as the REMOVE it serves after
    # SIGCONT (counted below).
    print(f"run: EXPIRE revoked at procd and vfsd retired object {obj} "
          f"{retired:.2f} s after it, with ttyd stopped: no process holds "
          f"the object, vfsd closed its provider end")
    limit = st.deadline_ms("ttyd", 5000) / 1000.0
    while time.monotonic() < t0 + 3 * limit:
        if not st.alive():
            fail("ttyd-stalled: powerboxd exited while ttyd was stopped")
        time.sleep(0.1)
    os.kill(ttyd.pid, signal.SIGCONT)
    wait_for(lambda: read_rows(st.views) == [],
             f"ttyd still shows {read_rows(st.views)} after SIGCONT")
    remove = f"VIEW REMOVE grant {kv['grant']}"
    wait_for(lambda: count(st.peer_log("ttyd"), remove) >= 2,
             f"ttyd-stalled: REMOVE sent "
             f"{count(st.peer_log('ttyd'), remove)} time(s) in "
             f"{3 * limit:.0f} s against a {limit:.0f} s deadline")
    removes = count(st.peer_log("ttyd"), remove)
    print(f"run: ttyd continued after {time.monotonic() - t0:.1f} s and "
          f"served REMOVE of grant {kv['grant']} {removes} times (retried "
          f"while it was stopped); ttyd lists no row")
    if not st.alive():
        fail("ttyd-stalled: powerboxd exited")
    if job.close() != 0:
        fail("ttyd-stalled: the job's shell failed")
    lifecycle(st)
    # ttyd logs a reply it could not send as it sends it: the lifecycle's
    # REMOVE, served after every late reply (one process, in order),
    # shows ttyd got past them before their absence is read.
    if "reply send failed" in st.peer_log("ttyd") or not st.alive():
        fail("ttyd-stalled: powerboxd did not take ttyd's late replies")
    print(f"run: powerboxd (pid {st.pid}) alive throughout and serving")


def take_scope(st):
    """One scope from vfsd's scope socket, held by this process."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.settimeout(5)
    s.connect(st.scope)
    msg, fds, _, _ = socket.recv_fds(s, 64, 1)
    s.close()
    if len(fds) != 1 or msg[:8] != b"PBXSCOPE" or \
            struct.unpack("<Q", msg[8:16])[0] != os.fstat(fds[0]).st_ino:
        fail(f"vfsd handed out no valid scope: {msg!r} {fds}")
    return fds[0]


def vfsd_stalled(st):
    """vfsd stopped for 30 s: what needs it times out, the rest goes on;
    a RETIRE owed to it is retried and acknowledged after SIGCONT. The
    grant's job (15:1) is a launched shell that outlives its client, so
    that the EXPIRE is what ends it; the scopes taken before vfsd stops
    are handed to their jobs as standard input."""
    vfsd = st.procs[0]
    base, vbase = fd_count(st.pid), settled_fds(vfsd.pid)
    job = Shell(st, "15:1")
    rc, kv = job.request("--lifetime", "job", "--urgency", "routine",
                         "--slot", "26")
    if rc != 0 or kv.get("outcome") != "approved":
        fail(f"vfsd-stalled: no grant: {kv}")
    grant, obj = kv["grant"], last_object(st, kv.get("scope", "none"))
    held = Client(st, "--op", "write", "--job", "16:1", "--target", "42:5",
                  "--slot", "27", "--then", "hold")
    decided = held.committed()
    wait_for(lambda: f"wake request {decided} job 16.1" in
             st.peer_log("launchd"),
             f"request {decided} was never decided")
    scopes = [take_scope(st) for _ in range(3)]
    stop_peer(vfsd)
    t0 = time.monotonic()
    print(f"run: grant {grant} live (object {obj}); request {decided} "
          f"decided, its DECISION not asked yet; vfsd (pid {vfsd.pid}) "
          f"stopped")
    # Needs vfsd: the resolution through its scope gets no answer.
    limit = st.deadline_ms("scope", 2000) / 1000.0
    t = time.monotonic()
    rc, kv = st.client("--job", "17:1", "--target", "42:5", "--slot", "28",
                       scope_fd=scopes[0])
    took = time.monotonic() - t
    if rc != 3 or kv.get("outcome") != "denied" or \
            kv.get("reason") != "peer-timeout" or took < limit:
        fail(f"vfsd-stalled: a request needing vfsd: {kv} after "
             f"{took:.2f} s")
    print(f"run: request {kv['request']} needing vfsd DENIED reason "
          f"peer-timeout after {took:.2f} s (scope deadline {limit:.1f} s)")
    # Needs nothing from vfsd: served at once.
    t = time.monotonic()
    held.go()
    rc, kv = held.finish()
    if rc != 3 or kv.get("outcome") != "denied" or \
            kv.get("reason") != "policy" or time.monotonic() - t > 1.0:
        fail(f"vfsd-stalled: DECISION of decided request {decided}: {kv}")
    print(f"run: DECISION of decided request {decided}: denied (policy) in "
          f"{time.monotonic() - t:.2f} s")
    t = time.monotonic()
    out = subprocess.run(st.request_argv(
        "--target", "42:5", "--slot", "20", public=st.public,
        scope_fd=scopes[1]), capture_output=True, text=True, check=False,
        timeout=10, pass_fds=(scopes[1],), process_group=st.pgid)
    if out.returncode != 1 or "BEGIN refused" not in out.stderr or \
            f"(0x{E_CORE_BROKER:04x})" not in out.stderr:
        fail(f"vfsd-stalled: direct BEGIN: {out.stdout} {out.stderr}")
    print(f"run: BEGIN on the public endpoint refused (PBX_E_CORE_BROKER) "
          f"in {time.monotonic() - t:.2f} s")
    # Its stdin is the scope, so the client cancels on its own: its
    # --wait-ms passes while the resolution waits on vfsd.
    t = time.monotonic()
    cli = Client(st, "--job", "18:1", "--slot", "29", "--wait-ms", "300",
                 scope_fd=scopes[2])
    req = cli.committed()
    if cli.wait_key("wait") != "expired" or \
            cli.wait_key("cancel") != "accepted":
        fail(f"vfsd-stalled: CANCEL of {req} refused")
    cancel_took = time.monotonic() - t
    rc, kv = cli.finish()
    if rc != 3 or kv.get("outcome") != "cancelled":
        fail(f"vfsd-stalled: CANCEL of request {req} waiting on vfsd: {kv}")
    print(f"run: request {req}, waiting on vfsd, cancelled: CANCEL "
          f"accepted {cancel_took:.2f} s after BEGIN, decision cancelled "
          f"{time.monotonic() - t:.2f} s after BEGIN")
    for fd in scopes:
        os.close(fd)
    # A grant revoked while vfsd is stopped.
    rc, out = st.launchd_expire("--control", job="15:1")
    if rc != 0 or out != "expire=accepted":
        fail(f"vfsd-stalled: EXPIRE: {out}")
    wait_for(lambda: read_rows(st.installs) == [] and
             read_rows(st.views) == [],
             f"vfsd-stalled: revocation or REMOVE waited on vfsd: "
             f"{read_rows(st.installs)} {read_rows(st.views)}")
    revoked = time.monotonic()
    print(f"run: EXPIRE of grant {grant}: revoked at procd and REMOVEd at "
          f"ttyd while vfsd is stopped")
    if job.close() != 0:
        fail("vfsd-stalled: the job's shell failed")
    while time.monotonic() < t0 + 30.0:
        if not st.alive():
            fail("vfsd-stalled: powerboxd exited while vfsd was stopped")
        time.sleep(0.1)
    os.kill(vfsd.pid, signal.SIGCONT)
    t = time.monotonic()
    print("run: vfsd continued after 30 s")
    retire = f"RETIRE object {obj}"
    wait_for(lambda: retire in st.peer_log("vfsd"),
             f"vfsd never retired object {obj}")
    # powerboxd stops sending RETIRE once one is acknowledged: the count
    # holds still for longer than a deadline and the longest backoff.
    quiet = st.deadline_ms("vfsd", 5000) / 1000.0 + 1.0
    seen, since = count(st.peer_log("vfsd"), retire), time.monotonic()
    while time.monotonic() - since < quiet:
        time.sleep(0.1)
        now = count(st.peer_log("vfsd"), retire)
        if now != seen:
            seen, since = now, time.monotonic()
        if time.monotonic() - t > 30.0:
            fail(f"vfsd-stalled: powerboxd still RETIREs object {obj} "
                 f"({seen} so far): no acknowledgement taken")
    if seen < 2:
        # The figures say whether the stop left room for a retry: a second
        # RETIRE comes only once the first outlived vfsd's deadline.
        fail(f"vfsd-stalled: RETIRE of object {obj} sent {seen} time(s) "
             f"in 30 s ({t0 + 30.0 - revoked:.2f} s of the stop left after "
             f"the revocation, vfsd's deadline "
             f"{st.deadline_ms('vfsd', 5000) / 1000.0:.2f} s)")
    print(f"run: vfsd served RETIRE of object {obj} {seen} times (retried "
          f"while it was stopped); acknowledged: no more come")
    if read_rows(st.installs) or read_rows(st.views):
        fail("vfsd-stalled: rows left")
    lifecycle(st)
    wait_for(lambda: fd_count(st.pid) == base,
             f"powerboxd holds {fd_count(st.pid)} descriptors, not {base}")
    wait_for(lambda: fd_count(vfsd.pid) == vbase,
             f"vfsd holds {fd_count(vfsd.pid)} descriptors, not {vbase}")
    if not st.alive():
        fail("vfsd-stalled: powerboxd exited")
    print(f"run: powerboxd (pid {st.pid}) alive throughout, serving, "
          f"descriptors back to {base} (vfsd's to {vbase})")


def root_tree(root):
    """Every path beneath root with its inode, mode and size (symlinks
    not followed)."""
    seen = {}
    for d, dirs, files in os.walk(root):
        for n in dirs + files:
            p = os.path.join(d, n)
            s = os.lstat(p)
            seen[p] = (s.st_ino, s.st_mode, s.st_size)
    return seen


def no_authority(st, what, installs, tree):
    """Nothing installed at procd (no row, no INSTALL since), no view row
    at ttyd, nothing created or changed in vfsd's root."""
    root = os.path.join(st.work, "root")
    if read_rows(st.installs) or read_rows(st.views) or \
            count(st.peer_log("procd"), "INSTALL") != installs:
        fail(f"{what}: something was installed or shown: "
             f"{read_rows(st.installs)} {read_rows(st.views)}")
    if root_tree(root) != tree:
        fail(f"{what}: vfsd's root changed")


def not_found(st):
    """A missing file inside the scope ends NOT_FOUND, which grants
    nothing; escapes (../, an absolute selector, symlinks inside the root
    pointing outside it, to an existing or a missing file) end DENIED or
    are refused, never NOT_FOUND and never the object."""
    root = os.path.join(st.work, "root")
    outside = os.path.join(st.work, "outside.txt")
    with open(outside, "w", encoding="utf-8") as f:
        f.write("outside the scope\n")
    links = {"escape-abs": outside,
             "escape-rel": "../../outside.txt",
             "escape-missing": os.path.join(st.work, "nowhere.txt"),
             "escape-missing-rel": "../../nowhere.txt"}
    for name, to in links.items():
        p = os.path.join(root, "docs", name)
        if os.path.lexists(p):
            os.unlink(p)
        os.symlink(to, p)
    tree = root_tree(root)
    installs = count(st.peer_log("procd"), "INSTALL")
    vlog = len(st.peer_log("vfsd"))
    rc, kv = st.client("--selector", "docs/missing.txt", "--target", "42:5",
                       "--slot", "30", "--job", "19:1")
    if rc != 3 or kv.get("outcome") != "not-found" or "grant" in kv:
        fail(f"not-found: a missing file in the scope: rc {rc} {kv}")
    if "RESOLVE not-found" not in st.peer_log("vfsd")[vlog:]:
        fail("not-found: vfsd did not answer NOT_FOUND")
    time.sleep(0.2)
    no_authority(st, "not-found", installs, tree)
    print(f"run: docs/missing.txt: request {kv['request']} NOT_FOUND (vfsd "
          f"answered not-found); nothing installed, shown or created")
    escapes = ["../outside.txt", "../nowhere.txt", "docs/../../outside.txt",
               "docs/../../nowhere.txt", outside,
               os.path.join(st.work, "nowhere.txt"), "/etc/passwd"] + \
        [f"docs/{n}" for n in links]
    for sel in escapes:
        rc, kv = st.client("--selector", sel, "--target", "42:5", "--slot",
                           "30", "--job", "19:1")
        out = kv.get("outcome")
        if rc == 0 or out in ("not-found", "approved") or "grant" in kv or \
                (rc == 3 and out != "denied") or rc not in (1, 2, 3):
            fail(f"not-found: escape {sel!r}: rc {rc} {kv}")
        no_authority(st, f"not-found: escape {sel!r}", installs, tree)
        print(f"run: escape {sel!r}: "
              f"{'DENIED reason ' + kv.get('reason', '?') if rc == 3 else f'refused (rc {rc})'}"
              f"; nothing installed, shown or created")
    time.sleep(0.2)
    no_authority(st, "not-found", installs, tree)
    if "RESOLVE found" in st.peer_log("vfsd")[vlog:]:
        fail("not-found: vfsd found an object for a missing or escaping "
             "selector")


def user_deny(st):
    """A prompt answered n: DENIED reason user; every capability the
    request held (its scope and object copies) is gone by the time the
    decision is read: powerboxd's descriptors are back to the baseline;
    vfsd then frees the object's row (its HANG-UP, waited for)."""
    base = settled_fds(st.pid)
    installs = count(st.peer_log("procd"), "INSTALL")
    clear_pane(st)
    cli = exceptional(st, "--job", "20:1", "--then", "hold")
    req = cli.committed()
    obj = wait_prompt(st, req)
    if fd_count(st.pid) <= base:
        fail(f"user-deny: powerboxd holds {fd_count(st.pid)} descriptors "
             f"with the prompt showing, baseline {base}")
    held = fd_count(st.pid)
    tmux("send-keys", "-t", st.pane, "n")
    wait_for(lambda: f"PROMPT {req}: deny" in st.peer_log("ttyd"),
             f"ttyd never took the n for request {req}")
    cli.go()
    rc, kv = cli.finish()
    fds = fd_count(st.pid)
    if rc != 3 or kv.get("outcome") != "denied" or \
            kv.get("reason") != "user" or "grant" in kv:
        fail(f"user-deny: {kv}")
    if fds != base:
        fail(f"user-deny: powerboxd holds {fds} descriptors when the "
             f"decision is read, baseline {base}")
    # vfsd closes the last copy (DETACH's) and answers, then sees its
    # object's end hang up on its next round and logs the HANG-UP: a
    # moment after powerboxd may publish the denial. Waited for, bounded.
    wait_for(lambda: f"HANG-UP object {obj}" in st.peer_log("vfsd"),
             f"user-deny: vfsd never freed the row of object {obj}")
    time.sleep(0.2)
    if read_rows(st.installs) or read_rows(st.views) or \
            count(st.peer_log("procd"), "INSTALL") != installs:
        fail("user-deny: something was installed or shown")
    print(f"run: prompt of request {req} answered n: DENIED reason user; "
          f"when the decision was read powerboxd held {fds} descriptors "
          f"({held} while the prompt showed, baseline {base}); vfsd freed "
          f"object {obj}; nothing installed or shown")


def cancel_lost_reply(st):
    """A client whose approval reply is lost cancels by job and session
    (generation zero): the one grant it names ends. With two live
    requests of that job and session the same CANCEL is ambiguous: refused
    (PBX_E_CORE_AMBIGUOUS), both stay."""
    cli = Client(st, "--job", "21:1", "--session", "9", "--slot", "31",
                 "--then", "cancel-session")
    req = cli.committed()
    wait_for(lambda: len(slot_rows(st, 31)) == 1,
             f"request {req} was never approved and installed")
    obj = last_object(st, cli.wait_key("scope"))
    wait_for(lambda: len(read_rows(st.views)) == 1,
             f"cancel-lost-reply: views {read_rows(st.views)}")
    print(f"run: request {req} approved and installed at slot 31; its "
          f"DECISION never read (the reply lost)")
    cli.go()
    if cli.wait_key("cancel") != "accepted":
        fail(f"cancel-lost-reply: the generation-zero CANCEL was refused")
    cleaned(st, obj)
    cli.go()
    rc, kv = cli.finish()
    if rc == 1 or kv.get("outcome") not in ("approved", "cancelled"):
        fail(f"cancel-lost-reply: decision after the CANCEL: {kv}")
    print(f"run: generation-zero CANCEL of job 21:1 session 9 accepted; "
          f"the grant ended at every peer; decision then read: "
          f"{kv.get('outcome')}")
    # Two live approved requests of one job and session: a launched
    # shell (job 21:1) runs two clients in turn that each exit after
    # COMMIT without reading the decision; the job, and with it both
    # requests, stays alive until the EXPIRE.
    job = Shell(st, "21:1", session=9)
    made = []
    for slot in (32, 33):
        rc, kv = job.request("--session", "9", "--slot", str(slot),
                             "--then", "hang-up")
        if rc != 0 or kv.get("hang_up") != "after-commit":
            fail(f"cancel-lost-reply: slot {slot}: {kv}")
        made.append(kv["request"])
    ra, rb = made
    wait_for(lambda: len(slot_rows(st, 32)) == 1 and
             len(slot_rows(st, 33)) == 1 and len(read_rows(st.views)) == 2,
             f"requests {ra} and {rb} were not both approved")
    errf = os.path.join(st.work, "logs", "ambiguous.err")
    rc, kv = job.run([st.bin("client"), "cancel", "--job", "21:1",
                      "--session", "9"], stderr=errf)
    with open(errf, encoding="utf-8") as f:
        said = f.read()
    sys.stderr.write(said)
    if rc != 1 or kv.get("cancel") == "accepted":
        fail("cancel-lost-reply: an ambiguous generation-zero CANCEL was "
             "accepted")
    if f"(0x{0x0614:04x})" not in said:
        fail(f"cancel-lost-reply: not refused as ambiguous: {said}")
    time.sleep(0.2)
    if len(slot_rows(st, 32)) != 1 or len(slot_rows(st, 33)) != 1 or \
            len(read_rows(st.views)) != 2:
        fail(f"cancel-lost-reply: a refused CANCEL changed a grant: "
             f"{read_rows(st.installs)} {read_rows(st.views)}")
    print(f"run: with requests {ra} and {rb} of job 21:1 session 9 live, "
          f"the generation-zero CANCEL refused: "
          f"{said.strip().splitlines()[-1]}; both still installed and shown")
    rc, out = st.launchd_expire("--control", job="21:1")
    if rc != 0 or out != "expire=accepted":
        fail(f"cancel-lost-reply: EXPIRE: {out}")
    wait_for(lambda: read_rows(st.installs) == [] and
             read_rows(st.views) == [], "cancel-lost-reply: rows left")
    if job.close() != 0:
        fail("cancel-lost-reply: the job's shell failed")


def invocation_expiry(st):
    """launchd's EXPIRE of one invocation ends exactly its grants, the
    one-shot ones made within it included; another invocation's grants,
    a one-shot one made outside any invocation and a job-lifetime grant
    of the same job stay live. The job (22:1) is a launched shell that
    runs the six clients in turn and lives on, so that only the EXPIREs
    end its grants."""
    job = Shell(st, "22:1")
    made = {}
    for slot, args in ((34, ["--lifetime", "invocation", "--invocation",
                             "5"]),
                       (35, ["--lifetime", "one-shot", "--invocation", "5"]),
                       (36, ["--lifetime", "invocation", "--invocation",
                             "6"]),
                       (37, ["--lifetime", "one-shot", "--invocation", "6"]),
                       (38, ["--lifetime", "one-shot"]),
                       (39, ["--lifetime", "job"])):
        rc, kv = job.request(*args, "--slot", str(slot))
        if rc != 0 or kv.get("outcome") != "approved":
            fail(f"invocation-expiry: slot {slot}: {kv}")
        made[slot] = (kv["grant"], last_object(st, kv.get("scope", "none")))
    if len(read_rows(st.installs)) != 6 or len(read_rows(st.views)) != 6:
        fail("invocation-expiry: not six grants live")
    vlog = len(st.peer_log("vfsd"))
    out = st.run([st.bin("launchd"), "expire", "--control", st.control,
                  "--job", "22:1", "--invocation", "5"], seconds=30)
    if out.returncode != 0 or out.stdout.strip() != "expire=accepted":
        fail(f"invocation-expiry: EXPIRE of invocation 5: {out.stdout}")
    gone, kept = (34, 35), (36, 37, 38, 39)
    wait_for(lambda: all(not slot_rows(st, s) for s in gone),
             f"invocation-expiry: procd still holds {read_rows(st.installs)}")
    wait_for(lambda: len(read_rows(st.views)) == 4,
             f"invocation-expiry: ttyd shows {read_rows(st.views)}")
    for s in gone:
        wait_for(lambda s=s: f"RETIRE object {made[s][1]}" in
                 st.peer_log("vfsd"),
                 f"invocation-expiry: object {made[s][1]} never retired")
    # What the EXPIRE sent the peers is read only once a later grant's
    # end was served after it (each route delivers in order): a one-shot
    # grant of the same job, consumed, revoked, removed and retired.
    rc, kv = job.request("--lifetime", "one-shot", "--slot", "40",
                         "--then", "consume")
    if rc != 0 or kv.get("consume") != "accepted":
        fail(f"invocation-expiry: the later one-shot grant: {kv}")
    later = last_object(st, kv.get("scope", "none"))
    wait_for(lambda: not slot_rows(st, 40) and
             f"RETIRE object {later}" in st.peer_log("vfsd") and
             kv["grant"] not in [r.split()[1] for r in read_rows(st.views)
                                 if r.startswith("grant ")],
             f"invocation-expiry: the later grant {kv['grant']} did not end")
    views = "\n".join(read_rows(st.views))
    for s in kept:
        if len(slot_rows(st, s)) != 1 or \
                f"RETIRE object {made[s][1]}" in st.peer_log("vfsd")[vlog:]:
            fail(f"invocation-expiry: grant {made[s][0]} (slot {s}) ended")
    shown = {r.split()[1] for r in read_rows(st.views)
             if r.startswith("grant ")}
    if shown != {made[s][0] for s in kept}:
        fail(f"invocation-expiry: ttyd shows grants {sorted(shown)}:\n"
             f"{views}")
    print(f"run: EXPIRE of job 22:1 invocation 5 ended grants "
          f"{made[34][0]} (invocation) and {made[35][0]} (one-shot made "
          f"within it): revoked, removed, retired; grants "
          f"{', '.join(made[s][0] for s in kept)} (invocation 6, one-shot "
          f"within 6, one-shot outside any, job) stay live")
    rc, out2 = st.launchd_expire("--control", job="22:1")
    if rc != 0 or out2 != "expire=accepted":
        fail(f"invocation-expiry: EXPIRE of the job: {out2}")
    wait_for(lambda: read_rows(st.installs) == [] and
             read_rows(st.views) == [], "invocation-expiry: rows left")
    if job.close() != 0:
        fail("invocation-expiry: the job's shell failed")


def unwanted_receipts(st):
    """A descriptor sent where none belongs, on every public operation
    (BEGIN, SELECTOR, DECISION, CANCEL, CONSUME), declared in cap_count or
    not, with an empty and a 96-byte body, straight to powerboxd's public
    endpoint: each is answered with the error reply
    PBX_E_CORE_UNEXPECTED_CAPS (0x0611) carrying no descriptor, the received descriptor is closed
    (the other end of the socketpair sent sees end of file), and
    powerboxd's descriptor count returns to its baseline. (Peer replies
    with surplus receipts are shown on the real binary by the lying-peer
    rows of tests/e2e/test_e2e_liars.c: the _extra_receipt and _duplicate
    rows of each peer and liar_ttyd_prompt_carries_a_descriptor, each
    receipt closed.)"""
    base = settled_fds(st.pid)
    ops = {"BEGIN": 0x0001, "SELECTOR": 0x0002, "DECISION": 0x0004,
           "CANCEL": 0x0005, "CONSUME": 0x0006}
    n = 0
    for name, op in ops.items():
        for caps in (0, 1):
            for body in (b"", bytes(96)):
                conn = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
                conn.settimeout(5)
                conn.connect(st.public)
                mine, sent = socket.socketpair(socket.AF_UNIX,
                                               socket.SOCK_SEQPACKET)
                mine.settimeout(5)
                req = (0, 0) if op == 0x0001 else (1, 1)
                socket.send_fds(conn, [frame(op, body, caps, req, 7 + n)],
                                [sent.fileno()])
                sent.close()
                msg, fds, _, _ = socket.recv_fds(conn, 65536, 4)
                for fd in fds:
                    os.close(fd)
                if len(msg) < 32:
                    fail(f"unwanted-receipts: {name}: reply {msg!r}")
                magic, _, rop, status, rcaps = struct.unpack("<IHHHH",
                                                             msg[:12])
                if magic != 0x46584250 or rop != op | 0x8000 or \
                        status != 0x0611 or rcaps != 0 or fds:
                    fail(f"unwanted-receipts: {name} (cap_count {caps}, "
                         f"body {len(body)}): reply op {rop:#x} status "
                         f"{status:#x} caps {rcaps} fds {fds}")
                if mine.recv(16) != b"":
                    fail(f"unwanted-receipts: {name}: the descriptor "
                         f"was kept")
                mine.close()
                conn.close()
                # powerboxd bounds one process's public connections (8):
                # each one is gone before the next is opened.
                wait_for(lambda: fd_count(st.pid) == base,
                         f"unwanted-receipts: {name}: the connection "
                         f"stays ({fd_count(st.pid)} descriptors)")
                n += 1
                print(f"run: {name} (cap_count {caps}, body {len(body)} "
                      f"bytes) with a descriptor: error {status:#06x} "
                      f"(PBX_E_CORE_UNEXPECTED_CAPS), "
                      f"descriptor closed")
    wait_for(lambda: fd_count(st.pid) == base,
             f"unwanted-receipts: powerboxd holds {fd_count(st.pid)} "
             f"descriptors, baseline {base}")
    if not st.alive():
        fail("unwanted-receipts: powerboxd exited")
    lifecycle(st)
    print(f"run: {n} frames with unwanted descriptors refused, each "
          f"descriptor closed; powerboxd back to {base} descriptors and "
          f"serving")
