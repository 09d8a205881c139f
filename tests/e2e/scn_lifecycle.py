"""e2e scenarios (tests/e2e/run.py) of the plain request lifecycle on
the shared stack: lifecycle, lie-scope, expire, runtime-reply, direct,
hangup, foreign and scope-hoard."""
import os
import socket
import time

from e2e_harness import (cleaned, count, E_CORE_BROKER, E_PEER_NOT_YOURS, fail,
                         fd_count, last_object, read_rows, settled_fds, SLOW,
                         wait_for)
from e2e_jobs import Shell


def lifecycle(st):
    """A routine one-shot request, consumed on the caller's connection."""
    rc, kv = st.client("--lifetime", "one-shot", "--urgency", "routine",
                       "--target", "42:5", "--slot", "20", "--then",
                       "consume")
    if rc != 0 or kv.get("outcome") != "approved" or \
            kv.get("consume") != "accepted":
        fail(f"lifecycle: {kv}")
    print(f"run: decision approved: grant {kv.get('grant')} installed at "
          f"slot {kv.get('slot')}; consumed")
    # vfsd's RESOLVE line, written just after its reply, must name the
    # scope the client was handed (waited for, bounded).
    obj = last_object(st, kv.get("scope", "none"))
    print(f"run: scope {kv.get('scope')} named by the inode of the end "
          f"vfsd handed out, as powerboxd's fstat of its copy reports")
    cleaned(st, obj)


def lie_scope(st):
    """A FOUND naming another scope than the committed one is refused."""
    rc, kv = st.client("--lifetime", "one-shot", "--urgency", "routine",
                       "--target", "42:5", "--slot", "23",
                       scope=st.lie_scope)
    if rc != 3 or kv.get("outcome") != "denied":
        fail(f"lie-scope: a misnamed scope was not denied: {kv}")
    # vfsd logs its RESOLVE line just after its reply: wait, bounded.
    wait_for(lambda: "(a lie: --lie-scope)" in st.peer_log("vfsd"),
             "vfsd never answered through the lying scope")
    time.sleep(0.2)
    if read_rows(st.installs) or read_rows(st.views):
        fail("a denied misnamed scope left an install or a row")
    obj = last_object(st)
    wait_for(lambda: f"HANG-UP object {obj}" in st.peer_log("vfsd"),
             f"vfsd kept the row of refused object {obj}")
    print(f"run: FOUND naming another identity than scope "
          f"{kv.get('scope')} denied; nothing installed; vfsd freed the "
          f"row of object {obj} when its last copy hung up")


def expire(st):
    """EXPIRE is launchd's only through its broker connection. The job
    (11:1) is a launched shell that stays alive after its client exits,
    so that only EXPIRE ends the job grant, and the EXPIRE --public is
    refused at once (the refusal is timed)."""
    job = Shell(st, "11:1")
    rc, kv = job.request("--lifetime", "job", "--urgency", "routine",
                         "--slot", "21")
    if rc != 0 or kv.get("outcome") != "approved":
        fail(f"expire: no grant: {kv}")
    obj = last_object(st, kv.get("scope", "none"))
    t = time.monotonic()
    rc, _ = st.launchd_expire("--public")
    took = time.monotonic() - t
    if rc == 0:
        fail("EXPIRE on the public endpoint was accepted")
    if took > 2.0 * SLOW:
        fail(f"EXPIRE on the public endpoint refused after {took:.2f} s")
    time.sleep(0.2)
    if len(read_rows(st.installs)) != 1 or len(read_rows(st.views)) != 1:
        fail("a refused EXPIRE changed the grant")
    print(f"run: EXPIRE on an ordinary public connection refused in "
          f"{took:.2f} s; grant still live (its job still runs)")
    rc, out = st.launchd_expire("--control")
    if rc != 0 or out != "expire=accepted":
        fail(f"EXPIRE through the broker: {out}")
    cleaned(st, obj)
    if job.close() != 0:
        fail("expire: the job's shell failed")


