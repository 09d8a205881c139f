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
SIM_DEPS     := $(SIM_SRCS) $(SIM_HDRS) $(LIB_SRCS) $(HEADERS)
SIM_SAN      := -fsanitize=address,undefined -fno-sanitize-recover=all \
                -fno-omit-frame-pointer

$(SIM_BIN): $(SIM_DEPS)
	@mkdir -p $(dir $@)
	$(CC) $(SIM_FLAGS) $(OPT) $(SIM_SRCS) $(LIB_SRCS) -o $@

# Variants for the determinism check and the sanitizer budget.
$(BUILD)/sim/pbx-sim-O0: $(SIM_DEPS)
	@mkdir -p $(dir $@)
	$(CC) $(SIM_FLAGS) -O0 -g $(SIM_SRCS) $(LIB_SRCS) -o $@
$(BUILD)/sim/pbx-sim-asan: $(SIM_DEPS)
	@mkdir -p $(dir $@)
	clang $(SIM_FLAGS) -O1 -g $(SIM_SAN) $(SIM_SRCS) $(LIB_SRCS) -o $@

# Planted bugs: every sim/plants/<name>.patch is applied to a copy of
# core/ under $(BUILD)/sim/plant-<name>/, and the simulator is built
# against that copy (its include path comes first), never against the
# shipped core, which holds no planted code.
SIM_PLANTS := $(sort $(basename $(notdir $(wildcard sim/plants/*.patch))))
SIM_PLANT_BINS := $(SIM_PLANTS:%=$(BUILD)/sim/pbx-sim-plant-%)
$(BUILD)/sim/pbx-sim-plant-%: sim/plants/%.patch $(SIM_DEPS)
	@rm -rf $(BUILD)/sim/plant-$* && mkdir -p $(BUILD)/sim/plant-$*
	cp -r core $(BUILD)/sim/plant-$*/core
	patch -s -p1 -d $(BUILD)/sim/plant-$* < sim/plants/$*.patch
	$(CC) -I$(BUILD)/sim/plant-$* $(SIM_FLAGS) -O2 $(SIM_SRCS) \
	    $(filter-out core/%,$(LIB_SRCS)) \
	    $(patsubst core/%,$(BUILD)/sim/plant-$*/core/%,$(wildcard core/*.c)) -o $@

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

sim-check: $(BUILD)/sim/pbx-sim-asan sim-determinism sim-plants
	$(BUILD)/sim/pbx-sim-asan --regress sim/regress.txt --steps 2000
	$(BUILD)/sim/pbx-sim-asan --seeds $(SIM_SEEDS) --steps $(SIM_STEPS) \
	    --faults $(SIM_GATE_FAULTS) --coverage

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

# Branch coverage of core/ under the simulator: a gcc --coverage build of
# pbx-sim, COVERAGE_SEEDS seeds with every fault, then gcov's JSON per core
# file turned into build/coverage/report.md (scripts/coverage.py): branches
# taken, and every branch never taken, each to be reached by a fault mix or
# argued unreachable. A report, not a gate; not part of make check.
COVERAGE_SEEDS ?= 1..300
COVERAGE_STEPS ?= 10000
.PHONY: coverage
coverage: $(SIM_DEPS)
	@rm -rf $(BUILD)/coverage && mkdir -p $(BUILD)/coverage/obj
	cd $(BUILD)/coverage/obj && for f in $(SIM_SRCS) $(LIB_SRCS); do \
	    gcc $(SIM_FLAGS:-I.=-I$(CURDIR)) -I$(CURDIR) -O0 --coverage \
	        -c $(CURDIR)/$$f -o $$(echo $$f | tr / _).o || exit 1; done
	cd $(BUILD)/coverage/obj && gcc --coverage *.o -o ../pbx-sim-cov
	$(BUILD)/coverage/pbx-sim-cov --seeds $(COVERAGE_SEEDS) \
	    --steps $(COVERAGE_STEPS) --faults all >/dev/null
	cd $(BUILD)/coverage/obj && gcov -b -j -r -s $(CURDIR) \
	    $$(ls *.gcda | grep '^core_') >/dev/null
	python3 scripts/coverage.py $(BUILD)/coverage/obj
