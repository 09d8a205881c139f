"""Scenarios any-expire and any-consume (issue 21 item 3): every way a
grant ends cuts the revocable descriptor a program holds (run.py's
SCENARIOS names them; docs/TESTING.md, "Where the e2e scenarios
live")."""
import os
import re

from e2e_harness import fail, key_values, wait_for
from e2e_jobs import clear_pane, Launched, pane_text, tmux
from scn_any import (ANY_REVOKE_PROG, any_revoke_object, broker_prompt,
                     broker_root_file, broker_run)


# --- Every way a grant ends cuts the revocable descriptor (issue 21
# item 3): any-revoke shows the cancel; any-expire the job's EXPIRE
# (what launchd sends when the program exits); any-consume the
# program's own CONSUME of a one-shot grant.


def ends_approved(st):
    """{grant: key=values of its approved decision line} from one pass
    over powerboxd's log (a stack shared by every scenario of a run logs
    a thousand grants and more: one pass per grant was quadratic, and
    slow enough under load to outlast a reader's patience)."""
    out = {}
    for line in st.peer_log("powerboxd").splitlines():
        if "event=decision" not in line or "outcome=approved" not in line:
            continue
        f = key_values(line.replace(" ", "\n"))
        if f.get("event") == "decision" and f.get("outcome") == "approved" \
                and f.get("grant") and f["grant"] not in out:
            out[f["grant"]] = f
    return out


def ends_decision(st, grant):
    """The key=values of powerboxd's approved decision line for grant
    (None before it is logged)."""
    return ends_approved(st).get(grant)


def ends_retired(st, name, grant, seen, cause):
    """After the end (vfsd's log past index seen): vfsd logs the RETIRE
    of exactly the object powerboxd's decision named for grant, and
    powerboxd's grant-end says cause, of that object. Returns the RETIRE
    line."""
    obj = ends_decision(st, grant).get("object-id")
    m = re.fullmatch(r"(\d+):(\d+)", obj or "")
    if m is None:
        fail(f"{name}: powerboxd's decision for grant {grant} names no "
             f"object-id ({obj!r})")
    want = f"vfsd: RETIRE object {m.group(1)} gen {m.group(2)}"
    # When every copy of the object's connection was closed first (the
    # job's broker exited with the job, a race with powerboxd's RETIRE),
    # vfsd logs the HANG-UP and then the RETIRE with this suffix; the
    # revocable descriptors are cut at the RETIRE either way (the reads
    # below show it).
    alone = want + " (no copy left to cut)"
    wait_for(lambda: any(l in (want, alone) for l in
                         st.peer_log("vfsd")[seen:].splitlines()),
             f"{name}: vfsd never logged '{want}' after the end", 20)
    wait_for(lambda: any_revoke_object(st, grant)[1] is not None,
             f"{name}: powerboxd logged no grant-end for {grant}", 20)
    end = any_revoke_object(st, grant)[1]
    if end != (cause, obj):
        fail(f"{name}: grant {grant} ended {end}, want {cause} of {obj}")
    return want


# The background reader of any-expire's second phase: it reads five
# pieces, says so, waits (every 50 ms, at most 2400 times) for its parent
# (the job's sh) to exit, then reads on in pieces (every 50 ms, at most
# 2400 times) until a read fails; it says whether it was orphaned first,
# and that it still runs. Its reads start after the exit whatever the
# load, so they can only succeed until the expiry, never outlast the
# scenario's steps (a flake when they started at once: the loop ended
# before sh did).
ANY_EXPIRE_CHILD = """
import errno, os, sys, time
want = bytes(range(256)) * 4096
parent = os.getppid()
fd = os.open(sys.argv[1], os.O_RDONLY)
got = b""
for i in range(5):
    got += os.read(fd, 100)
print("before=" + ("exact" if got == want[:500] else repr(got[:40])),
      flush=True)
for i in range(2400):
    if os.getppid() != parent:
        break
    time.sleep(0.05)
after = "no-failure"
for i in range(2400):
    try:
        os.read(fd, 100)
    except OSError as e:
        after = errno.errorcode.get(e.errno, str(e.errno))
        break
    time.sleep(0.05)
print("orphaned=" + str(int(os.getppid() != parent)), flush=True)
print("after=" + after, flush=True)
try:
    print("again=ok:" + str(len(os.read(fd, 100))), flush=True)
except OSError as e:
    print("again=" + errno.errorcode.get(e.errno, str(e.errno)), flush=True)
print("alive=1", flush=True)
"""


