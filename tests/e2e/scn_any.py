"""e2e scenarios (tests/e2e/run.py) of any program under pbx-broker:
any-cat, any-keys, any-escape and any-revoke, and the broker helpers the
other any-* and sandbox scenarios share."""
import base64
import os
import re
import shlex
import subprocess
import zlib

from e2e_harness import fail, key_values, wait_for
from e2e_jobs import clear_pane, flush_typed, Launched, pane_text, tmux


# --- Brokered opens (issue 21: any-cat, any-escape, any-revoke,
# any-flood). A job run with `pbx run --sandbox --scope root` has its
# open family reported to its own pbx-broker (docs/HOST.md, "Brokered
# opens"); `pbx run` reads the stack's root from DIR/root.path, which
# pbx up writes and these scenarios write for the test stack.


def broker_root_file(st):
    """Names st's vfsd root in DIR/root.path, as pbx up does."""
    with open(os.path.join(st.work, "root.path"), "w",
              encoding="utf-8") as f:
        f.write(os.path.realpath(st.root) + "\n")


def broker_run(st, argv, stderr_path, stdin=subprocess.DEVNULL):
    """A brokered sandboxed job (scope: the whole root) in the background:
    its stdout collected by Launched, its stderr into stderr_path, its
    stdin a pipe when stdin is None."""
    err = open(stderr_path, "w", encoding="utf-8")
    job = Launched(st, [os.path.join(st.bin_dir, "pbx"), "--dir", st.work,
                        "run", "--sandbox", "--scope", "root", "--quiet",
                        "--"] + list(argv),
                   stdin=stdin, stderr=err)
    err.close()
    return job


def broker_prompt(st, selector, program, seconds=15.0):
    """Waits for the pane's prompt naming program and selector; returns
    the screen."""
    def shown():
        screen = pane_text(st)
        return "Approve?" in screen and \
            f'selector: "{selector}"' in screen and \
            f"program : {program}" in screen
    wait_for(shown, f"no prompt for {program} {selector}", seconds)
    return pane_text(st)


def any_cat(st):
    """Dynamic /bin/cat, sandboxed with brokered opens, opens a file in
    its scope: the prompt names cat, the selector and the resolved path;
    `y` prints exactly the file's bytes (through vfsd's revocable
    descriptor); a second file answered `n` gives cat's own
    "Permission denied"."""
    broker_root_file(st)
    docs = os.path.join(os.path.realpath(st.root), "docs")
    a, b = os.path.join(docs, "cat-a.txt"), os.path.join(docs, "cat-b.txt")
    with open(a, "w", encoding="utf-8") as f:
        f.write("the bytes cat prints\n")
    with open(b, "w", encoding="utf-8") as f:
        f.write("never shown\n")
    err = os.path.join(st.work, "any-cat.err")
    clear_pane(st)
    job = broker_run(st, ["/bin/cat", a], err)
    screen = broker_prompt(st, "docs/cat-a.txt", "cat")
    if a[-50:] not in screen:
        fail(f"any-cat: the prompt does not name the path {a}:\n{screen}")
    print("run: the terminal shows:\n" + "\n".join(
        "    " + l for l in screen.splitlines() if l.strip()))
    tmux("send-keys", "-t", st.pane, "y")
    job.wait_line(lambda l: l == "the bytes cat prints", "the file's bytes",
                  seconds=20)
    if job.wait(timeout=30) != 0:
        fail(f"any-cat: cat exited {job.proc.returncode}")
    with job.cv:
        got = [l for l in job.lines if l is not None]
    if got != ["the bytes cat prints"]:
        fail(f"any-cat: cat printed {got!r}")
    print("run: y: cat printed exactly the file's bytes")
    clear_pane(st)
    job = broker_run(st, ["/bin/cat", b], err)
    broker_prompt(st, "docs/cat-b.txt", "cat")
    tmux("send-keys", "-t", st.pane, "n")
    rc = job.wait(timeout=30)
    with open(err, encoding="utf-8") as f:
        said = f.read()
    if rc != 1 or f"cat: {b}: Permission denied" not in said or \
            any(l for l in job.lines if l):
        fail(f"any-cat: n: rc {rc}, stderr {said!r}, out {job.lines!r}")
    print(f"run: n: cat exited 1 with its own 'cat: {b}: Permission "
          f"denied'")
    any_cat_relative(st, docs, err)


