"""The scenarios of the e2e run, tests/e2e/run.py (the rest of its usage
text is run.py's docstring): what each shows. Each scenario's code is
in the scn_*.py module whose docstring names it; the harness is in
e2e_harness.py, e2e_jobs.py and e2e_up.py. This module holds no code.

Scenarios (each exits the run with 1 on the first failure):

Every request goes the way a running program's does: the program is a
job launched by launchd (`pbx-launchd run --control PATH --session 7
--realm 3 [--job ID:GEN] [--entry NAME] -- pbx-client request ...`), and
pbx-client talks over the job connection launchd handed it
(PBX_LAUNCHD_FD); launchd binds the job id, session, realm, program entry
and staged process of every BEGIN to the job it launched and relays each
frame over its broker connection (powerboxd's slot 10), the only place
powerboxd accepts BEGIN. A scenario that needs a known job launches job
11:1 with entry bin/cat in session 7 realm 3 unless it says another. Only
this process (never a launched job) talks to launchd's control socket:
it launches jobs and asks for EXPIREs.
A launched job ends when its process exits: launchd then EXPIREs the
whole job at powerboxd, which ends the job's grants. A scenario whose
grants must outlive one client process keeps its job alive (a launched
shell that runs several clients in turn, or a held client); each says
which. The scope a job uses is taken by pbx-client from vfsd's scope
socket, or, where this process holds it, handed over as the job's
standard input (`--scope-fd 0`): a job gets only its standard streams
and its job connection.

  lifecycle      a routine one-shot READ to APPROVED and, on the same
                 connection, CONSUME; revocation (procd), REMOVE (ttyd)
                 and RETIRE (vfsd) are then observed at the peers; vfsd
                 named the scope by the inode the client was handed
  direct         a BEGIN (install mode) sent straight to powerboxd's public
                 endpoint is refused with PBX_E_CORE_BROKER and nothing is
                 reserved; powerboxd keeps serving
  hangup         a client BEGINs and COMMITs a request and exits without
                 asking for its decision: launchd cancels the request it
                 relayed (exact id over the broker) and collects its
                 CANCELLED decision; no grant is left at procd or ttyd and
                 powerboxd's and launchd's descriptors return to baseline
  scope-hoard    this process takes scopes from vfsd's scope socket until
                 refused: exactly 32 (--scopes-per-pid's default), vfsd
                 logs the refusal naming its pid; a lifecycle through
                 launchd is approved while it holds them
  scope-steal    (own stack, --deadline-scope-ms 30000; a tmux pane) a
                 job (a raw program, run.py --steal-program) takes a
                 scope, keeps a thread blocked reading its own copy of
                 it, and commits an exceptional request through it (a
                 prompt is due). No race decides: vfsd is stopped until
                 powerboxd's RESOLVE waits in its queue (`ss -x`), then
                 powerboxd is stopped while vfsd answers and until the
                 scope's queue is empty. vfsd answers on its route, so
                 the prompt shows the object while the thread received
                 nothing (no frame, no descriptor); n on the prompt:
                 DENIED reason user, and vfsd hangs up the object
                 (issue 20, review finding)
  lie-scope      the same request with a scope from vfsd's --lie-scope
                 socket, whose FOUND names another scope identity: DENIED,
                 nothing installed, no row shown
  expire         a job-lifetime grant; EXPIRE on an ordinary public
                 connection is refused and the grant stays; EXPIRE through
                 launchd's broker ends it: revoke, REMOVE, RETIRE observed
  runtime-reply  a runtime-reply request relayed by launchd's broker: the
                 alias reaches the caller once with the DECISION, then
                 CONSUME through the broker ends the grant and the
                 caller's alias is revoked (vfsd RETIRE cuts it)
  prompt         an exceptional request answered on a real terminal: ttyd
                 is given a tmux pane as its terminal; the pane must show
                 the exact program entry, object and selector before `y`
                 is typed into it. tmux must be installed: without it the
                 scenario fails, it is never skipped
  prompt-pending one exceptional request's prompt stays unanswered on the
                 pane while 1,000 routine lifecycles of eight other
                 programs (8 concurrent pbx-client --repeat 125) are each
                 approved and consumed, counted at the client and at every
                 peer (INSTALL, ACTIVE, REMOVE, RETIRE, wake, CONSUME);
                 the prompt still shows, then `y` approves it and its
                 grant is consumed and cleaned; prints the wall time
  prompt-timeout (own powerboxd, prompt deadline 3000 ms) an unanswered
                 prompt: still showing shortly before the deadline, then
                 DENIED reason prompt-timeout no sooner than the deadline;
                 ttyd withdrew it from the pane; nothing installed or
                 shown, vfsd freed the object; powerboxd serves on
  prompt-cancel  a showing prompt ended by the client's exact CANCEL, and
                 another by launchd's EXPIRE of its job: each ends
                 CANCELLED and the pane says it was withdrawn; a `y` typed
                 afterwards answers nothing (ttyd discards it as type-ahead,
                 nothing installed or shown, the decision read after it is
                 still CANCELLED)
  not-found      a selector for a missing file inside the scope ends
                 NOT_FOUND (vfsd answered not-found): nothing installed at
                 procd, no row at ttyd, nothing created in vfsd's root;
                 escapes ('../', 'docs/../../', absolute selectors, and
                 symlinks in the root to files outside it, existing or
                 missing, absolute or relative) all end DENIED, never
                 NOT_FOUND or an object, and leave the same nothing
  user-deny      an exceptional request's prompt answered `n` on the tmux
                 pane: DENIED reason user, nothing installed or shown; when
                 the decision is read powerboxd's descriptor count is back
                 to its baseline; vfsd then frees the object's row
                 (HANG-UP, waited for)
  cancel-lost-reply
                 a request approved and installed whose DECISION its client
                 never reads (a lost reply) is cancelled by job and session
                 (generation zero) on the client's connection
                 (`--then cancel-session`): revoked at procd, REMOVEd at
                 ttyd, RETIREd at vfsd; with two live approved requests of
                 one job and session the same CANCEL is refused
                 PBX_E_CORE_AMBIGUOUS (0x0614) and both stay
  invocation-expiry
                 six grants of one job: invocation 5's invocation grant and
                 a one-shot made within it, invocation 6's two, a one-shot
                 made outside any invocation and a job-lifetime one;
                 `pbx-launchd expire --invocation 5` ends exactly the first
                 two (revoke, REMOVE, RETIRE), the other four stay live
  unwanted-receipts
                 BEGIN, SELECTOR, DECISION, CANCEL and CONSUME frames
                 carrying a descriptor, straight to powerboxd's public
                 endpoint: each answered PBX_E_CORE_UNEXPECTED_CAPS, the
                 descriptor closed; powerboxd's descriptors back to
                 baseline, a lifecycle succeeds (peer replies with surplus
                 receipts are covered by the unit tests)
  ttyd-stalled   (own powerboxd, ttyd deadline 1000 ms) a live grant; ttyd
                 stopped (SIGSTOP); EXPIRE revokes it: procd's install row
                 goes and vfsd RETIREs the object at once (no process
                 holds the object any more, vfsd closed its provider end)
                 while ttyd is stopped; after SIGCONT the REMOVE
                 (retried while ttyd was stopped) empties ttyd's view;
                 powerboxd alive throughout and serving after
  vfsd-stalled   (own powerboxd, vfsd and scope deadlines 1000 ms) vfsd
                 stopped for 30 s: a request needing vfsd ends DENIED
                 reason peer-timeout, while a decided request's DECISION,
                 a BEGIN refused on the public endpoint and the CANCEL of
                 a request waiting on vfsd are served at once; EXPIRE of a
                 live grant revokes it and REMOVEs its row, its RETIRE is
                 retried; after SIGCONT the RETIRE is acknowledged (the
                 retries stop), nothing is left installed or shown, a new
                 lifecycle succeeds and powerboxd holds no more
                 descriptors than before
  backpressure   (own powerboxd, 2 requests, 2 grants) two job-lifetime
                 requests approved and held with their decisions unread
                 fill the request and grant pools: a third request is
                 refused at BEGIN with the retryable PBX_E_CORE_BUSY
                 (0x0604); both held grants stay installed and shown and
                 their decisions then read APPROVED; once their jobs
                 ended (each held client a job of its own, expired by
                 launchd at its exit) the same request is approved and
                 consumed
  wake-backpressure
                 launchd leaves its wake route unread (serve
                 --wake-hold-file) while more requests than the route
                 holds (net.unix.max_dgram_qlen + 6) are approved and
                 consumed by as many concurrent jobs (runtime-reply): each
                 client gets its decision (launchd's fallback re-ask of a
                 held DECISION delivers it), powerboxd keeps
                 the refused wakes without spinning (under 0.2 s CPU over
                 2 s); when launchd reads again every wake arrives exactly
                 once
  slow-prompt-isolation
                 (own stack, launchd --call-ms 1000) program A's prompt
                 (runtime-reply, exceptional, docs/a.txt) is answered on
                 the pane twice the relay timeout after it showed, while
                 program B (another job) runs 100 routine runtime-reply
                 lifecycles of docs/b.txt before and after the answer:
                 every decision B gets names its own request and every
                 object it gets is docs/b.txt (--verify-object, zero
                 mismatches); A's decision names A's request, arrives
                 within a second of the answer (wake-driven, not the
                 launchd fallback) and its object is docs/a.txt; A sent
                 one DECISION call in all (pbx-client decision_calls=1)
                 and each of B's lifecycles one (decisions_per_lifecycle
                 1.000): no client polls
  relay-timeout  (own stack, launchd --call-ms 300) powerboxd stopped
                 (SIGSTOP) for longer than twice the relay timeout while
                 program A (job 72:1) asks the decision of its approved
                 runtime-reply request, program B (raw frames, job 73:1)
                 asks the decision of its uncommitted request and begins
                 another, and program C (job 74:1) begins: each call is
                 answered PBX_E_PEER_ROUTE (0x08c3) on its own seq; after
                 SIGCONT launchd logs the late replies ("late reply",
                 A's approval's alias closed there, calls "unanswered
                 after" --call-ms) and delivers none; two new programs of
                 A and B run 20 runtime-reply lifecycles each at once with
                 zero mismatches (own decisions, own files by identity,
                 one DECISION call each) and B's first request is still
                 its own (its CANCEL accepted, its decision CANCELLED);
                 nothing is left installed or shown
  many-clients   (own stack, larger pools) 64 launched jobs run 10,000
                 runtime-reply lifecycles in all at once, each asking for
                 its own file: every client checks that every decision
                 names its own request and every object is its own file
                 (--verify-object by device and inode): zero mismatches
                 and one DECISION call per lifecycle, no polling (each
                 client takes its own scope from vfsd);
                 launchd logged every request's end approved for its own
                 job and vfsd retired every object
  idle-flood     (own stack, OPEN 8000 ms, IDLE 12000 ms, launchd
                 --idle-ms 12000 --max-conns 32) two programs hold 16
                 half-begun requests (8 each: BEGIN alone, or BEGIN and
                 one selector chunk of two), filling powerboxd's 16 prompt
                 records (a third program's BEGIN is refused
                 PBX_E_CORE_BUSY); then twice launchd's connection limit
                 (64) of idle control connections and twice powerboxd's
                 (64) public ones, some after a refused BEGIN. At launchd
                 each one past the limit evicts the longest-silent idle
                 one (logged "evicted for a new one", none refused); at
                 powerboxd the excess is refused and logged; the rest are
                 dropped idle (every one sees end of file). An honest job
                 is launched at once (its launcher evicts one more) and
                 its request, refused PBX_E_CORE_BUSY (retryable, retried
                 by the job) only while the half-begun requests hold every
                 request record, completes within the idle timeout of the
                 flood's start; a public connection is answered within
                 5 s more. With all 32 control connections held by
                 launchers of live jobs, one more is refused ("control
                 connection refused: limit 32", end of file), none evicted;
                 every half-begun request ended CANCELLED no sooner than
                 the OPEN deadline with its reservation returned (the
                 honest BEGIN got a request record while their decisions
                 were still uncollected); descriptors back to baseline
  quota          one program (raw frames on its job connection) holds 8
                 open requests, launchd's per-connection bound: its next
                 BEGIN is refused PBX_E_PEER_BUSY (0x08c0, retryable) by
                 launchd, never relayed; another program is approved and
                 consumed meanwhile; once one request ended (CANCEL, its
                 decision read) the same BEGIN is admitted
  job-spoof      program B (job 61:1) claims program A's job id, entry or
                 staged process (A is job 60:1, live), or a session or
                 realm not its own, in BEGIN: each is refused
                 PBX_E_PEER_NOT_YOURS, logged as a claim of job 60.1 (of
                 session 8, realm 4), never relayed; a generation-zero
                 CANCEL naming A's job from B and a BEGIN from an
                 unlaunched program are refused the same way; nothing is
                 installed into A's staged process, while A's own request
                 is. Then, with A's grant installed, B runs `pbx-launchd
                 expire --control` of A's job and `pbx-launchd run` of a
                 new job: launchd refuses both control connections (logged
                 "control connection from a launched job refused"; run
                 exits 125, no job launched); an EXPIRE over B's own job
                 connection is refused PBX_E_PEER_NOT_YOURS; A's grant
                 stays installed and shown
  fail-on-purpose (own stack; hidden, `all` leaves it out) leaves a job,
                 its child in a session of its own and a held request
                 running, then fails ($PBX_E2E_FAIL: fail, raise after
                 killing launchd, or term: run.py's SIGTERM);
                 tests/e2e/orphans.py counts what is left: nothing
  up             (standalone: no Stack) `pbx up --dir WORK_DIR/up/run
                 --root ...` started by this process: `ready` on
                 --ready-fd and the line `pbx up: ready in DIR`; its five
                 stack processes run; a lifecycle through DIR/launchd.sock
                 with a scope from DIR/scope.sock (approved, consumed, no
                 row left at DIR/ttyd.sock or DIR/procd.sock); stack.log
                 holds each
                 process's start and vfsd's own stderr lines, every line
                 prefixed `TIME name[pid]: `; a second `pbx up` on DIR
                 exits 1 naming the holder's pid; with a launched job
                 still running, SIGTERM: exit 0, the five processes and
                 the job are gone, DIR/lock is free
  up-restart     (standalone) kill -9 of vfsd: stack.log shows its
                 death (signal 9), vfsd alone is started again no sooner
                 than the 0.5 s backoff with another incarnation (logged
                 at ready) and its new route is accepted by
                 the same powerboxd (ROUTE_ATTACH), a lifecycle succeeds;
                 then kill -9 of launchd with a job running: launchd
                 alone restarted (`launchd[N] restarted and attached`,
                 its start line stamped no sooner than 0.5 s after its
                 death line), the orphaned job killed, the new launchd's
                 wake and broker routes accepted, a lifecycle
                 succeeds; then kill -9 of powerboxd: stack.log shows
                 `restarting powerboxd alone in 500 ms (restart 1 within
                 60 s)`, the new powerboxd's start and readiness lines,
                 each peer's attach-channel line (vfsd listening for the
                 route, ttyd, procd and launchd routes adopted) and
                 `powerboxd[N] restarted with fresh routes to the peers`,
                 never a whole-stack restart; the four peers keep their
                 pids; a lifecycle succeeds; SIGTERM: exit 0
  up-backoff     (standalone, pbx up with the default 60 s window, a
                 held job running) vfsd killed -9 as soon as each restart
                 logged `vfsd[N] restarted and attached`: for restarts
                 K = 1..5 stack.log shows `restarting vfsd alone in D ms
                 (restart K within 60 s)` with D = 500, 1000, 2000, 4000,
                 8000, and each new vfsd's `started` line is stamped no
                 sooner than D ms after the previous one's death line
                 (stamps cut to the millisecond: 2 ms of rounding) and
                 less than D ms + 1 s after it; the
                 sixth kill: `giving up: vfsd died again after 5 restarts
                 within 60 s`, no sixth restart planned, pbx up exits 1
                 within 15 s, every stack process and the held job gone
  restart-during-restart
                 (standalone, no client runs, so nothing but the deaths
                 wakes the supervisor) kill -9 of launchd and, as soon as
                 stack.log shows the new launchd's `launchd[N] started`
                 line, kill -9 of vfsd (the new launchd is stopped as
                 soon as it appears as pbx up's child, followed every
                 0.2 ms, and continued 0.3 s after that kill, so that the
                 supervisor is surely still inside launchd's restart;
                 vfsd's death line must come before launchd's `restarted`
                 line): `restarting vfsd
                 alone in 500 ms` stamped within 1.5 s of vfsd's death
                 line, `vfsd[M] restarted and attached` within 5 s of it,
                 `launchd[N] restarted and attached`; a lifecycle
                 succeeds. Then the same with kill -9 of powerboxd and, at
                 the new powerboxd's `started` line (held stopped the
                 same way, and vfsd stopped from before powerboxd's kill
                 until then, so that the supervisor surely waits inside
                 powerboxd's restart for vfsd's route pair), of ttyd: ttyd's restart planned within 1.5 s
                 of its death line, and within 10 s the stack whole again
                 (chaos's rule) with the latest ttyd routed to the latest
                 powerboxd (its route accepted by that powerboxd, or that
                 powerboxd restarted with fresh routes after the ttyd's
                 start and the ttyd adopted them); a lifecycle succeeds
  grants-cli     (standalone, pbx up) two live job-lifetime grants of
                 one job (81:1, a launched shell), both allowed by
                 policy (no prompt), of docs/readme.txt and "docs/my
                 notes.txt": `pbx grants --dir DIR` lists them with
                 program, job, op, lifetime, since, label and the exact
                 selector, taken from stack.log's decision line whose
                 selector's SHA-256 is the row's digest (selector-from=
                 log; the space escaped \x20), never the label; the job
                 consumes a third, one-shot grant; `pbx cancel` of the
                 first: revoked at procd, gone from ttyd and from `pbx
                 grants`, the other still live; a second cancel exits 1,
                 a bad ID 2; every id is 1-I.G (the stack's first
                 powerboxd), I.G the job's; after the job ends, `pbx log` on the real
                 stack.log says the first was cancelled by the user
                 (by=user), the one-shot consumed by the program, the
                 second expired
  pbx-open       `pbx --dir WORK_DIR open` run inside a launched job (a
                 shell, job 13:1 entry bin/pbx, so the job outlives each
                 command): docs/readme.txt prints exactly the file's bytes
                 on stdout and nothing on stderr, and vfsd RETIREs its
                 object while the job still runs (the one-shot grant was
                 consumed by pbx open, not ended by the job's end);
                 `--op stat` prints size= of the file; docs/missing.txt
                 exits 1 with one line naming it ("no such object");
                 `--op write` (no policy rule) exits 1 "denied (by
                 policy)"; outside a job exits 1 naming PBX_LAUNCHD_FD;
                 no SELECTOR exits 2
  sandbox        `pbx --dir WORK_DIR run --sandbox -- /bin/cat FILE` (no
                 --scope: brokered by default below the stack's root,
                 DIR/root.path): the pane's prompt names cat and
                 "docs/readme.txt", y, cat prints the file's bytes
                 exactly. `--sandbox --no-broker -- pbx-demo --direct
                 FILE --exceptional docs/readme.txt`: its own open() is
                 refused by the kernel (EACCES), the prompt names
                 pbx-demo, y, the bytes exact, its read after the
                 one-shot grant's consume fails, exit 0. A dynamic
                 /bin/sh writing a mark outside the root: Permission
                 denied (exit 2), no prompt, no mark. --no-broker with
                 --scope, and --sandbox on a directory that names no
                 root: refused, exit 125
  pbx-run-grant  `pbx --dir WORK_DIR run --grant read:docs/readme.txt --
                 pbx-test-fdcat --again 5` (install mode: pbx-stage
                 stages itself at procd's stage.sock, asks, takes procd's
                 DELIVER and execs PROG with the object at fd 5): PROG
                 prints exactly the file's bytes read through fd 5;
                 procd's row names the job's own pid and slot 5; after
                 `pbx-launchd expire` of the job the row is gone and
                 PROG's next read through the same fd fails (exit 3);
                 the same grant under --sandbox gives exactly the bytes;
                 a grant of docs/missing.txt makes `pbx run` exit 1 with
                 one line naming the selector and not-found, and PROG
                 (a shell writing a mark file) never ran
  any-spoof      `pbx run --sandbox -- pbx-test-spoof` with the tmux
                 pane's terminal as its stdio: while the real prompt for
                 docs/readme.txt shows, the program prints look-alike
                 prompts (screen clears, cursor moves) and reads its
                 input; launchd logs its output held and nothing follows
                 the intact prompt on the pane; y approves it and the
                 program read 0 keys; its own fake prompt's y reaches it
                 and ttyd logged exactly one approval
  sandbox-walls  `pbx run --sandbox -- pbx-test-walls ...` (static), its
                 stdin an unconnected unix seqpacket socket: socket() of
                 every family, socketpair, connect() of stdin and of its
                 job connection to each socket of the stack, to a TCP
                 listener on localhost and to an abstract one, ptrace,
                 process_vm_readv, pidfd_open and prlimit64 of a sibling,
                 open of its /proc/PID/{environ,status,cmdline,maps},
                 execve of pbx-demo, io_uring_setup, unshare/clone into a
                 user namespace, an x32 call, bpf, perf_event_open,
                 userfaultfd, keyctl, mount, TIOCSTI: each refused with
                 EPERM or EACCES (clone3 ENOSYS), and no descriptor above
                 4 open; no listener sees a connection, the sibling
                 lives; its honest one-shot READ of docs/readme.txt is
                 approved and reads the file's bytes; unsandboxed the
                 same probe is let through (exit 1)
  sandbox-dynamic
                 dynamic programs under `pbx run --sandbox` and the system
                 profile: /bin/cat prints /etc/passwd exactly and its own
                 /proc/self/status, /bin/sh reads /etc/passwd, python3
                 prints /usr/lib/os-release exactly;
                 cat, sh and python3 opening a file of the user's (outside
                 any grant) get EACCES ("Permission denied", errno 13);
                 `--profile` with `+r DIR` lets cat read a file in DIR;
                 `-/usr` makes python3 fail to start with the kernel's
                 EACCES (launchd's child: "execveat: Permission denied",
                 exit 126); a profile line naming the stack directory,
                 its parent, an unknown line and `--profile` without
                 `--sandbox` are refused before anything runs, naming
                 the line; `pbx-launchd run --sandbox --profile` works
                 as pbx run does; a profile adding a missing path, or a
                 link into the stack directory, is refused by launchd
                 itself (exit 125, its log names the line)
  any-cat        dynamic /bin/cat under `pbx run --sandbox --scope root`
                 opens a file of its scope: its open is brokered
                 (pbx-broker), the pane's prompt names cat, the selector
                 and the resolved path; `y` prints exactly the bytes
                 (vfsd's revocable descriptor); a second file answered `n`
                 gives cat's own "Permission denied" (exit 1)
  any-keys       /bin/sh under `pbx run --sandbox --scope root` on the
                 pane turns mouse tracking, focus reports, bracketed
                 paste, keypad and cursor-key modes and modifyOtherKeys
                 on (tmux's flags show them), then cat opens a scope
                 file: the prompt shows with every flag off; the pane
                 receives a DECRQM reply, X10 and SGR mouse reports
                 carrying Y and y, a focus report and ESC O y, then n:
                 denied (cat's Permission denied); again with sequences
                 carrying N and n, then y: approved, exactly the bytes
  any-escape     python3 with a read grant tries /proc/self/fd/N reopened
                 for write or read, a directory of the scope, openat with
                 the grant's descriptor and `..`, `..` out of the scope, a
                 symlink in the scope pointing out, O_PATH, a hard link, a
                 rename, a write on the read grant, vfsd's FUSE mount
                 (listed, and the granted descriptor's own entry, from
                 readlink of /proc/self/fd/N, opened: pbx-broker's exact
                 "the revocable mount" line), and
                 a second thread rewriting the path buffer while the
                 prompt shows: each refused (EACCES, ENOTDIR, EBADF), the
                 raced open gets exactly the object its prompt named, the
                 root is unchanged. Directories: a scope directory by
                 O_DIRECTORY or O_PATH, or "." after chdir into it
                 (chdir works): EACCES; `..` out of the cwd: EACCES;
                 /proc/self/cwd/FILE, /proc/thread-self/cwd/FILE and
                 /proc/self/cwd opened O_DIRECTORY: EACCES (Landlock);
                 an O_PATH descriptor of docs from /proc/self/cwd (the
                 one directory descriptor the sandbox gives; it reads
                 nothing: EBADF) with openat "../outside" and
                 "x/../../outside": EACCES; openat(dfd, "x/../esc-a.txt")
                 with the cwd elsewhere, and "../esc-b.txt" relative to
                 the cwd, each prompt with the resolved path (y: exactly
                 esc-a's bytes; n: EACCES)
  any-revoke     python3 reads five 100-byte pieces of a 1 MiB file of
                 its scope through its brokered descriptor (exactly the
                 file's first 500 bytes); `pbx cancel` of the grant: vfsd
                 logs, after the cancel, the RETIRE of exactly the object
                 id and generation powerboxd's decision line named for
                 that grant (its grant-end says cancelled, same object);
                 the next two reads fail EIO, the reader keeps running,
                 prints a line and exits 0 by itself
  any-expire     as any-revoke, but the grant (lifetime invocation) ends
                 by its job's EXPIRE while python3 still holds the
                 descriptor: (1) `pbx-launchd expire --control` of the
                 job powerboxd's decision names, the reader still the
                 job's program; (2) launchd's own EXPIRE when the job's
                 program, a sandboxed sh that started the reader in the
                 background, exits (the reader orphaned, reading on in
                 pieces). Each time vfsd logs, after the end, the RETIRE
                 of exactly the decision's object; the grant ends
                 `end=expired`; the next two reads fail EIO, the reader
                 prints a line and exits by itself
  any-consume    pbx-test-fdcat --open (libpbx-app, `pbx run`) gets a
                 one-shot read grant (prompt, y), opens a revocable
                 descriptor of its object (pbx_obj_open_fd) and reads 100
                 bytes through it, then CONSUMEs the grant: vfsd logs the
                 RETIRE of exactly the decision's object, the grant ends
                 `end=consumed`, the descriptor's next two reads fail
                 EIO, the program answers on and exits 0
  sandbox-metadata
                 python3 under `pbx run --sandbox --scope root`, no
                 grant: stat of a scope file and of a 0600 file of the
                 user's outside the scope gives their exact size, mtime
                 and mode; access() of the outside file says readable;
                 readlink of a scope symlink gives its target; chdir into
                 the scope works; listing the scope dir, the cwd in it,
                 the dir outside (the broker) and /proc/self/cwd
                 (Landlock: no READ_DIR) fails EACCES; reading the file
                 outside fails EACCES without a prompt; reading the scope
                 file is brokered: the prompt names it, y, exact bytes;
                 the program renamed itself pbx-demo (argv[0], comm)
                 first: the prompt still names its entry, python3
  hold-release   a launched job (python3 under `pbx run`, unsandboxed)
                 connecting to DIR/hold.sock is refused (launchd logs its
                 pid, the connection closes); while a brokered open's
                 prompt shows, this process (same user, not a job)
                 connects and replaces ttyd: launchd logs "a newer
                 subscriber came (hold released)"
  sandbox-setattr
                 (docs/SECURITY.md 1.18) python3, as above, tries chmod,
                 utime, chown (its own ids) and setxattr user.* of a file
                 outside the scope and of one in it: each must be refused
                 and the attributes unchanged
  sandbox-ipc    (docs/SECURITY.md 1.19) this process makes a System V
                 shared memory segment, semaphore set and message queue
                 and a POSIX message queue (mode 0600); python3 run
                 without the sandbox (the control) attaches each, then
                 sandboxed it gets EPERM for every one
  any-flood      python3 opens 1,000 distinct files in a loop, each prompt
                 answered `n`: at most pbx-broker's burst (5) plus one per
                 2000 ms it ran are prompted, every other open is refused
                 EACCES without a prompt; pbx-broker's lines on its stderr
                 are at most 16 at once then one a second, every other
                 refusal counted in a "N line(s) suppressed" line; while
                 the flood's first prompt shows, another sandboxed program
                 (cat) opens docs/readme.txt: its prompt queues, shows
                 after the flood's is answered and `y` prints exactly the
                 file
  any-python     (standalone: `pbx up` on its own tmux pane, built-in
                 policy) python3 with brokered opens reads one file (read
                 prompt, `y`: exactly its bytes) and rewrites another
                 with open(..., "w") (write prompt, `y`: it holds exactly
                 the new bytes, truncated through vfsd) and creates a
                 third (create prompt, `y`: vfsd makes it, exactly its
                 bytes) and opens a fourth 'r+' (O_RDWR: write prompt,
                 `y`: read, seek and write land exactly) and opens a
                 missing fifth O_CREAT|O_RDONLY (create prompt, `y`: made
                 empty, its descriptor reads b'' and a write is EBADF);
                 nothing else under the root changes
  any-userns     /bin/sh under `pbx run --sandbox --scope root`: its
                 uid_map is the identity of its user and its user
                 namespace is not the stack's (so, under Yama's
                 ptrace_scope 1, the broker owning it may serve every
                 process the job forks); the cat it forks has its open
                 brokered (prompt, `y`, exactly the bytes)
  any-mount      python3 opens a path inside vfsd's FUSE mount, the
                 mount itself and its parent: each EACCES without a
                 prompt, with pbx-broker's "the revocable mount" line
                 (launchd passes its --fuse-dir as the broker's --mount)
  any-nofuse     (standalone: vfsd's --fuse-dir a regular file, so FUSE
                 is unavailable) cat's brokered open is refused EACCES
                 before anyone is asked, pbx-broker says FUSE is not
                 mounted at vfsd's mount, no BEGIN reaches launchd
  any-ask-flood  a sandboxed pbx-test-fdcat makes 30 exceptional
                 requests on its own fd 3, each prompt answered `n`:
                 launchd's per-job prompt budget (5, then one per
                 2000 ms) prompts at most the burst plus one per period,
                 refuses every other BEGIN without asking (logged), and
                 another program's request is served meanwhile
  any-broker-lines  while cat's brokered prompt shows, a sandboxed
                 python3 on the pane's terminal opens three paths outside
                 its scope: pbx-broker's three refusal lines go through
                 the job's pty, so none shows on the pane (launchd logs
                 the job's output held; a marker written to the terminal
                 after it shows); once the prompt is answered y the
                 lines show with the job's output and cat prints the file
  any-installer-lost  (standalone) a sandboxed pbx-test-fdcat --installed
                 5 (`pbx run --sandbox --grant read:docs/big.bin`, the
                 object installed by procd) reads three 100-byte pieces
                 through its revocable descriptor; kill -9 of procd: the
                 grant ends `end=lost reason=installer-lost`, vfsd logs
                 the RETIRE of exactly its object, the next two reads
                 fail EIO, and the reader answers on and exits 0
  restart-vfsd   (standalone) a job holding a runtime-reply job-lifetime
                 grant (pbx-test-fdcat --open, its object read through the
                 app library) and one holding an install-mode grant (`pbx
                 run --grant`, fd 5), and a job's lifecycles started just
                 before kill -9 of vfsd: after the supervisor's restart
                 and the accepted attach, both grants ended `end=lost
                 reason=provider-lost` in stack.log and a read through
                 either object fails; the new vfsd answered the RETIRE of
                 both old objects absent (another incarnation); ttyd lists
                 no grant, procd holds no install; the job in flight
                 ended; a lifecycle and a fresh held grant (read, then
                 expired with its job) succeed
  restart-procd  (standalone) the same two grants and an install in flight;
                 kill -9 of procd: the install-mode grant ended `end=lost
                 reason=installer-lost` and its fd 5 reads no more; the
                 runtime-reply grant still reads, is the one `pbx grants`
                 lists, and ends `expired reason=expire` with its job; a
                 new install-mode grant and a lifecycle succeed
  restart-ttyd   (standalone, ttyd on a tmux pane of its own) the two grants
                 and an exceptional request's prompt showing; kill -9 of
                 ttyd with the pane cleared: no grant ended, the new ttyd
                 lists the same two grants (`pbx grants`), the prompt is
                 shown again and y approves it; both grants still read,
                 then all three end expired with their jobs
  restart-launchd (standalone, tmux pane) a job-lifetime grant whose object
                 this process holds a copy of (sent by the holder), and an
                 exceptional request whose prompt shows; kill -9 of
                 launchd: the prompted request's decision is `cancelled`
                 (the pane says withdrawn), the grant ended `expired
                 reason=expire`, both jobs were killed, the copy reads no
                 more; a lifecycle and a fresh held grant succeed
  restart-powerboxd (standalone) two runtime-reply job-lifetime grants
                 whose objects this process holds copies of (sent by the
                 holders), an install-mode grant (`pbx run --grant`, fd 5)
                 and a committed request whose client has not asked its
                 decision (installed into a staged process); kill -9 of
                 powerboxd: powerboxd restarted alone (the lines of
                 up-restart), the four peers keep their pids, the three
                 holders' jobs still run (launchd was not restarted);
                 vfsd logged `RETIRE object W gen G: route to pid OLD
                 closed` for exactly the objects it held for the old
                 powerboxd and the count line with that number (at least
                 the three grants'); ttyd logged `VIEW ended grant I.G:
                 route closed (broker lost)` for exactly the rows it
                 showed, as many as the old powerboxd's approved
                 decisions without a grant-end line, the two holders'
                 grants among them; procd logged `INSTALL ended grant
                 I.G: route closed (broker lost)` for exactly the
                 installs it held (the install-mode grant's among them);
                 launchd logged a broker-lost grant line for each
                 holder's job; both copies and fd 5 read no more; `pbx
                 grants` lists nothing and procd holds no install; the
                 request in flight, asked for its decision, ends with an
                 error within 20 s; a lifecycle and a fresh held grant
                 succeed
  ids-across-restarts (standalone, `pbx up --restart-window-ms 0`) in
                 each of four powerboxd incarnations (three kill -9
                 restarts, each waited for by the supervisor's death and
                 `restarted with fresh routes` lines) a job holds a
                 job-lifetime grant, the new powerboxd's first (wire id
                 0.1 every time), and another job consumes a one-shot
                 grant (pbx-test-fdcat --cycles 1); in the second an
                 exceptional request is denied (no terminal). `pbx
                 grants --format kv` lists exactly N-0.1 in incarnation
                 N, four distinct ids; every request= and grant= that
                 powerboxd wrote to stack.log is N-I.G with N the
                 incarnation of `pbx up`'s `powerboxd incarnation N
                 starting` line before that pid's start, and the
                 approved grant ids are all distinct; `pbx cancel 1-0.1`
                 (the live grant is 4-0.1) exits 1 saying it is not live,
                 incarnation 1 having ended, and `pbx cancel 9-0.1` that
                 no incarnation 9 has run, and `pbx grants` still lists
                 exactly 4-0.1; `pbx log` shows each dead powerboxd's
                 held grant once, lost with its broker (powerboxd[PID]
                 died) and recorded by vfsd and ttyd (waited for 10 s),
                 a consumed grant in each incarnation and the one denial
                 (grant=-, request 2-I.G, its reason); after `pbx up`
                 stops, 4-0.1 is shown once, "stack stopped while it was
                 live" (kv end=stack-stopped), the dead ones end=lost
  chaos          (standalone, `pbx up --restart-window-ms 0` so that the
                 give-up rule never ends the run) powerboxd's usage report
                 (SIGUSR1 to pbx up: `usage: powerboxd[PID] requests=N/CAP
                 ... fds=N log_dropped=N`) taken right after readiness is
                 the baseline (no pool in use); with one job-lifetime
                 grant held the report differs (grants in use > 0) and
                 once the grant ended it equals the baseline again, so
                 the comparison can fail. Then 8 clients in loops of
                 launched jobs: 4 runtime-reply (pbx-test-fdcat --cycles
                 3, three one-shot lifecycles) and 4 install mode (`pbx
                 run --grant read:docs/readme.txt -- pbx-test-fdcat
                 --again 5`: fd 5 read, the grant held 0..0.3 s after
                 that read, read again; its job id taken from pbx run's
                 job line, its standard error kept), while
                 $PBX_CHAOS_KILLS (20; `make chaos`: 1,000)
                 kill -9s hit the stack at any moment, chosen by a seeded
                 random generator (seed printed; PBX_CHAOS_SEED repeats
                 the choices, not the timing): after a gap of 0..0.3 s
                 (every fifth kill 0.6..0.9 s, more than the 0.5 s
                 backoff, so that the stack is more often whole between
                 kills; every fourth, unless aimed, first waits at most
                 2 s until powerboxd's usage report shows a grant in use,
                 and how many did is printed)
                 each targets a stack process alive at that moment (the
                 latest pid of each name from the supervisor's
                 `NAME[PID] started` lines, alive in /proc as pbx up's
                 child), and about a third (while some killed process's
                 restart is still to start) are aimed right after the
                 next `started` line appears (followed every 0.5 ms):
                 at the process just started, or half the time (when
                 alive) at powerboxd (a peer's start) or a peer
                 (powerboxd's start), while the routes are being handed
                 over. The
                 kills per name, the number aimed and the client jobs'
                 exit statuses by kind are printed. Then, within 60 s,
                 the stack is whole with no restart pending (each
                 name's latest start alive, as many starts as restart
                 plans plus one, each restarted process's `restarted`
                 line logged, a peer started route-less or whose route
                 waited followed by a powerboxd restart). No client job
                 waited longer than 30 s and some succeeded; a lifecycle
                 and an install-mode job succeed; no grant is shown or
                 installed; the current vfsd holds no object it minted
                 (its log); every grant-end line has a reason, never
                 empty, none or unknown (the counts by reason are
                 printed, with the peers' per-grant broker-lost lines)
                 and names its object (`object-id=W:G`); stack.log is
                 then read in one pass (each line parsed once, the time
                 printed): for each powerboxd incarnation but the latest
                 (its span: its start line to the next powerboxd's),
                 every approved decision (`grant=N-I.G object-id=W:G`,
                 both required) without a grant-end line of that grant
                 has a record of its end (after the span's start, not the
                 decision line: pbx up reads each pipe in turn, so a
                 decision written just before the kill can be logged
                 after the peers' route-close lines): (a) vfsd's
                 `RETIRE object W gen G: route to pid N closed` naming
                 that powerboxd, or a plain `RETIRE object W gen G` or
                 `HANG-UP object W gen G` within the span; (b)
                 within the span, by a peer process started before its
                 death, ttyd's `VIEW ended grant I.G: route closed
                 (broker lost)`, procd's `INSTALL ended grant I.G: ...
                 (broker lost)` or launchd's `grant I.G of job ...
                 ended: broker lost` (I.G the grant's N-I.G without its
                 incarnation, which the peers never knew); or (c) the
                 vfsd whose incarnation
                 minted W (its top 16 bits, vfsd's ready line) has a
                 supervisor death line before the span's end, so the
                 object died with it; else the request, grant and object
                 are named (the counts by kind of record are printed);
                 the latest powerboxd's approved grants all have a
                 grant-end line; every usage report
                 says log_dropped=0 and stack.log has no dropped-lines
                 note; with 20 kills or more at least one loss record (an
                 `end=lost` grant-end line or a peer broker-lost line);
                 no install-mode job whose grant-end `end=lost` line or
                 launchd broker-lost line (its job id, stamped within its
                 life) is stamped more than 0.2 s before its second read
                 began read through fd 5 again (exit 0 or `read again:
                 ok`); powerboxd's usage report (within
                 15 s) equals the baseline: every pool's use (all 0)
                 and capacity and its descriptor count; every peer holds
                 its baseline descriptor count (vfsd included: it
                 listens for no route, so every vfsd holds the same)
  route-hijack   (standalone, `pbx up --restart-window-ms 0`) two plain
                 foreign programs and one started with `pbx run
                 --sandbox` (pbx-test-hijack) keep connecting to every
                 socket in DIR and to the old route listener's name
                 (vfsd-route.sock) with SEQPACKET, STREAM and DGRAM
                 sockets, sending each connection RESOLVE-, INSTALL- (with
                 a descriptor), VIEW-, POLICY- and PROMPT-shaped frames
                 and resolving through every scope they get (the
                 sandboxed one also through its fd 4), while vfsd and
                 powerboxd are each killed and restarted 20 times, ttyd
                 and procd 4 times and launchd 5 times (each restart
                 awaited in stack.log; the sandboxed program, a job that
                 dies with its launchd, is started again after each
                 launchd restart). No foreign program ever got an object,
                 a FOUND, any descriptor but a scope, or any reply but a
                 refusal (a reply frame with a nonzero status) or a close;
                 each plain one had RESOLVEs refused and vfsd logged
                 refusing its pid; the sandboxed ones tried (a socket
                 refused by its walls counts); every vfsd `route from pid
                 N` line names a powerboxd pbx up started (at least 41
                 routes); a lifecycle succeeds
                 at the end
  make-run       (standalone) `sh peers/demo/run.sh BIN_DIR WORK` (what
                 `make run` runs) in a tmux pane, a real terminal: the
                 prompt names cat and "docs/readme.txt" (an unchanged
                 /bin/cat under `pbx run --sandbox`), y, the file's bytes
                 exactly; a second prompt names sh (the reader), y, its
                 first line, the `pbx cancel` line, cat's "Input/output
                 error" and the reader's line that it still runs; the
                 story ends "make run: done", exit 0, and the first
                 prompt's story stays on the pane. Then run.sh with
                 standard input not a terminal: no prompt, the routine
                 rule (--opens routine), the same story, exit 0. `pbx
                 log` of both: cat's grant lifetime=invocation ended
                 expired by launchd (cat's exit), the reader's cancelled
                 by the user
  policy-rules   (standalone) pbx up --policy FILE with rules by program
                 entry and selector pattern, no terminal: entry cat reads
                 docs/*.txt approved by its rule (POLICY answers prompt,
                 the PROMPT's selector decides, nothing is shown), is
                 denied secrets/** by another (reason user), and an
                 exceptional request of the same entry and file is
                 denied (never allowed by a rule); bin/other is denied
                 docs/readme.txt (no rule); `pbx policy` lists FILE
                 through DIR/policy and `pbx policy check` gives each of
                 these verdicts (exit 0, 3, 4, 3) without asking anyone
  policy-terminal (standalone) pbx up with a tmux pane as its terminal
                 and no --policy: DIR/policy is the built-in terminal
                 policy, under which `pbx policy check` says prompt (4)
                 for cat's routine read (a brokered open) and allow (0)
                 for pbx-demo's; without a terminal the routine one
                 (cat's read allowed)
  stop-status    (standalone) pbx status on a running pbx up: its pid
                 and "ready", the five processes with the pids they run
                 as and incarnation 1, "grants 0 live", then "grants 1
                 live" while a job holds a grant; kill -9 of vfsd: once
                 restarted, vfsd's new pid and incarnation 2; pbx stop
                 exits 0 only once pbx up has ended (exit 0, every stack
                 process gone, DIR/lock free); then pbx status and pbx
                 stop exit 1 saying no stack runs
  make-run-slow-start (standalone) run.sh without a terminal where the
                 stack takes 12 s to start (a `pbx` whose `up` first
                 sleeps: a loaded machine) and WORK/up.out is left from a
                 previous run saying "ready in": run.sh waits for pbx
                 up's own ready event (--ready-fd on a fresh FIFO), never
                 the stale file nor a time limit of its own: the story
                 (make-run's, checked alike) ends "make run: done", exit 0
  vfsd-restart-pending-prompt (standalone, a tmux pane) kill -9 of vfsd
                 while an exceptional request's prompt shows (issue 20,
                 item 5): the prompt is withdrawn, the decision is
                 `outcome=denied reason=provider-lost`, a y typed
                 afterwards approves nothing, the program is told it was
                 denied, pbx grants lists nothing and the new vfsd is
                 never asked to DETACH the dead object; then a lifecycle
                 and a held grant succeed
  prompt-fairness (own stack: pbx up's default geometry and launchd's
                 default --max-jobs; a tmux pane) 64 jobs each hold an
                 unanswered exceptional request, then 2 jobs hold 8 each
                 (raw frames, run.py --fair-program): a third program's
                 100 routine lifecycles (pbx-client --repeat 100) are all
                 approved with no BUSY retry while all 80 exceptional
                 requests stay undecided (issue 20, item 4); prints the
                 lifecycle latency, asserts none
  many-grants    (standalone: PBX1 pools of 1,024 grants, vfsd --objects
                 900, procd --installs 900, 29 staged processes) 29 jobs
                 hold 900 job-lifetime install-mode grants, one request
                 at a time: procd lists 900 installs and vfsd 900 objects
                 found, none hung up or retired; the 901st is refused
                 (vfsd "table full; retry later", outcome=denied
                 reason=resolve) and all 900 stay installed; once the
                 last job ends the same request from a new job is
                 approved (issue 23 item 3)
"""
