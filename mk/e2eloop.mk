# mk/e2eloop.mk: issue 22 item 10's loop (scripts/e2e_loop.sh, docs/TESTING.md
# "No flaky scenario"). A test tool, not in make check (about 40 minutes):
#
#   make e2e-loop                 run.py all 10 times in a row on a clone of
#                                 HEAD, a make check looping beside it;
#                                 results in build/e2e-loop/loop.txt
#   make e2e-loop E2E_LOOP_RUNS=N the same, N runs

E2E_LOOP_RUNS ?= 10

.PHONY: e2e-loop
e2e-loop:
	bash scripts/e2e_loop.sh $(E2E_LOOP_RUNS) $(BUILD)/e2e-loop