def any_cat_relative(st, docs, err):
    """`cd docs/sub; pbx run --sandbox -- cat notes.txt`: the job runs in
    the caller's directory (pbx run hands it over in the LAUNCH), so cat's
    relative open names docs/sub/cwd-notes.txt, and the prompt says so.
    Before, the job ran in launchd's directory and the open named another
    file (refused there as outside the scope, or the wrong file)."""
    sub = os.path.join(docs, "sub")
    os.makedirs(sub, exist_ok=True)
    mine = os.path.join(sub, "cwd-notes.txt")
    with open(mine, "w", encoding="utf-8") as f:
        f.write("the caller's notes\n")
    # Absolute: the shell changes directory before it runs pbx.
    pbx = [os.path.abspath(os.path.join(st.bin_dir, "pbx")), "--dir",
           os.path.abspath(st.work), "run",
           "--sandbox", "--scope", "root", "--quiet", "--", "/bin/cat",
           "cwd-notes.txt"]
    clear_pane(st)
    out = open(err, "w", encoding="utf-8")
    job = Launched(st, ["/bin/sh", "-c", "cd " + shlex.quote(sub) +
                        " && exec " + " ".join(shlex.quote(a) for a in pbx)],
                   stdin=subprocess.DEVNULL, stderr=out)
    out.close()
    screen = broker_prompt(st, "docs/sub/cwd-notes.txt", "cat")
    if mine[-50:] not in screen:
        fail(f"any-cat: the prompt does not name {mine}:\n{screen}")
    tmux("send-keys", "-t", st.pane, "y")
    job.wait_line(lambda l: l == "the caller's notes", "the caller's notes",
                  seconds=20)
    if job.wait(timeout=30) != 0:
        fail(f"any-cat: cat cwd-notes.txt exited {job.proc.returncode}")
    print(f"run: cd {sub}; cat cwd-notes.txt: the prompt named {mine} "
          f"and cat printed it")


# any-keys (issue 21 item 4, review D1): ttyd reads its terminal as a
# terminal's parser would, so no escape sequence answers a prompt.

ANY_KEYS_MODES = ("\\033[?1000h\\033[?1002h\\033[?1003h\\033[?1006h"
                  "\\033[?1004h\\033[?2004h\\033=\\033[?1h\\033[>4;2m"
                  "\\033[?5h")
# tmux keeps one mouse mode, the last set (1003: any motion).
ANY_KEYS_FLAGS = ("mouse_any_flag", "mouse_sgr_flag", "keypad_flag",
                  "keypad_cursor_flag")


def any_keys_flags(st):
    """The tmux pane's mouse and keypad modes, name -> '0' or '1'."""
    fmt = " ".join("#{" + f + "}" for f in ANY_KEYS_FLAGS)
    got = tmux("display-message", "-p", "-t", st.pane, fmt).split()
    return dict(zip(ANY_KEYS_FLAGS, got))


def any_keys_one(st, path, junk, key):
    """A sandboxed sh on the pane turns mouse tracking (1000/1002/1003,
    SGR), focus reports, bracketed paste, keypad and cursor-key modes,
    modifyOtherKeys and reverse video on, says so, waits for Enter, then
    execs cat PATH (a brokered open). While the prompt shows, the pane
    receives each hex sequence of junk, then key. Returns (pbx run's exit
    code, the screen after)."""
    clear_pane(st)
    flush_typed(st)
    script = (f"printf '{ANY_KEYS_MODES}'; echo keys-ready; read x; "
              f"exec /bin/cat {shlex.quote(path)}")
    term = os.open(st.tty, os.O_RDWR | os.O_NOCTTY)
    try:
        job = subprocess.Popen(
            [os.path.join(st.bin_dir, "pbx"), "--dir", st.work, "run",
             "--sandbox", "--scope", "root", "--quiet", "--", "/bin/sh",
             "-c", script],
            stdin=term, stdout=term, stderr=term, process_group=st.pgid)
    finally:
        os.close(term)
    wait_for(lambda: "keys-ready" in pane_text(st),
             "any-keys: the program never turned its modes on", 20.0)
    on = any_keys_flags(st)
    if any(v != "1" for v in on.values()):
        fail(f"any-keys: the program's modes did not reach the pane: {on}")
    tmux("send-keys", "-t", st.pane, "Enter")
    sel = os.path.relpath(path, os.path.realpath(st.root))
    broker_prompt(st, sel, "sh", 20.0)
    off = any_keys_flags(st)
    if any(v != "0" for v in off.values()):
        fail(f"any-keys: ttyd's reset left modes on: {off}")
    for seq in junk:
        tmux("send-keys", "-t", st.pane, "-H", *seq.split())
    tmux("send-keys", "-t", st.pane, key)
    rc = job.wait(timeout=30)
    return rc, pane_text(st)


