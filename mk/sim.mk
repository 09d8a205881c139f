# mk/sim.mk: pbx-sim, the deterministic seeded simulator (docs/TESTING.md).
#
#   make sim           build $(BUILD)/bin/pbx-sim
#   make sim-check     ASan+UBSan build: regression seeds, the CI seed
#                      budget with transition coverage, determinism across
#                      -O0/-O2/sanitizers (in CHECK_EXTRA)
#   make sim-long      a long campaign (SIM_LONG_SEEDS seeds, optimised)
#   make sim-plants    one binary per planted bug in sim/plants/*.patch,
#                      each a patch applied to a copy of core/ (the shipped
#                      source carries no planted code); each must be caught
#                      within the CI budget (in sim-check)
#
# The simulator links the library sources directly so each variant (and
# each planted bug) gets its own objects. Its peer calls are split-phase:
# replies in flight, reordered, delayed past their deadlines, duplicated
# and lost, and peers that go silent or hang up (the late, dup, drop,
# silent and hangup faults, part of "all"); every strict check runs in
# every seed.

SIM_SRCS     := $(wildcard sim/*.c)
SIM_HDRS     := $(wildcard sim/*.h)
SIM_BIN      := $(BUILD)/bin/pbx-sim
SIM_SEEDS    ?= 1..2000
SIM_STEPS    ?= 20000
# The CI fault set: every fault, transient deletion failures and the
# split-phase faults included (the core tracks a refused receipt in
# exactly one record; a late reply is refused without a trace).
SIM_GATE_FAULTS ?= all
SIM_LONG_SEEDS ?= 1..100000
SIM_LONG_STEPS ?= 20000
SIM_FLAGS    := $(CPPFLAGS) $(HOSTED) $(WARN)
# Each build's headers come from the compiler (deps_many, the Makefile):
# its .d beside the binary.
SIM_DEPS     := $(SIM_SRCS) $(LIB_SRCS)
SIM_SAN      := -fsanitize=address,undefined -fno-sanitize-recover=all \
                -fno-omit-frame-pointer

$(SIM_BIN): $(SIM_DEPS)
	@mkdir -p $(dir $@)
	$(call deps_many,$(CC) $(SIM_FLAGS),$(SIM_DEPS))
	$(CC) $(SIM_FLAGS) $(OPT) $(SIM_SRCS) $(LIB_SRCS) -o $@

# Variants for the determinism check and the sanitizer budget.
$(BUILD)/sim/pbx-sim-O0: $(SIM_DEPS)
	@mkdir -p $(dir $@)
	$(call deps_many,$(CC) $(SIM_FLAGS),$(SIM_DEPS))
	$(CC) $(SIM_FLAGS) -O0 -g $(SIM_SRCS) $(LIB_SRCS) -o $@
$(BUILD)/sim/pbx-sim-asan: $(SIM_DEPS)
	@mkdir -p $(dir $@)
	$(call deps_many,clang $(SIM_FLAGS),$(SIM_DEPS))
	clang $(SIM_FLAGS) -O1 -g $(SIM_SAN) $(SIM_SRCS) $(LIB_SRCS) -o $@

# Planted bugs: every sim/plants/<name>.patch is applied to a copy of
# core/ under $(BUILD)/sim/plant-<name>/, and the simulator is built
# against that copy (its include path comes first), never against the
# shipped core, which holds no planted code. Its .d names the copy's
# files by the core/ files they were copied from (the sed), so an edit of
# one rebuilds every plant whose compile read its copy.
SIM_PLANTS := $(sort $(basename $(notdir $(wildcard sim/plants/*.patch))))
SIM_PLANT_BINS := $(SIM_PLANTS:%=$(BUILD)/sim/pbx-sim-plant-%)
SIM_PLANT_SRCS = $(SIM_SRCS) $(filter-out core/%,$(LIB_SRCS)) \
    $(patsubst core/%,$(BUILD)/sim/plant-$*/core/%,$(wildcard core/*.c))
$(BUILD)/sim/pbx-sim-plant-%: sim/plants/%.patch $(SIM_DEPS)
	@rm -rf $(BUILD)/sim/plant-$* && mkdir -p $(BUILD)/sim/plant-$*
	cp -r core $(BUILD)/sim/plant-$*/core
	patch -s -p1 -d $(BUILD)/sim/plant-$* < sim/plants/$*.patch
	$(call deps_many,$(CC) -I$(BUILD)/sim/plant-$* $(SIM_FLAGS),$(SIM_PLANT_SRCS)) && \
	    sed -i 's|$(BUILD)/sim/plant-$*/core/|core/|g' $@.d
	$(CC) -I$(BUILD)/sim/plant-$* $(SIM_FLAGS) -O2 $(SIM_PLANT_SRCS) -o $@

.PHONY: sim sim-check sim-long sim-plants sim-determinism sim-cppcheck
sim: $(SIM_BIN)

sim-determinism: $(SIM_BIN) $(BUILD)/sim/pbx-sim-O0 $(BUILD)/sim/pbx-sim-asan
	@a=$$($(SIM_BIN) --seeds 1..20 --steps 3000 | grep 'trace hash'); \
	 b=$$($(BUILD)/sim/pbx-sim-O0 --seeds 1..20 --steps 3000 | grep 'trace hash'); \
	 c=$$($(BUILD)/sim/pbx-sim-asan --seeds 1..20 --steps 3000 | grep 'trace hash'); \
	 echo "$$a"; \
	 if [ "$$a" != "$$b" ] || [ "$$a" != "$$c" ]; then \
	     echo "sim: trace hash differs across builds"; echo "$$b"; echo "$$c"; exit 1; fi

sim-plants: $(SIM_PLANT_BINS)
	@if [ -z "$(SIM_PLANTS)" ]; then echo "sim-plants: no planted bugs in sim/plants"; exit 1; fi
	@if grep -rln 'PBX_PLANT\|PLANTED BUG' base sha2 ipc bootstrap capabi core powerboxd; then \
	    echo "sim-plants: planted code in shipped source (above)"; exit 1; fi
	@set -e; for p in $(SIM_PLANTS); do \
	    if $(BUILD)/sim/pbx-sim-plant-$$p --seeds $(SIM_SEEDS) --steps 2000 >$(BUILD)/sim/$$p.log 2>&1; then \
	        echo "sim-plants: $$p was NOT caught"; exit 1; \
	    else echo "sim-plants: $$p caught: $$(grep -m1 FAIL $(BUILD)/sim/$$p.log)"; fi; \
	done

# Beside the fixed seeds, CI runs SIM_COMMIT_COUNT seeds that change with
# every commit: the first 7 hex digits of the commit id, read as a number,
# times SIM_COMMIT_COUNT, above 10,000,000 (never one of the fixed seeds).
# The range is printed before the run so that a failure replays with
# the same command; outside git (a tarball) the fixed seeds run alone.
SIM_COMMIT_COUNT ?= 200
SIM_COMMIT_ID    := $(shell git rev-parse --short=7 HEAD 2>/dev/null)
SIM_COMMIT_FIRST := $(if $(SIM_COMMIT_ID),$(shell echo $$((10000000 + 0x$(SIM_COMMIT_ID) * $(SIM_COMMIT_COUNT)))))
SIM_COMMIT_LAST  := $(if $(SIM_COMMIT_FIRST),$(shell echo $$(($(SIM_COMMIT_FIRST) + $(SIM_COMMIT_COUNT) - 1))))

sim-check: $(BUILD)/sim/pbx-sim-asan sim-determinism sim-plants
	$(BUILD)/sim/pbx-sim-asan --regress sim/regress.txt --steps 2000
	$(BUILD)/sim/pbx-sim-asan --seeds $(SIM_SEEDS) --steps $(SIM_STEPS) \
	    --faults $(SIM_GATE_FAULTS) --coverage
	@if [ -n "$(SIM_COMMIT_FIRST)" ]; then \
	    echo "sim-check: seeds of commit $(SIM_COMMIT_ID): replay with" \
	        "pbx-sim --seeds $(SIM_COMMIT_FIRST)..$(SIM_COMMIT_LAST)" \
	        "--steps $(SIM_STEPS) --faults $(SIM_GATE_FAULTS)"; \
	    $(BUILD)/sim/pbx-sim-asan --seeds $(SIM_COMMIT_FIRST)..$(SIM_COMMIT_LAST) \
	        --steps $(SIM_STEPS) --faults $(SIM_GATE_FAULTS); \
	else echo "sim-check: not a git tree: no commit seeds"; fi

sim-long: $(SIM_BIN)
	$(SIM_BIN) --seeds $(SIM_LONG_SEEDS) --steps $(SIM_LONG_STEPS) --coverage

CHECK_EXTRA += sim-check
ALL_EXTRA   += sim

# The shared gates cover the simulator too.
SIM_TIDY_OKS := $(SIM_SRCS:%.c=build/tidy/%.ok)
TIDY_SRCS    += $(SIM_SRCS)
$(SIM_TIDY_OKS): $(SIM_HDRS)
tidy: $(SIM_TIDY_OKS)

sim-cppcheck:
	cppcheck --std=c11 --enable=warning,style,performance,portability \
	    --error-exitcode=1 --inline-suppr --quiet -I. \
	    --suppress=missingIncludeSystem $(SIM_SRCS)
cppcheck: sim-cppcheck

# Branch coverage of core/ under the simulator (docs/TESTING.md): a clang
# source-based coverage build of pbx-sim runs exactly the CI budget of
# sim-check (SIM_SEEDS x SIM_STEPS, SIM_GATE_FAULTS, the seed rotation of
# fault mixes), and scripts/coverage.py writes build/coverage/report.md:
# the true and false arm of every condition of core/*.c, and every arm
# never taken with its reason from sim/coverage-reasons.txt. coverage-check
# also builds pbx-test with coverage and fails when an unreached arm has
# no reason, when a reason names an arm that was taken, or when a "unit:"
# reason's test, run alone, does not take its arm. Neither is part of make
# check (about 1 min user for the run, 1 min for the unit tests).
COVERAGE_SEEDS ?= $(SIM_SEEDS)
COVERAGE_STEPS ?= $(SIM_STEPS)
COV_DIR   := $(BUILD)/coverage
COV_FLAGS := -O0 -fprofile-instr-generate -fcoverage-mapping
COV_REASONS := sim/coverage-reasons.txt
.PHONY: coverage coverage-check coverage-run
$(COV_DIR)/pbx-sim-cov: $(SIM_DEPS)
	@mkdir -p $(dir $@)
	$(call deps_many,clang $(SIM_FLAGS),$(SIM_DEPS))
	clang $(SIM_FLAGS) $(COV_FLAGS) $(SIM_SRCS) $(LIB_SRCS) -o $@
$(COV_DIR)/pbx-test-cov: $(TEST_SRCS) $(LIB_SRCS)
	@mkdir -p $(dir $@)
	$(call deps_many,clang $(CPPFLAGS) $(HOSTED),$(TEST_SRCS) $(LIB_SRCS))
	clang $(CPPFLAGS) $(HOSTED) $(WARN) $(COV_FLAGS) $(TEST_SRCS) $(LIB_SRCS) -o $@
coverage-run: $(COV_DIR)/pbx-sim-cov
	@rm -f $(COV_DIR)/sim.profraw
	@LLVM_PROFILE_FILE=$(COV_DIR)/sim.profraw $(COV_DIR)/pbx-sim-cov \
	    --seeds $(COVERAGE_SEEDS) --steps $(COVERAGE_STEPS) \
	    --faults $(SIM_GATE_FAULTS) >$(COV_DIR)/sim.log || \
	    { tail -40 $(COV_DIR)/sim.log; exit 1; }
	llvm-profdata merge -o $(COV_DIR)/sim.profdata $(COV_DIR)/sim.profraw
coverage: coverage-run
	python3 scripts/coverage.py $(COV_DIR)/pbx-sim-cov $(COV_DIR)/sim.profdata \
	    --reasons $(COV_REASONS) --out $(COV_DIR)
coverage-check: coverage-run $(COV_DIR)/pbx-test-cov
	python3 scripts/coverage.py $(COV_DIR)/pbx-sim-cov $(COV_DIR)/sim.profdata \
	    --reasons $(COV_REASONS) --out $(COV_DIR) --check \
	    --unit-bin $(COV_DIR)/pbx-test-cov
