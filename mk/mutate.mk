# mk/mutate.mk: mutation testing of core/, ipc/ and bootstrap/
# (tests/mutate/mutate.py, docs/TESTING.md "Mutation testing"). A test
# tool: nothing here is built by `make all` or installed.
#
#   make mutate          every mutant, MUTATE_JOBS workers (the -j of make,
#                        else 2); report in build/mutate/report.md and
#                        report.json
#   make mutate MUTATE_FILES="core/pbx_core_calls.c ..."
#                        every mutant of those files only (a slice)
#   make mutate-sample   a fixed sample of MUTATE_SAMPLE mutants (seed
#                        MUTATE_SEED); fails when more than
#                        MUTATE_THRESHOLD percent survive (in CHECK_EXTRA);
#                        report in build/mutate/sample/
#
# Each worker mutates its own copy of the tree under build/mutate/ and
# links one mutated object against baseline objects, so the sources in the
# worktree are never touched. The flags are the tree's, without -Werror
# (a mutant that only warns must still run) and at -O1.

MUTATE_DIRS      ?= core ipc bootstrap
MUTATE_FILES     ?=
MUTATE_SAMPLE    ?= 40
MUTATE_SEED      ?= 1
MUTATE_THRESHOLD ?= 10
MUTATE_FULL_THRESHOLD ?= 100
MUTATE_SIM_SEEDS ?= 1..200
MUTATE_SIM_STEPS ?= 5000
# Verdicts are cached by mutant and by a hash of every input of the build
# and the checks (tests/mutate/mutcache.py): a rerun runs only the mutants
# without a valid verdict, so a stopped `make mutate` resumes. The full run
# and the sample share it. MUTATE_CACHE=none runs everything afresh.
MUTATE_CACHE     ?= build/mutate/cache.jsonl
# Mutants are built and run under ASan and UBSan (the flags of
# check-asan): a mutant that reads or writes past an array, or overflows,
# is a bug the sanitizers see even when no assertion does. Empty it
# (MUTATE_SANITIZE=) for the plain build.
MUTATE_SANITIZE  ?= -fsanitize=address,undefined -fno-sanitize-recover=all \
                    -fno-omit-frame-pointer
MUTATE_ARGS = --dirs "$(MUTATE_DIRS)" --cc "$(CC)" \
    --cflags "$(filter-out -Werror,$(WARN)) -O1 $(MUTATE_SANITIZE)" \
    --ldflags "$(MUTATE_SANITIZE)" \
    --lib-srcs "$(LIB_SRCS)" --test-srcs "$(TEST_SRCS)" \
    --tool-srcs "$(TOOL_SRCS) $(APP_SRCS) $(PEERS_LIB_SRCS)" --sim-srcs "$(SIM_SRCS)" \
    --sim-seeds $(MUTATE_SIM_SEEDS) --sim-steps $(MUTATE_SIM_STEPS) \
    --equivalent tests/mutate/equivalent.txt \
    --cache $(MUTATE_CACHE) \
    $(if $(MUTATE_FILES),--files "$(MUTATE_FILES)") \
    $(if $(MUTATE_JOBS),--jobs $(MUTATE_JOBS))

.PHONY: mutate mutate-sample mutate-selftest
# The fail-fast runner and the verdict cache the runs rely on
# (tests/mutate/selftest.py): one small compile, no mutant.
mutate-selftest:
	@python3 tests/mutate/selftest.py "$(CC)" build/mutate-selftest

mutate:
	@python3 tests/mutate/mutate.py $(MUTATE_ARGS) --out build/mutate \
	    --threshold $(MUTATE_FULL_THRESHOLD)

mutate-sample:
	@python3 tests/mutate/mutate.py $(MUTATE_ARGS) --out build/mutate/sample \
	    --sample $(MUTATE_SAMPLE) --seed $(MUTATE_SEED) \
	    --threshold $(MUTATE_THRESHOLD)

CHECK_EXTRA += mutate-selftest mutate-sample