def any_keys(st):
    """A program turns on every mode that makes a terminal send bytes of
    its own before its brokered open; while the prompt shows, the pane
    receives a DECRQM reply, X10 and SGR mouse reports carrying Y and y,
    a focus report and ESC O y (application keypad 9), then n: the
    prompt is denied (cat's own Permission denied, the bytes unread).
    Again with sequences carrying N and n, then y: approved, exactly the
    bytes. On the old ttyd the first y or n byte of a sequence answered.
    ttyd's reset turned every mode off before it drew (tmux's flags)."""
    broker_root_file(st)
    docs = os.path.join(os.path.realpath(st.root), "docs")
    a, b = os.path.join(docs, "keys-a.txt"), os.path.join(docs, "keys-b.txt")
    with open(a, "w", encoding="utf-8") as f:
        f.write("keys-a never shown\n")
    with open(b, "w", encoding="utf-8") as f:
        f.write("keys-b the bytes cat prints\n")
    ys = ["1b 5b 3f 32 30 30 34 3b 32 24 79",    # ESC [ ? 2004 ; 2 $ y
          "1b 5b 4d 43 59 21",                   # X10 mouse, column 'Y'
          "1b 5b 4d 20 79 21",                   # X10 mouse, column 'y'
          "1b 5b 3c 30 3b 38 39 3b 31 32 31 4d",  # SGR mouse
          "1b 5b 49",                            # focus in
          "1b 4f 79"]                            # ESC O y
    rc, screen = any_keys_one(st, a, ys, "n")
    flat = screen.replace("\n", "")  # cat's line wraps at the pane's width
    if f"cat: {a}: Permission denied" not in flat or "[denied]" not in screen \
            or \
            "keys-a never shown" in screen or rc == 0:
        fail(f"any-keys: sequences carrying y then n: rc {rc}, not denied:"
             f"\n{screen}")
    print("run: any-keys: a DECRQM reply, mouse reports carrying Y and y, "
          "a focus report and ESC O y answered nothing; n denied")
    ns = ["1b 5b 4d 43 4e 21",                   # X10 mouse, column 'N'
          "1b 5b 4d 20 6e 21",                   # X10 mouse, column 'n'
          "1b 4f 6e",                            # ESC O n
          "1b 5d 31 31 3b 6e 6e 07"]             # OSC 11 ; n n BEL
    rc, screen = any_keys_one(st, b, ns, "y")
    if "keys-b the bytes cat prints" not in screen or rc != 0:
        fail(f"any-keys: sequences carrying n then y: rc {rc}, not "
             f"approved:\n{screen}")
    print("run: any-keys: mouse reports carrying N and n, ESC O n and an "
          "OSC reply answered nothing; y approved, cat printed the bytes")


def tree_of(top):
    """Every path under top with its bytes (None for a directory, the
    target for a symlink)."""
    out = {}
    for d, dirs, files in os.walk(top):
        for n in dirs + files:
            p = os.path.join(d, n)
            if os.path.islink(p):
                out[p] = "-> " + os.readlink(p)
            elif os.path.isdir(p):
                out[p] = None
            else:
                with open(p, "rb") as f:
                    out[p] = f.read()
    return out