def any_expire_grant(st, name, selector):
    """The one approved grant of selector in powerboxd's log, its
    decision's fields; fails unless it is an invocation grant."""
    approved = ends_approved(st)
    ids = {g for g, f in approved.items() if f.get("object") == selector}
    if len(ids) != 1:
        fail(f"{name}: approved grants of {selector}: {ids}")
    grant = ids.pop()
    dec = approved[grant]
    if dec.get("lifetime") != "invocation":
        fail(f"{name}: grant {grant} is not an invocation grant: {dec}")
    return grant, dec


def any_expire_by_control(st, big):
    """Phase 1: python3 holds its brokered descriptor while its job is
    EXPIREd by `pbx-launchd expire --control`."""
    clear_pane(st)
    job = broker_run(st, ["/usr/bin/python3", "-c", ANY_REVOKE_PROG, big],
                     os.path.join(st.work, "any-expire.err"), stdin=None)
    broker_prompt(st, "docs/expire.bin", "python3")
    tmux("send-keys", "-t", st.pane, "y")
    job.wait_line(lambda l: l.startswith("before="), "before=", seconds=20)
    if job.kv().get("before") != "exact":
        fail(f"any-expire: the five pieces before the expiry: {job.kv()}")
    grant, dec = any_expire_grant(st, "any-expire", "docs/expire.bin")
    jid = dec.get("job", "").replace(".", ":")
    seen = len(st.peer_log("vfsd"))
    rc, out = st.launchd_expire("--control", job=jid)
    if rc != 0 or out != "expire=accepted":
        fail(f"any-expire: pbx-launchd expire of job {jid}: {rc} {out!r}")
    want = ends_retired(st, "any-expire", grant, seen, "expired")
    job.write("next\n")
    job.wait_line(lambda l: l == "alive=1", "alive=1", seconds=20)
    kv = job.kv()
    if job.wait(timeout=30) != 0 or kv.get("after") != "EIO" or \
            kv.get("again") != "EIO":
        fail(f"any-expire: after the expiry: {kv} rc {job.proc.returncode}")
    print(f"run: any-expire: five pieces read exactly; job {jid} expired "
          f"by pbx-launchd expire, grant {grant} ended expired; vfsd logged "
          f"'{want}' after the expiry; the next two reads failed EIO, the "
          f"reader printed alive=1 and exited 0")


def any_expire_by_exit(st, big):
    """Phase 2: a sandboxed sh starts python3 in the background (it
    opens and reads the file: the prompt names sh's entry), then exits
    on a line of input; launchd EXPIREs the job at that exit while the
    orphaned reader still holds its descriptor and reads on."""
    clear_pane(st)
    job = broker_run(st, ["/bin/sh", "-c",
                          '/usr/bin/python3 -c "$0" "$1" </dev/null & '
                          'read x; exit 0', ANY_EXPIRE_CHILD, big],
                     os.path.join(st.work, "any-expire-exit.err"),
                     stdin=None)
    broker_prompt(st, "docs/expire2.bin", "sh")
    tmux("send-keys", "-t", st.pane, "y")
    job.wait_line(lambda l: l.startswith("before="), "before=", seconds=20)
    if job.kv().get("before") != "exact":
        fail(f"any-expire: exit: the five pieces: {job.kv()}")
    grant, dec = any_expire_grant(st, "any-expire", "docs/expire2.bin")
    jid = dec.get("job", "").replace(":", ".")
    seen = len(st.peer_log("vfsd"))
    job.write("go\n")
    if job.wait(timeout=30) != 0:
        fail(f"any-expire: the job's sh exited {job.proc.returncode}")
    ended = f"launchd: job {jid} ended: EXPIRE accepted"
    wait_for(lambda: ended in st.peer_log("launchd"),
             f"any-expire: launchd never logged '{ended}'", 20)
    want = ends_retired(st, "any-expire", grant, seen, "expired")
    job.wait_line(lambda l: l == "alive=1", "alive=1", seconds=150)
    kv = job.kv()
    if kv.get("orphaned") != "1" or kv.get("after") != "EIO" or \
            kv.get("again") != "EIO":
        fail(f"any-expire: after the job's exit: {kv}")
    print(f"run: any-expire: sh (job {jid}) exited, launchd's EXPIRE "
          f"ended grant {grant} expired; vfsd logged '{want}'; the "
          f"orphaned reader's next read failed EIO, and the one after, "
          f"and it printed alive=1")


