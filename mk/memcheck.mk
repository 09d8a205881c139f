# mk/memcheck.mk: the end-to-end scenarios under valgrind memcheck
# (issue 22 item 5; docs/TESTING.md, "Memory checks").
#
#   make memcheck   tests/e2e/run.py's MEMCHECK_SCENARIOS with every
#                   reference peer, pbx, pbx-client, pbx-broker and the
#                   freestanding powerboxd image (but for the programs a
#                   sandboxed scenario runs natively: memcheck.py's
#                   NATIVE) each under
#                   `valgrind --leak-check=full --error-exitcode=97`, no
#                   suppression file (tests/memcheck/memcheck.py); fails
#                   on any valgrind error or leak, and prints the figures
#                   per program. Not in make check (its time: TESTING.md).

# Every scenario of tests/e2e/run.py that runs under valgrind; each one
# left out is named, with its reason, in docs/TESTING.md ("Memory
# checks").
MEMCHECK_SCENARIOS ?= lifecycle direct hangup lie-scope \
    runtime-reply not-found cancel-lost-reply invocation-expiry \
    unwanted-receipts quota job-spoof foreign prompt user-deny \
    prompt-cancel expire scope-hoard pbx-open scope-steal backpressure \
    query-admission grants-cli policy-rules policy-terminal \
    up up-restart up-backoff stop-status \
    restart-vfsd restart-ttyd restart-procd restart-launchd \
    restart-powerboxd ids-across-restarts vfsd-restart-pending-prompt \
    pbx-run-grant sandbox any-spoof sandbox-walls sandbox-dynamic any-cat \
    any-keys any-escape any-revoke any-expire any-consume sandbox-metadata \
    hold-release sandbox-setattr sandbox-ipc any-userns any-mount \
    any-python any-nofuse make-run make-run-slow-start route-hijack \
    any-broker-lines any-installer-lost any-flood any-ask-flood \
    prompt-pending wake-backpressure \
    prompt-fairness many-clients many-grants chaos

.PHONY: memcheck
memcheck: all peers $(BUILD)/bin/powerboxd
	python3 tests/memcheck/memcheck.py $(BUILD)/bin $(BUILD)/memcheck \
	    $(MEMCHECK_SCENARIOS)

# make memcheck-e2e: the C end-to-end tests (pbx-e2e-test: liar rows,
# startup statuses, refusal paths) with the powerboxd image they start
# and pbx under valgrind (tests/memcheck/memcheck_c.py; the tests it
# leaves out are its EXCLUDED, each with its reason). Not in make check.
.PHONY: memcheck-e2e
memcheck-e2e: $(BUILD)/bin/pbx-e2e-test $(BUILD)/bin/powerboxd $(BUILD)/bin/pbx
	python3 tests/memcheck/memcheck_c.py $(BUILD)/bin/pbx-e2e-test \
	    $(BUILD)/bin/powerboxd $(BUILD)/bin/pbx $(BUILD)/memcheck-e2e

# make memcheck-timed: the scenarios that measure a deadline valgrind's
# slowdown makes the programs miss (memcheck.py's TIMED), each alone under
# memcheck; gated on valgrind's verdict (0 errors, 0 bytes lost) and on
# any failure but its named timing check, which is reported, not gated.
MEMCHECK_TIMED_SCENARIOS ?= prompt-timeout ttyd-stalled vfsd-stalled \
    slow-prompt-isolation restart-during-restart idle-flood relay-timeout

.PHONY: memcheck-timed
memcheck-timed: all peers $(BUILD)/bin/powerboxd
	python3 tests/memcheck/memcheck.py --timed $(BUILD)/bin \
	    $(BUILD)/memcheck-timed $(MEMCHECK_TIMED_SCENARIOS)