def any_escape_prompt(st, job, gate, selector, path):
    """Waits for the program's gate=GATE line, blanks the pane, lets the
    program go on and waits for the prompt of its next open: it must name
    selector and the absolute path the broker resolved (never the path as
    the program spelled it, with its `..`); returns the screen."""
    job.wait_line(lambda l: l == f"gate={gate}", f"gate={gate}", seconds=30)
    clear_pane(st)
    job.write("go\n")
    screen = broker_prompt(st, selector, "python3")
    if path[-50:] not in screen or "/../" in screen:
        fail(f"any-escape: {gate}: the prompt does not name the resolved "
             f"path {path}:\n{screen}")
    return screen


def any_escape(st):
    """Inside the sandbox (python3, tests/e2e/any_escape.py), with a read
    grant of docs/esc-a.txt: /proc/self/fd/N reopened (write or read),
    a directory of the scope, openat with the grant's descriptor and
    `..`, `..` out of the scope, a symlink in the scope pointing out,
    O_PATH, a hard link, a rename, a write on the read grant, vfsd's
    FUSE mount listed or opened; the directory cases (a scope directory
    by O_DIRECTORY or O_PATH, chdir into the scope then "." and `..`,
    /proc/self/cwd and /proc/thread-self/cwd, an O_PATH directory
    descriptor of the scope from /proc/self/cwd used with openat and
    `..`); and a second thread rewriting the path buffer while the
    prompt shows: each refused or harmless; each open that prompts is
    prompted with the path the broker resolved and gets exactly that
    object; nothing under the root changes."""
    broker_root_file(st)
    root = os.path.realpath(st.root)
    docs = os.path.join(root, "docs")
    secret = os.path.join(os.path.realpath(st.work), "esc-secret.txt")
    os.makedirs(os.path.join(docs, "x"), exist_ok=True)
    for path, text in ((os.path.join(docs, "esc-a.txt"), "A-bytes\n"),
                       (os.path.join(docs, "esc-b.txt"), "B-bytes\n"),
                       (secret, "SECRET\n")):
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    link = os.path.join(docs, "esc-link")
    if not os.path.islink(link):
        os.symlink(secret, link)
    with open(os.path.join(st.work, "logs", "vfsd.log"), "rb") as f:
        m = re.search(rb"FUSE server mounted at (\S+) ", f.read())
    if m is None:
        fail("any-escape: vfsd never said where its FUSE server is mounted")
    mount = m.group(1).decode()
    before = tree_of(root)
    prog = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                        "any_escape.py")
    clear_pane(st)
    with open(prog, "rb") as f:
        packed = base64.b64encode(zlib.compress(f.read(), 9)).decode()
    # The script's own file is outside the sandbox's reach: its text goes
    # as -c (argv then starts with "-c", as the script expects),
    # compressed so that the LAUNCH frame holds it.
    source = ("import base64, zlib\nexec(zlib.decompress(base64.b64decode("
              f"'{packed}')))")
    job = broker_run(st, ["/usr/bin/python3", "-c", source, root, secret,
                          mount],
                     os.path.join(st.work, "any-escape.err"), stdin=None)
    broker_prompt(st, "docs/esc-a.txt", "python3")
    tmux("send-keys", "-t", st.pane, "y")
    # openat(dfd, "x/../esc-a.txt"), dfd an O_PATH descriptor of docs:
    # approved, it reads exactly esc-a.txt.
    any_escape_prompt(st, job, "dfd-inside", "docs/esc-a.txt",
                      os.path.join(docs, "esc-a.txt"))
    tmux("send-keys", "-t", st.pane, "y")
    # open("../esc-b.txt") with the cwd in docs/x: denied.
    any_escape_prompt(st, job, "cwd-inside", "docs/esc-b.txt",
                      os.path.join(docs, "esc-b.txt"))
    tmux("send-keys", "-t", st.pane, "n")
    job.wait_line(lambda l: l == "gate=race", "gate=race", seconds=30)
    clear_pane(st)
    job.write("go\n")
    job.wait_line(lambda l: l == "racing=1", "racing=1", seconds=30)
    screen = broker_prompt(st, "docs/esc-b.txt", "python3")
    if os.path.join(docs, "esc-b.txt")[-50:] not in screen:
        fail(f"any-escape: the raced prompt names another path:\n{screen}")
    job.write("go\n")
    job.wait_line(lambda l: l == "rewritten=1", "rewritten=1")
    tmux("send-keys", "-t", st.pane, "y")
    job.wait_line(lambda l: l == "done=1", "done=1", seconds=30)
    if job.wait(timeout=30) != 0:
        fail(f"any-escape: python3 exited {job.proc.returncode}")
    kv = job.kv()
    want = {"reopen-write": "EACCES", "reopen-read": "EACCES",
            "dir": "EACCES", "dotdot": "ENOTDIR", "dotdot-scope": "EACCES",
            "symlink": "EACCES", "o-path": "EACCES", "write-grant": "EBADF",
            "mount-list": "EACCES", "mount-open": "EACCES",
            "race": "ok:B-bytes"}
    # The directory cases (docs/HOST.md, "Brokered opens": a directory
    # of the scope is never handed over; /proc/self/cwd is the system
    # profile's, continued, and Landlock refuses what it leads to).
    want.update({"dir-opath": "EACCES", "chdir": "ok:None",
                 "cwd-dir": "EACCES", "cwd-dotdot": "EACCES",
                 "cwd-x-dotdot": "EACCES", "proc-cwd-dir": "EACCES",
                 "proc-cwd-file": "EACCES", "proc-tself-file": "EACCES",
                 "proc-cwd-out": "EACCES", "proc-cwd-opath-read": "EBADF",
                 "dfd": "ok:dir", "dfd-dotdot": "EACCES",
                 "dfd-x-dotdot": "EACCES", "dfd-inside": "ok:A-bytes",
                 "cwd-inside": "EACCES"})
    want["granted"] = "A-bytes"
    for k, v in want.items():
        if kv.get(k) != v:
            fail(f"any-escape: {k}={kv.get(k)!r}, want {v!r} ({kv})")
    for k in ("hardlink", "rename"):
        if kv.get(k) not in ("EACCES", "EXDEV", "EPERM"):
            fail(f"any-escape: {k}={kv.get(k)!r} ({kv})")
    # The exact refusal of a directory, by its path and as "." after the
    # chdir: the broker's line on the job's stderr.
    with open(os.path.join(st.work, "any-escape.err"),
              encoding="utf-8") as f:
        said = f.read().splitlines()
    for asked in (docs, "."):
        line = (f"pbx-broker: {asked} -> {docs}: Permission denied (a "
                f"directory: only files are brokered)")
        if line not in said:
            fail(f"any-escape: the broker never said '{line}': {said}")
    # mount-open opened the granted descriptor's own entry in vfsd's
    # mount (readlink of /proc/self/fd/N): the broker refused it itself.
    entry = kv.get("mount-entry", "")
    line = (f"pbx-broker: {entry}: the revocable mount, refused without "
            f"asking")
    if not entry.startswith(mount + "/") or line not in said:
        fail(f"any-escape: mount-open of {entry!r}: the broker never said "
             f"'{line}': {said}")
    after = tree_of(root)
    if after != before:
        fail(f"any-escape: the root changed: "
             f"{set(after.items()) ^ set(before.items())}")
    print("run: any-escape: " + " ".join(f"{k}={kv[k]}" for k in sorted(kv)))