def any_expire(st):
    """A dynamic reader (python3, sandboxed, brokered) reads five
    100-byte pieces of a 1 MiB file through its brokered descriptor (an
    invocation grant); the job is then EXPIREd while the reader still
    holds the descriptor, (1) by `pbx-launchd expire --control` of the
    job powerboxd's decision names while the program runs, (2) by
    launchd itself when the job's program (a sandboxed sh that started
    the reader in the background) exits. Each time vfsd retires exactly
    the object powerboxd's decision named, powerboxd records the grant
    `end=expired`, the reader's next two reads fail EIO and it runs on
    (prints a line, exits by itself)."""
    broker_root_file(st)
    docs = os.path.join(os.path.realpath(st.root), "docs")
    for n in ("expire.bin", "expire2.bin"):
        with open(os.path.join(docs, n), "wb") as f:
            f.write(bytes(range(256)) * 4096)
    any_expire_by_control(st, os.path.join(docs, "expire.bin"))
    any_expire_by_exit(st, os.path.join(docs, "expire2.bin"))


def any_consume(st):
    """A program of libpbx-app (pbx-test-fdcat --open, `pbx run`, not
    sandboxed) gets a one-shot read grant of a file (the pane's prompt
    answered y), asks vfsd for a revocable descriptor of its object
    (pbx_obj_open_fd) and reads 100 bytes through it; then it CONSUMEs
    the grant (pbx_app_consume). vfsd retires exactly the object
    powerboxd's decision named, powerboxd records `end=consumed`; the
    descriptor's next two reads fail EIO while the program runs on
    (it answers one more command and exits 0 at the end of its input)."""
    path = os.path.join(os.path.realpath(st.root), "docs", "consume.txt")
    with open(path, "w", encoding="utf-8") as f:
        f.write("consumed once " * 40)
    clear_pane(st)
    job = Launched(st, [os.path.join(st.bin_dir, "pbx"), "--dir", st.work,
                        "run", "--", os.path.join(st.bin_dir,
                                                  "pbx-test-fdcat"),
                        "--open", "--exceptional", "docs/consume.txt"],
                   stderr=open(os.path.join(st.work, "any-consume.err"),
                               "w", encoding="utf-8"))
    wait_for(lambda: "Approve?" in pane_text(st) and
             'selector: "docs/consume.txt"' in pane_text(st),
             "any-consume: no prompt for docs/consume.txt", 15.0)
    tmux("send-keys", "-t", st.pane, "y")
    out = job.wait_key("outcome", seconds=20)
    grant = out.split("grant=", 1)[-1].replace(":", ".")
    if not out.startswith("approved"):
        fail(f"any-consume: the open: {out}")
    n = len(job.lines)
    job.write("openfd\nfdread\n")
    job.wait_line(lambda l: l.startswith("fdread="), "fdread=", 20, n)
    kv = job.kv(n)
    if kv.get("openfd") != "ok" or kv.get("fdread") != "ok 100":
        fail(f"any-consume: before the consume: {kv}")
    grants = [g for g in re.findall(r"grant=(\S+)",
                                    st.peer_log("powerboxd"))
              if g.endswith("-" + grant) or g == grant]
    wait_for(lambda: any(ends_decision(st, g) for g in grants),
             f"any-consume: no approved decision for grant {grant}", 20)
    full = [g for g in grants if ends_decision(st, g)][0]
    dec = ends_decision(st, full)
    if dec.get("lifetime") != "one-shot":
        fail(f"any-consume: grant {full} is not one-shot: {dec}")
    seen = len(st.peer_log("vfsd"))
    n = len(job.lines)
    job.write("consume\n")
    if job.wait_key("consume", seconds=20, start=n) != "ok":
        fail(f"any-consume: consume: {job.kv(n)}")
    want = ends_retired(st, "any-consume", full, seen, "consumed")
    n = len(job.lines)
    job.write("fdread\n")
    i = job.wait_line(lambda l: l.startswith("fdread="), "fdread=", 20, n)
    job.write("fdread\n")
    j = job.wait_line(lambda l: l.startswith("fdread="), "fdread=", 20,
                      i + 1)
    after, again = job.lines[i], job.lines[j]
    job.proc.stdin.close()
    if job.wait(timeout=30) != 0 or \
            after != "fdread=failed EIO" or again != "fdread=failed EIO":
        fail(f"any-consume: after the consume: {after!r} {again!r} rc "
             f"{job.proc.returncode}")
    print(f"run: any-consume: one-shot grant {full} read 100 bytes through "
          f"its revocable descriptor; consumed; vfsd logged '{want}' after "
          f"the consume; the next two reads failed EIO, the program "
          f"answered on and exited 0")
