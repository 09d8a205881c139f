"""e2e scenarios (tests/e2e/run.py) of the limits of any program under
pbx-broker: any-flood, any-python, any-userns, any-mount, any-nofuse and
any-ask-flood."""
import os
import re
import shutil
import subprocess
import time
import types

from e2e_harness import (detach_mounts, fail, key_values, Stack, TMUX_SOCKET,
                         wait_for)
from e2e_jobs import clear_pane, pane_text, Panes, tmux
from e2e_up import Up
from scn_any import broker_prompt, broker_root_file, broker_run, tree_of


ANY_FLOOD_PROG = """
import errno, os, sys
ok = refused = 0
for i in range(1000):
    try:
        os.close(os.open(os.path.join(sys.argv[1], "f%04d" % i), os.O_RDONLY))
        ok += 1
    except OSError as e:
        refused += e.errno == errno.EACCES
print("opened=%d" % ok, flush=True)
print("refused=%d" % refused, flush=True)
"""
# pbx-broker's default prompt budget (peers/broker/broker.c, docs/HOST.md
# "Brokered opens"): a burst of 5, then one more every 2000 ms.
BROKER_BURST, BROKER_PER_MS = 5, 2000


def any_flood_other(st, queued):
    """While the flood's first prompt shows: another sandboxed program
    (cat) opens docs/readme.txt, its prompt queues behind the flood's
    (ttyd logs a second prompt held), the flood's is answered n, the
    other's shows and is answered y: cat prints exactly the file. Returns
    the bytes cat printed."""
    readme = os.path.join(os.path.realpath(st.root), "docs", "readme.txt")
    other = broker_run(st, ["/bin/cat", readme],
                       os.path.join(st.work, "any-flood-other.err"))
    wait_for(lambda: queued() > 0, "any-flood: the other program's prompt "
             "never queued behind the flood's", 20)
    tmux("send-keys", "-t", st.pane, "n")
    broker_prompt(st, "docs/readme.txt", "cat", 20.0)
    tmux("send-keys", "-t", st.pane, "y")
    if other.wait(timeout=30) != 0:
        fail(f"any-flood: the other program exited {other.proc.returncode}")
    with open(readme, encoding="utf-8") as f:
        want = f.read().splitlines()
    with other.cv:
        got = [l for l in other.lines if l is not None]
    if got != want:
        fail(f"any-flood: the other program printed {got!r}, not {want!r}")
    return got