ANY_REVOKE_PROG = """
import errno, os, sys
want = bytes(range(256)) * 4096
fd = os.open(sys.argv[1], os.O_RDONLY)
got = b""
for i in range(5):
    got += os.read(fd, 100)
print("before=" + ("exact" if got == want[:500] else repr(got[:40])),
      flush=True)
sys.stdin.readline()
for key in ("after", "again"):
    try:
        print(key + "=ok:" + str(len(os.read(fd, 100))), flush=True)
    except OSError as e:
        print(key + "=" + errno.errorcode.get(e.errno, str(e.errno)),
              flush=True)
print("alive=1", flush=True)
"""


def any_revoke_object(st, grant):
    """The object id (`W:G`) powerboxd's approved decision line names for
    grant (its `N-I.G`), and its grant-end line's `end=` (None before
    it ends)."""
    obj, end = None, None
    for line in st.peer_log("powerboxd").splitlines():
        f = key_values(line.replace(" ", "\n"))
        if f.get("grant") != grant:
            continue
        if f.get("event") == "decision" and f.get("outcome") == "approved":
            obj = f.get("object-id")
        elif f.get("event") == "grant-end":
            end = (f.get("end"), f.get("object-id"))
    return obj, end


def any_revoke(st):
    """A dynamic reader (python3) reads five 100-byte pieces of a 1 MiB
    file of its scope through its brokered descriptor (exactly the file's
    first 500 bytes); `pbx cancel` of its grant; vfsd then retires exactly
    the object powerboxd's decision line named for that grant (the RETIRE
    line of that object id and generation, logged after the cancel); the
    reader's next read, and the one after, fail EIO while it keeps
    running: it prints a line and exits 0 by itself."""
    broker_root_file(st)
    big = os.path.join(os.path.realpath(st.root), "docs", "big.bin")
    with open(big, "wb") as f:
        f.write(bytes(range(256)) * 4096)
    pbx = os.path.join(st.bin_dir, "pbx")
    clear_pane(st)
    job = broker_run(st, ["/usr/bin/python3", "-c", ANY_REVOKE_PROG, big],
                     os.path.join(st.work, "any-revoke.err"), stdin=None)
    broker_prompt(st, "docs/big.bin", "python3")
    tmux("send-keys", "-t", st.pane, "y")
    job.wait_line(lambda l: l.startswith("before="), "before=", seconds=20)
    if job.kv().get("before") != "exact":
        fail(f"any-revoke: the five pieces before the cancel: {job.kv()}")
    out = subprocess.run([pbx, "--dir", st.work, "grants", "--format", "kv"],
                         capture_output=True, text=True, timeout=20,
                         check=False)
    ids = [key_values(l.replace(" ", "\n")).get("grant", "")
           for l in out.stdout.splitlines() if "big.bin" in l]
    if out.returncode != 0 or len(ids) != 1:
        fail(f"any-revoke: pbx grants: rc {out.returncode} {out.stdout!r} "
             f"{out.stderr!r}")
    wait_for(lambda: any_revoke_object(st, ids[0])[0] is not None,
             f"any-revoke: powerboxd logged no approved decision for "
             f"{ids[0]}", 20)
    obj, _ = any_revoke_object(st, ids[0])
    m = re.fullmatch(r"(\d+):(\d+)", obj or "")
    if m is None:
        fail(f"any-revoke: powerboxd's decision for grant {ids[0]} names "
             f"no object-id ({obj!r})")
    # Only vfsd's lines written after the cancel count, and only the
    # RETIRE of exactly this object and generation.
    seen = len(st.peer_log("vfsd"))
    out = subprocess.run([pbx, "--dir", st.work, "cancel", ids[0]],
                         capture_output=True, text=True, timeout=20,
                         check=False)
    if out.returncode != 0:
        fail(f"any-revoke: pbx cancel {ids[0]}: rc {out.returncode} "
             f"{out.stdout!r} {out.stderr!r}")
    want = f"vfsd: RETIRE object {m.group(1)} gen {m.group(2)}"
    wait_for(lambda: want in st.peer_log("vfsd")[seen:].splitlines(),
             f"any-revoke: vfsd never logged '{want}' after the cancel", 20)
    wait_for(lambda: any_revoke_object(st, ids[0])[1] is not None,
             f"any-revoke: powerboxd logged no grant-end for {ids[0]}", 20)
    end = any_revoke_object(st, ids[0])[1]
    if end != ("cancelled", obj):
        fail(f"any-revoke: grant {ids[0]} ended {end}, want cancelled of "
             f"{obj}")
    job.write("next\n")
    job.wait_line(lambda l: l == "alive=1", "alive=1", seconds=20)
    kv = job.kv()
    if job.wait(timeout=30) != 0 or kv.get("after") != "EIO" or \
            kv.get("again") != "EIO":
        fail(f"any-revoke: after the cancel: {kv} rc {job.proc.returncode}")
    print(f"run: any-revoke: five pieces read exactly; grant {ids[0]} "
          f"(object {obj}) cancelled; vfsd logged '{want}' after the "
          f"cancel; the next two reads failed EIO, the reader printed "
          f"alive=1 and exited 0")