def runtime_reply(st):
    """launchd's broker relays a running caller's runtime-reply request."""
    before = st.peer_log("launchd").count("alias handed to the caller")
    rc, kv = st.client("--lifetime", "one-shot", "--urgency", "routine",
                       "--mode", "runtime-reply", "--then", "consume",
                       "--verify-object", st.root)
    if rc != 0 or kv.get("outcome") != "approved" or \
            kv.get("mode") != "runtime-reply" or "alias_inode" not in kv or \
            kv.get("object") != "verified":
        fail(f"runtime-reply: {kv}")
    aliases = st.peer_log("launchd").count("alias handed to the caller") - \
        before
    if aliases != 1:
        fail(f"the alias crossed the broker {aliases} times")
    if kv.get("alias") != "revoked":
        fail("the caller's alias outlived the grant")
    print(f"run: alias {kv['alias_inode']} handed over once through the "
          f"broker, the object it names is docs/readme.txt (vfsd's STAT), "
          f"revoked after CONSUME")
    cleaned(st, last_object(st, kv.get("scope", "none")))


def direct(st):
    """BEGIN on powerboxd's own public endpoint: refused, nothing kept."""
    base = fd_count(st.pid)
    argv = [os.path.join(st.bin_dir, "pbx-client"), "request", "--public",
            st.public, "--scope", st.scope, "--selector", "docs/readme.txt",
            "--op", "read", "--class", "file", "--lifetime", "one-shot",
            "--job", "11:1", "--entry", "bin/cat", "--session", "7",
            "--realm", "3", "--target", "42:5", "--slot", "20"]
    out = st.run(argv)
    if out.returncode != 1 or "request=" in out.stdout or \
            "BEGIN refused" not in out.stderr or \
            f"(0x{E_CORE_BROKER:04x})" not in out.stderr:
        fail(f"a BEGIN on the public endpoint was not refused with "
             f"PBX_E_CORE_BROKER: {out.stdout} {out.stderr}")
    wait_for(lambda: fd_count(st.pid) == base,
             f"powerboxd holds {fd_count(st.pid)} descriptors, not {base}")
    rc, kv = st.client("--lifetime", "one-shot", "--urgency", "routine",
                       "--target", "42:5", "--slot", "20", "--then",
                       "consume")
    if rc != 0 or kv.get("consume") != "accepted":
        fail(f"powerboxd stopped serving after a refused BEGIN: {kv}")
    cleaned(st, last_object(st, kv.get("scope", "none")))
    print("run: BEGIN on the public endpoint refused (PBX_E_CORE_BROKER); "
          "the same request through launchd approved and consumed")


def hangup(st):
    """A caller that dies after COMMIT: launchd cancels its request."""
    launchd = st.procs[3].pid
    # Settled: launchd may not yet have closed the control connection of
    # the previous scenario's client.
    base = (settled_fds(st.pid), settled_fds(launchd))
    rc, kv = st.client("--lifetime", "one-shot", "--urgency", "routine",
                       "--target", "42:5", "--slot", "23", "--then",
                       "hang-up")
    if rc != 0 or kv.get("hang_up") != "after-commit" or "request" not in kv:
        fail(f"hangup: the request was not committed: {kv}")
    line = f"hang-up: CANCEL request {kv['request']} "
    wait_for(lambda: line in st.peer_log("launchd"),
             f"launchd never cancelled request {kv['request']}", 10.0)
    said = [l for l in st.peer_log("launchd").splitlines() if line in l][0]
    # Cancelled in flight; or, when the approval was already published,
    # the decision stays as published (final until delivered) and the
    # CANCEL ends the grant it names: either way nothing stays installed
    # or shown (checked below).
    if not (said.endswith("decision cancelled") or
            said.endswith("decision approved")):
        fail(f"hangup: {said}")
    wait_for(lambda: read_rows(st.installs) == [],
             f"procd still holds {read_rows(st.installs)}")
    wait_for(lambda: read_rows(st.views) == [],
             f"ttyd still shows {read_rows(st.views)}")
    wait_for(lambda: (fd_count(st.pid), fd_count(launchd)) == base,
             f"descriptors {(fd_count(st.pid), fd_count(launchd))}, "
             f"not the baseline {base}")
    print(f"run: {said.split(': ', 1)[1]}; nothing installed or shown, "
          f"descriptors back to {base}")