def any_flood_lines(err, answered, ran_ms):
    """The flood's stderr (pbx-broker's lines): every one of the 1,000
    refusals is either written or counted in a "suppressed" line, and
    at most pbx-broker's 16 lines at once then one a second (plus the
    counts) are written. Returns (refusals written, suppressed)."""
    with open(err, encoding="utf-8") as f:
        text = f.read()
    limited = text.count("over the job's prompt rate")
    denied = text.count("the request was denied")
    counts = [int(n) for n in
              re.findall(r"pbx-broker: (\d+) line\(s\) suppressed", text)]
    written = sum(1 for l in text.splitlines() if l.startswith("pbx-broker:"))
    allowed = 16 + int(ran_ms // 1000) + 1
    if limited + denied + sum(counts) != 1000 or \
            written - len(counts) > allowed or denied > answered:
        fail(f"any-flood: {limited} rate lines, {denied} denials, "
             f"{sum(counts)} suppressed, {written} lines written "
             f"(bound {allowed}):\n{text[-2000:]}")
    return limited + denied, sum(counts)


def any_flood(st):
    """A program (python3) opens 1,000 distinct files of its scope in a
    loop, each prompt answered `n`: it is prompted at most the burst plus
    one per period of the time it ran, every other open refused EACCES
    without a prompt (pbx-broker says so, its lines rate-limited: at most
    16 at once, then one a second, the rest counted); while its first
    prompt shows, another program's brokered open queues, is shown after
    it and approved (exactly the file's bytes); the pane then prompts the
    flood again."""
    broker_root_file(st)
    flood = os.path.join(os.path.realpath(st.root), "flood")
    os.makedirs(flood, exist_ok=True)
    for i in range(1000):
        with open(os.path.join(flood, "f%04d" % i), "w") as f:
            f.write("x")
    ttyd_log = os.path.join(st.work, "logs", "ttyd.log")

    def count(pattern):
        with open(ttyd_log, "rb") as f:
            return len(re.findall(pattern, f.read()))

    def showing():
        return count(rb"PROMPT \S+: showing")
    base = showing()
    held = count(rb"PROMPT \S+: queued \(2 held\)")
    err = os.path.join(st.work, "any-flood.err")
    clear_pane(st)
    t0 = time.monotonic()
    job = broker_run(st, ["/usr/bin/python3", "-c", ANY_FLOOD_PROG, flood],
                     err)
    answered = 0
    other = None
    for _ in range(1100):
        wait_for(lambda: showing() > base + answered or not job.running(),
                 "any-flood: neither a prompt nor the program's end", 30)
        if not job.running() and showing() == base + answered:
            break
        if other is None:
            other = any_flood_other(
                st, lambda: count(rb"PROMPT \S+: queued \(2 held\)") - held)
            base += 1  # the other program's prompt was shown and answered
            answered += 1
            continue
        tmux("send-keys", "-t", st.pane, "n")
        answered += 1
    if job.wait(timeout=30) != 0:
        fail(f"any-flood: the program exited {job.proc.returncode}")
    ran_ms = (time.monotonic() - t0) * 1000.0
    bound = BROKER_BURST + int(ran_ms // BROKER_PER_MS) + 1
    kv = job.kv()
    written, suppressed = any_flood_lines(err, answered, ran_ms)
    if answered > bound or kv.get("opened") != "0" or \
            kv.get("refused") != "1000":
        fail(f"any-flood: {answered} prompts (bound {bound}), {kv}")
    print(f"run: any-flood: {answered} prompts for 1000 opens in "
          f"{ran_ms:.0f} ms (bound {bound}), the rest refused by the rate "
          f"without a prompt ({written} broker lines written, {suppressed} "
          f"counted as suppressed); another program's prompt was shown "
          f"and approved while the flood waited ({len(other)} line(s))")


ANY_PYTHON_PROG = """
import errno, os, sys
docs = os.path.join(sys.argv[1], "docs")
with open(os.path.join(docs, "py-a.txt")) as f:
    print("read=" + f.read().strip(), flush=True)
with open(os.path.join(docs, "py-b.txt"), "w") as f:
    f.write("written by python\\n")
print("wrote=1", flush=True)
try:
    with open(os.path.join(docs, "py-c.txt"), "x") as f:
        f.write("created\\n")
    print("created=ok", flush=True)
except OSError as e:
    print("created=" + errno.errorcode.get(e.errno, str(e.errno)),
          flush=True)
with open(os.path.join(docs, "py-d.txt"), "r+") as f:
    old = f.read()
    f.seek(2)
    f.write("AB")
print("rdwr=" + old.strip(), flush=True)
fd = os.open(os.path.join(docs, "py-e.txt"), os.O_CREAT | os.O_RDONLY, 0o600)
print(f"ro-read={os.read(fd, 16)!r}", flush=True)
try:
    os.write(fd, b"x")
    print("ro-write=ok", flush=True)
except OSError as e:
    print("ro-write=" + errno.errorcode.get(e.errno, str(e.errno)),
          flush=True)
"""


def any_python(bin_dir, work):
    """(standalone: `pbx up` on a tmux pane, its built-in policy) python3
    under `pbx run --sandbox --scope root` reads one file (a read prompt,
    `y`) and rewrites another with open(..., "w") (a write prompt, `y`):
    the bytes read are the file's, the rewritten file holds exactly the
    new bytes (the broker truncated it through vfsd); it creates a third
    (a create prompt, `y`: vfsd makes the file, which holds exactly its
    bytes); it opens a fourth 'r+' (O_RDWR: a write prompt, `y`), reads it
    whole, seeks and writes 2 bytes over it: the bytes read are the
    file's and the file holds exactly the overwrite (issue 21); it opens a
    missing fifth O_CREAT | O_RDONLY (a create prompt, `y`): vfsd makes it
    empty and its descriptor is read-only as the kernel's (reads b'',
    a write fails EBADF; review D5); nothing else under the root
    changes."""
    saved = TMUX_SOCKET[:]
    os.makedirs(work, exist_ok=True)
    panes = Panes(work)
    up = None
    try:
        pane, tty = panes.new()
        up = Up(bin_dir, work, ["--tty", tty])
        view = types.SimpleNamespace(pane=pane, tty=tty)
        root = os.path.realpath(up.root)
        docs = os.path.join(root, "docs")
        with open(os.path.join(docs, "py-a.txt"), "w") as f:
            f.write("read by python\n")
        with open(os.path.join(docs, "py-b.txt"), "w") as f:
            f.write("the old, longer content of the second file\n")
        with open(os.path.join(docs, "py-d.txt"), "w") as f:
            f.write("0123456789\n")
        # A run before this one (the work directory is kept) made it.
        for made in ("py-c.txt", "py-e.txt"):
            if os.path.exists(os.path.join(docs, made)):
                os.unlink(os.path.join(docs, made))
        # A profile may not name vfsd's root, nor anything at, beneath or
        # above it: a brokered scope's files are asked for, never opened
        # by the program itself under Landlock's leave.
        prof = os.path.join(work, "root.profile")
        with open(prof, "w", encoding="utf-8") as f:
            f.write(f"+r {docs}\n")
        out = subprocess.run(
            [os.path.join(bin_dir, "pbx"), "--dir", up.dir, "run",
             "--sandbox", "--profile", prof, "--", "/bin/cat",
             os.path.join(docs, "py-a.txt")], stdin=subprocess.DEVNULL,
            capture_output=True, text=True, timeout=60, check=False)
        if out.returncode != 125 or out.stdout:
            fail(f"any-python: a profile naming {docs}: rc "
                 f"{out.returncode}, {out.stdout!r} {out.stderr!r}")
        wait_for(lambda: "vfsd's root" in up.text(),
                 "any-python: launchd never said it refused a profile "
                 "naming vfsd's root")
        print(f"run: a profile naming {docs} was refused: "
              f"{out.stderr.strip()}")
        before = tree_of(root)
        err = open(os.path.join(work, "any-python.err"), "w")
        job = subprocess.Popen(
            [os.path.join(bin_dir, "pbx"), "--dir", up.dir, "run",
             "--sandbox", "--scope", "root", "--quiet", "--",
             "/usr/bin/python3", "-c", ANY_PYTHON_PROG, root],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err,
            text=True)
        err.close()
        for sel, op in (("docs/py-a.txt", "wants   : read"),
                        ("docs/py-b.txt", "wants   : write"),
                        ("docs/py-c.txt", "wants   : create"),
                        ("docs/py-d.txt", "wants   : write"),
                        ("docs/py-e.txt", "wants   : create")):
            broker_prompt(view, sel, "python3", 30)
            if op not in pane_text(view):
                fail(f"any-python: the prompt for {sel} is not a {op}")
            tmux("send-keys", "-t", pane, "y")
        out, _ = job.communicate(timeout=60)
        kv = key_values(out)
        with open(os.path.join(docs, "py-b.txt")) as f:
            b = f.read()
        c_path = os.path.join(docs, "py-c.txt")
        with open(c_path) as f:
            c = f.read()
        d_path = os.path.join(docs, "py-d.txt")
        with open(d_path) as f:
            d = f.read()
        e_path = os.path.join(docs, "py-e.txt")
        if kv.get("ro-read") != "b''" or kv.get("ro-write") != "EBADF" or \
                not os.path.isfile(e_path) or os.path.getsize(e_path) != 0:
            fail(f"any-python: O_CREAT|O_RDONLY: {kv}, made "
                 f"{os.path.exists(e_path)}")
        if job.returncode != 0 or kv.get("read") != "read by python" or \
                kv.get("wrote") != "1" or kv.get("created") != "ok" or \
                b != "written by python\n" or c != "created\n" or \
                kv.get("rdwr") != "0123456789" or d != "01AB456789\n":
            fail(f"any-python: rc {job.returncode}, {kv}, py-b {b!r}, "
                 f"py-c {c!r}, py-d {d!r}")
        after = tree_of(root)
        changed = {p for p in set(after) | set(before)
                   if after.get(p) != before.get(p)}
        if changed != {os.path.join(docs, "py-b.txt"), c_path, d_path,
                       e_path}:
            fail(f"any-python: changed under the root: {changed}")
        print("run: any-python: read exactly, rewrote exactly (truncated "
              "through vfsd), created exactly (vfsd made the file on "
              "approval), read and overwrote an O_RDWR open exactly; "
              "nothing else changed")
    finally:
        if up is not None:
            up.kill()
        panes.stop()
        TMUX_SOCKET[:] = saved


# --- Brokered opens, the broker's remaining gaps (issue 21, brokerfix):
# any-userns, any-mount, any-nofuse.


def any_userns(st):
    """A brokered job lives in a user namespace of its own with an
    identity map of its user (so that, under Yama's ptrace_scope 1, the
    broker, the namespace's owner outside it, may read the memory of every
    process the job forks): /bin/sh reads its uid_map (its own /proc/PID
    is the one its rules cover) and prints it and its namespace,
    then forks cat, whose open of a scope file is brokered (prompt, `y`,
    exactly the bytes)."""
    broker_root_file(st)
    f = os.path.join(os.path.realpath(st.root), "docs", "userns.txt")
    with open(f, "w", encoding="utf-8") as fh:
        fh.write("bytes through a forked cat\n")
    clear_pane(st)
    job = broker_run(st, ["/bin/sh", "-c",
                          "read -r a b c < /proc/self/uid_map; "
                          "echo map=$a $b $c; "
                          "echo ns=$(readlink /proc/self/ns/user); "
                          "cat \"$1\"", "sh", f],
                     os.path.join(st.work, "any-userns.err"))
    broker_prompt(st, "docs/userns.txt", "sh")
    tmux("send-keys", "-t", st.pane, "y")
    job.wait_line(lambda l: l == "bytes through a forked cat",
                  "the forked cat's bytes", seconds=20)
    if job.wait(timeout=30) != 0:
        fail(f"any-userns: sh exited {job.proc.returncode}")
    kv = job.kv()
    uid = os.geteuid()
    mine = os.readlink("/proc/self/ns/user")
    if kv.get("map", "").split() != [str(uid), str(uid), "1"] or \
            not kv.get("ns", "").startswith("user:[") or kv["ns"] == mine:
        fail(f"any-userns: map {kv.get('map')!r} ns {kv.get('ns')!r} "
             f"(the stack's {mine})")
    print(f"run: any-userns: the job's uid_map '{kv['map']}', its namespace "
          f"{kv['ns']} (not the stack's {mine}); its forked cat's open was "
          f"brokered and printed the bytes")


ANY_MOUNT_PROG = """
import errno, os, sys
for name, path in (("inside", sys.argv[1] + "/x"), ("mount", sys.argv[1]),
                   ("above", sys.argv[2])):
    try:
        os.close(os.open(path, os.O_RDONLY))
        print(name + "=ok", flush=True)
    except OSError as e:
        print(name + "=" + errno.errorcode.get(e.errno, str(e.errno)),
              flush=True)
"""


def any_mount(st):
    """launchd passes vfsd's FUSE mount (its --fuse-dir) to the broker
    (--mount): a path inside the mount, the mount itself and a directory
    above it are each refused EACCES without asking, with the broker's
    line for the revocable mount (not the generic "outside the scope")."""
    broker_root_file(st)
    mount = os.path.realpath(st.fuse)
    above = os.path.dirname(mount)
    err = os.path.join(st.work, "any-mount.err")
    job = broker_run(st, ["/usr/bin/python3", "-c", ANY_MOUNT_PROG, mount,
                          above], err)
    if job.wait(timeout=30) != 0:
        fail(f"any-mount: python3 exited {job.proc.returncode}")
    kv = job.kv()
    with open(err, encoding="utf-8") as f:
        said = f.read()
    want = [f"pbx-broker: {p}: the revocable mount, refused without asking"
            for p in (mount + "/x", mount, above)]
    if any(kv.get(k) != "EACCES" for k in ("inside", "mount", "above")) or \
            any(w not in said for w in want):
        fail(f"any-mount: {kv}, the broker said {said!r}")
    print(f"run: any-mount: inside, the mount itself and above it: EACCES, "
          f"each with the broker's 'the revocable mount' line ({kv})")


def any_nofuse(bin_dir, work):
    """(standalone: its own stack, where vfsd cannot mount FUSE: its
    --fuse-dir is a regular file) a brokered open of a scope file is
    refused EACCES before anyone is asked: the broker's line says FUSE is
    not mounted at vfsd's mount, no request reaches launchd, and ttyd
    draws nothing; a system file still reads."""
    os.makedirs(work, exist_ok=True)
    fuse = os.path.join(work, "fuse")
    detach_mounts(fuse)
    if os.path.isdir(fuse):
        shutil.rmtree(fuse)
    with open(fuse, "w", encoding="utf-8") as f:
        f.write("not a directory\n")
    st = Stack(bin_dir, work)
    try:
        with open(os.path.join(work, "logs", "vfsd.log"), "rb") as f:
            if b"FUSE unavailable at" not in f.read():
                fail("any-nofuse: vfsd did not say FUSE is unavailable")
        readme = os.path.join(os.path.realpath(st.root), "docs", "readme.txt")
        err = os.path.join(work, "any-nofuse.err")
        job = broker_run(st, ["/bin/cat", readme, "/etc/passwd"], err)
        rc = job.wait(timeout=30)
        with open(err, encoding="utf-8") as f:
            said = f.read()
        why = (f"vfsd's FUSE mount {os.path.realpath(fuse)} is not mounted: "
               f"no revocable descriptor can be handed over, refused "
               f"without asking")
        with open(os.path.join(work, "logs", "launchd.log"), "rb") as f:
            begins = f.read().count(b"op begin")
        if rc != 1 or why not in said or \
                f"cat: {readme}: Permission denied" not in said or \
                begins != 0:
            fail(f"any-nofuse: rc {rc}, {begins} BEGIN(s) at launchd, "
                 f"stderr {said!r}")
        print(f"run: any-nofuse: cat's open refused before asking "
              f"('{why}'), no BEGIN reached launchd")
    finally:
        st.stop()


def any_ask_flood(st):
    """A sandboxed job floods its own job connection (fd 3, libpbx-app:
    pbx-test-fdcat --asks 30, exceptional requests), each prompt answered
    `n`: launchd's one prompt budget per job (5 in a row, then one per
    2000 ms) limits it: at most the burst plus one per period of the time
    it ran are prompted, every other request is refused before anyone is
    asked (launchd logs it, the job sees the budget's status); another
    program's request is served while the flood's prompt shows."""
    broker_root_file(st)
    ttyd_log = os.path.join(st.work, "logs", "ttyd.log")

    def showing():
        with open(ttyd_log, "rb") as f:
            return len(re.findall(rb"PROMPT \S+: showing", f.read()))
    base = showing()
    clear_pane(st)
    asks = 30
    t0 = time.monotonic()
    job = broker_run(st, [st.bin("test-fdcat"), "--asks", str(asks),
                          "docs/readme.txt"],
                     os.path.join(st.work, "any-ask-flood.err"))
    answered, other = 0, None
    for _ in range(asks + 5):
        wait_for(lambda: showing() > base + answered or not job.running(),
                 "any-ask-flood: neither a prompt nor the program's end", 30)
        if not job.running() and showing() == base + answered:
            break
        if other is None:
            other = subprocess.run(
                [os.path.join(st.bin_dir, "pbx"), "--dir", st.work, "run",
                 "--quiet", "--grant", "read:docs/readme.txt", "--",
                 st.bin("test-fdcat"), "5"],
                capture_output=True, text=True, timeout=30, check=False,
                stdin=subprocess.DEVNULL)
        tmux("send-keys", "-t", st.pane, "n")
        answered += 1
    if job.wait(timeout=30) != 0:
        fail(f"any-ask-flood: the program exited {job.proc.returncode}")
    ran_ms = (time.monotonic() - t0) * 1000.0
    bound = BROKER_BURST + int(ran_ms // BROKER_PER_MS) + 1
    with job.cv:
        said = [l for l in job.lines if l is not None and
                l.startswith("asks=")]
    kv = key_values(said[-1].replace(" ", "\n")) if said else {}
    with open(os.path.join(st.work, "logs", "launchd.log"), "rb") as f:
        logged = f.read().count(b"BEGIN refused: over the job's prompt "
                                b"budget")
    if answered > bound or kv.get("denied") != str(answered) or \
            kv.get("rate") != str(asks - answered) or \
            logged < asks - answered:
        fail(f"any-ask-flood: {answered} prompts (bound {bound}), {kv}, "
             f"launchd logged {logged} refusals")
    if other is None or other.returncode != 0 or \
            "hello from vfsd" not in other.stdout:
        fail(f"any-ask-flood: the other program was not served: {other}")
    print(f"run: any-ask-flood: {answered} prompts for {asks} requests on "
          f"the job's own fd 3 in {ran_ms:.0f} ms (bound {bound}); "
          f"{kv.get('rate')} refused by launchd's budget without asking; "
          f"another program read its file meanwhile")