def simple(st, *args, job="12:1", entry="bin/other"):
    """Runs pbx-client with args as another program: launched as job
    (with job None, on a plain control connection of launchd, as a
    program launchd did not launch); returns (rc, stdout, stderr)."""
    argv = [st.bin("client")] + list(args)
    if job is None:
        argv += ["--control", st.control]
    else:
        argv = st.launch_argv(argv, job, entry)
    out = st.run(argv)
    return out.returncode, out.stdout, out.stderr


def relayed(st, *ops):
    """How many replies to ops (operation names) launchd relayed."""
    text = st.peer_log("launchd")
    return sum(count(text, f"broker: op {op} ") for op in ops)


def foreign(st):
    """Another program cannot drive a request or grant it did not begin:
    launchd answers PBX_E_PEER_NOT_YOURS itself; the grant outlives the
    client that got it (its job, a launched shell, lives on) and only
    launchd's EXPIRE ends it. The other program is another launched job
    (12:1), and once a program launchd did not launch (a plain control
    connection)."""
    job = Shell(st, "11:1")
    rc, kv = job.request("--lifetime", "one-shot", "--urgency", "routine",
                         "--slot", "24")
    if rc != 0 or kv.get("outcome") != "approved":
        fail(f"foreign: no grant: {kv}")
    obj = last_object(st, kv.get("scope", "none"))
    before = relayed(st, "cancel", "consume")
    for args, launched in ((["consume", "--grant", kv["grant"]], True),
                           (["cancel", "--request", kv["request"]], True),
                           (["cancel", "--job", "11:1", "--session", "7"],
                            True),
                           (["consume", "--grant", kv["grant"]], False)):
        rc, out, err = simple(st, *args, job="12:1" if launched else None)
        if rc != 1 or "accepted" in out or \
                f"(0x{E_PEER_NOT_YOURS:04x})" not in err:
            fail(f"foreign: {' '.join(args)} was not refused as not "
                 f"yours: {out} {err}")
    if relayed(st, "cancel", "consume") != before:
        fail("foreign: a refused frame reached powerboxd")
    time.sleep(0.2)
    if len(read_rows(st.installs)) != 1 or len(read_rows(st.views)) != 1:
        fail("foreign: a refused frame changed the grant")
    print(f"run: CONSUME of grant {kv['grant']}, CANCEL of request "
          f"{kv['request']} and of its job and session from another job, "
          f"and CONSUME from an unlaunched program, refused by launchd "
          f"(0x08c8); grant still live")
    rc, out = st.launchd_expire("--control")
    if rc != 0 or out != "expire=accepted":
        fail(f"foreign: EXPIRE through the broker: {out}")
    cleaned(st, obj)
    if job.close() != 0:
        fail("foreign: the job's shell failed")


def scope_hoard(st):
    """One process takes scopes from vfsd's scope socket until refused:
    it gets exactly vfsd's default --scopes-per-pid (32) and vfsd logs the
    refusal naming it; while it holds them, an honest request (a job
    through launchd) is approved; once they are given back, another
    process's scope is handed out as before."""
    held = []
    try:
        for _ in range(300):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            s.settimeout(5)
            s.connect(st.scope)
            _, fds, _, _ = socket.recv_fds(s, 64, 1)
            s.close()
            if not fds:
                break
            held.extend(fds)
        if len(held) != 32:
            fail(f"scope-hoard: this process got {len(held)} scopes, not "
                 f"the 32 of --scopes-per-pid")
        want = (f"vfsd: scope refused to pid {os.getpid()}: it holds 32 "
                f"scope(s), the most one process may (--scopes-per-pid 32)")
        wait_for(lambda: want in st.peer_log("vfsd"),
                 f"scope-hoard: vfsd never logged '{want}'")
        lifecycle(st)
        print(f"run: scope-hoard: {len(held)} scopes held by pid "
              f"{os.getpid()}, the next refused and logged; an honest "
              f"request approved meanwhile")
    finally:
        for fd in held:
            os.close(fd)
