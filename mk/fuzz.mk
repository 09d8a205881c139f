# mk/fuzz.mk: the libFuzzer harnesses (fuzz/fuzz_*.c), their budgets in
# make check, longer campaigns and the AFL++ build (docs/TESTING.md,
# "Fuzzing").
#
#   make fuzz         build every harness into $(BUILD)/fuzz/
#   make fuzz-smoke   each harness replays its committed corpus, then runs
#                     its budget (FUZZ_RUNS_<name>, default FUZZ_RUNS), and
#                     prints its executions and executions per second; a
#                     harness held below FUZZ_RUNS prints why (FUZZ_WHY_<name>).
#                     Any crash, timeout (-timeout), leak (LSan) or
#                     invariant failure (the harness aborts) fails it. In
#                     make check.
#   make fuzz-long    FUZZ_SECONDS per harness (default 300), not in check
#   make fuzz-plants  the core-machine harness must catch each sim plant
#                     and each harness its plants of fuzz/plants/
#   make fuzz-afl-build  every harness built with AFL++ (Debian's afl++,
#                     installed by .ci/run), each replaying its corpus once
#   make fuzz-afl     the same harnesses under AFL++,
#                     AFL_SECONDS each (default 120), inputs timed out at
#                     FUZZ_TIMEOUT s; fails on any saved crash or hang
#
# Every harness links the freestanding libraries; FUZZ_LINK_<name> adds
# the hosted sources it needs (the simulator, a peer library file, a peer
# file). Hosted harnesses build with HOSTED, as the peers do.

FUZZ_CC   ?= clang
FUZZ_RUNS ?= 2000000
FUZZ_TIMEOUT ?= 10
FUZZ_FLAGS := -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
              -I. -std=c11 -g -O1 $(HOSTED)

# The simulator without its command line: the core-machine harness runs
# seeds of its world with the input as every draw.
FUZZ_LINK_fuzz_core_machine := $(filter-out sim/sim_main.c,$(wildcard sim/*.c))
FUZZ_LINK_fuzz_attach  := peers/common/pbx_peer_attach.c peers/common/pbx_peer_io.c \
                          peers/lib/pbx_peer.c
FUZZ_LINK_fuzz_tty     := peers/lib/pbx_peer_tty.c peers/lib/pbx_peer_tty_keys.c peers/lib/pbx_peer_tty_policy.c \
                          peers/lib/pbx_peer.c
FUZZ_LINK_fuzz_vfsd_resolve := peers/vfsd/vfsd_resolve.c peers/vfsd/vfsd_create.c \
                          peers/lib/pbx_peer_vfs.c peers/lib/pbx_peer_vfs_obj.c \
                          peers/lib/pbx_peer.c \
                          peers/common/pbx_peer_io.c
FUZZ_LINK_fuzz_launchd := peers/lib/pbx_peer_launch.c peers/lib/pbx_peer_admin.c \
                          peers/lib/pbx_peer.c
FUZZ_LINK_fuzz_vfs_obj := peers/lib/pbx_peer_vfs_obj.c peers/lib/pbx_peer.c
FUZZ_LINK_fuzz_stage   := peers/lib/pbx_peer_stage.c
FUZZ_LINK_fuzz_track   := peers/lib/pbx_peer_track.c peers/lib/pbx_peer.c
FUZZ_LINK_fuzz_profile := peers/lib/pbx_peer_profile.c
FUZZ_LINK_fuzz_broker  := peers/lib/pbx_peer_broker.c
# fuzz_route_attach (powerboxd's slot-4 ROUTE_ATTACH codec) links only the
# freestanding libraries and runs FUZZ_RUNS: about 250,000 exec per CPU
# second, so about 8 s.
# What pbx grants and pbx log read: ttyd's rows (written by ttyd's own
# encoder in one mode) and the stack log's lines.
FUZZ_LINK_fuzz_grants  := peers/lib/pbx_peer_grants.c peers/lib/pbx_peer_tty.c \
                          peers/lib/pbx_peer_tty_keys.c peers/lib/pbx_peer_tty_policy.c \
                          peers/lib/pbx_peer.c
# The shared parsers of numbers, pairs, names and admission options, and
# the /proc stat text the query sockets' admission reads.
FUZZ_LINK_fuzz_peer_parse := peers/lib/pbx_peer.c peers/common/pbx_peer_origin.c \
                             peers/common/pbx_peer_io.c


# Harness-specific options: the core machine's inputs stay short (a
# byte is a draw, a few draws a step), so each run is about 500 steps.
FUZZ_ARGS_fuzz_core_machine := -max_len=512

# Budgets (docs/TESTING.md, "Fuzzing", has the table with the rates
# measured here, in executions per CPU second). Every harness not named
# here runs FUZZ_RUNS; one held below it says why, with its rate, so make
# check's fuzz share stays near 5 minutes of one core (measured: 3 min
# user for the whole smoke run with the budgets before these raises).
FUZZ_ARGS_fuzz_sha2 := -max_len=1024
FUZZ_RUNS_fuzz_core_machine := 12000
FUZZ_WHY_fuzz_core_machine  := each input boots a core, runs up to 512 \
    simulated steps with every invariant checked after each event and \
    drives the world to quiescence: about 180 exec per CPU second, so \
    about 65 s
FUZZ_RUNS_fuzz_vfsd_resolve := 250000
FUZZ_WHY_fuzz_vfsd_resolve  := each input is a RESOLVE served by vfsd over \
    a real socket, lookups in a real tree and a reply read back: about \
    6,000 exec per CPU second, so about 40 s
FUZZ_RUNS_fuzz_attach := 600000
FUZZ_WHY_fuzz_attach  := each input crosses a real socketpair twice with \
    fresh descriptors: about 45,000 exec per CPU second (most of it in \
    the kernel), so about 15 s
FUZZ_RUNS_fuzz_sha2 := 300000
FUZZ_WHY_fuzz_sha2  := each input hashes up to 1 KiB twice: about 30,000 \
    exec per CPU second while inputs are short, fewer as they grow, so \
    about 10-20 s
FUZZ_RUNS_fuzz_tty := 1000000
FUZZ_WHY_fuzz_tty  := each input parses a policy file line by line and \
    writes every rule back, and its inputs grow to many lines: 72,000 \
    exec per CPU second at first, far fewer later, so about 30-40 s
FUZZ_RUNS_fuzz_track := 500000
FUZZ_WHY_fuzz_track := each input is a sequence of records (frames a job \
    sends, powerboxd's replies, table steps), with the whole table's \
    invariants checked after every record: about 46,000 exec per CPU \
    second at first, about 20,000 over 2 million runs as its inputs \
    grow, so about 20 s
FUZZ_RUNS_fuzz_profile := 400000
FUZZ_WHY_fuzz_profile := each input applies a profile file of up to 4 KiB \
    to a fresh copy of the system profile (25 KiB, compared whole after a \
    refusal) and checks every entry against every removal: about 23,000 \
    exec per CPU second, so about 17 s
FUZZ_RUNS_fuzz_grants := 250000
FUZZ_WHY_fuzz_grants := each input is a row of up to 17 KiB written by \
    ttyd's encoder or read from the input, split twice (the parser and the \
    harness's own reading) and written back, with the SHA-256 of a selector \
    of up to 4 KiB, or up to three log lines judged against a fresh 98 KiB \
    audit table: about 7,000 exec per CPU second, so about 35 s

FUZZ_NAMES := $(FUZZ_SRCS:fuzz/%.c=%)

# Every source a harness links is compiled once with the fuzzing flags
# into $(BUILD)/fuzz-obj/ (its header dependencies in the .d beside it),
# so eleven harnesses do not compile the libraries eleven times.
fuzz_objs = $(patsubst %.c,$(BUILD)/fuzz-obj/%.o,$(1))
$(BUILD)/fuzz-obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_FLAGS) -MMD -MP -c $< -o $@

# The AFL++ build (make fuzz-afl-build, fuzz-afl): the same sources,
# instrumented by afl-clang-fast with ASan and UBSan, each compiled once
# into $(BUILD)/afl-obj/ (its .d beside it) and shared by every harness.
AFL_CC    ?= afl-clang-fast
AFL_ENV   := AFL_QUIET=1 AFL_USE_ASAN=1 AFL_USE_UBSAN=1
AFL_FLAGS := -I. -std=c11 -g -O1 $(HOSTED)
afl_objs = $(patsubst %.c,$(BUILD)/afl-obj/%.o,$(1))
$(BUILD)/afl-obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(AFL_ENV) $(AFL_CC) $(AFL_FLAGS) -MMD -MP -c $< -o $@

# fuzz_rule(name): a harness's binary from its own file and the objects
# of what it links; the AFL++ build compiles the same sources its way.
# The main's headers come from the compiler (DEPS_ONE: the .d beside it).
define fuzz_rule
$$(BUILD)/fuzz/$(1): fuzz/$(1).c $$(call fuzz_objs,$$(FUZZ_LINK_$(1)) $$(LIB_SRCS))
	@mkdir -p $$(dir $$@)
	$$(FUZZ_CC) $$(FUZZ_FLAGS) $$(DEPS_ONE) $$< $$(call fuzz_objs,$$(FUZZ_LINK_$(1)) $$(LIB_SRCS)) -o $$@
$$(BUILD)/afl/$(1): fuzz/$(1).c $$(call afl_objs,$$(FUZZ_LINK_$(1)) $$(LIB_SRCS))
	@mkdir -p $$(dir $$@)
	$$(AFL_ENV) $$(AFL_CC) -fsanitize=fuzzer $$(AFL_FLAGS) $$(DEPS_ONE) $$< \
	    $$(call afl_objs,$$(FUZZ_LINK_$(1)) $$(LIB_SRCS)) -o $$@
endef
$(foreach n,$(FUZZ_NAMES),$(eval $(call fuzz_rule,$(n))))

fuzz: $(FUZZ_BINS)

# fuzz_smoke(name): one harness's make check run: the committed corpus,
# then its budget of runs (seed 1, so a CI run replays); the summary line
# gives the runs and the rate libFuzzer measured; any failure prints the
# log's tail and fails.
define fuzz_smoke
	@mkdir -p $(BUILD)/fuzz-work/$(1)
	@$(BUILD)/fuzz/$(1) -runs=$(or $(FUZZ_RUNS_$(1)),$(FUZZ_RUNS)) -seed=1 \
	    -timeout=$(FUZZ_TIMEOUT) -print_final_stats=1 $(FUZZ_ARGS_$(1)) \
	    -artifact_prefix=$(BUILD)/fuzz-work/$(1)- \
	    -dict=fuzz/dict/$(1).dict $(BUILD)/fuzz-work/$(1) fuzz/corpus/$(1) \
	    >$(BUILD)/fuzz-work/$(1).log 2>&1 || { tail -60 $(BUILD)/fuzz-work/$(1).log; \
	    echo "fuzz $(1): FAILED (log: $(BUILD)/fuzz-work/$(1).log)"; exit 1; }
	@echo "fuzz $(1): $$(sed -n 's/^stat::number_of_executed_units: *//p' \
	    $(BUILD)/fuzz-work/$(1).log) runs, $$(sed -n \
	    's/^stat::average_exec_per_sec: *//p' $(BUILD)/fuzz-work/$(1).log) exec/s"
	$(if $(FUZZ_WHY_$(1)),@echo "fuzz $(1): fewer than $(FUZZ_RUNS) runs: $(strip $(FUZZ_WHY_$(1)))")

endef

fuzz-smoke: $(FUZZ_BINS)
	$(foreach n,$(FUZZ_NAMES),$(call fuzz_smoke,$(n)))

FUZZ_SECONDS ?= 300
AFL_SECONDS  ?= 120
AFL_BINS     := $(FUZZ_SRCS:fuzz/%.c=$(BUILD)/afl/%)

# fuzz_long(name): one harness's campaign of FUZZ_SECONDS, its corpus
# growing in $(BUILD)/fuzz-work/<name>; a finding stops it and fails.
define fuzz_long
	@mkdir -p $(BUILD)/fuzz-work/$(1)
	@echo "fuzz $(1) ($(FUZZ_SECONDS) s)"
	@$(BUILD)/fuzz/$(1) -max_total_time=$(FUZZ_SECONDS) -timeout=$(FUZZ_TIMEOUT) \
	    -print_final_stats=1 $(FUZZ_ARGS_$(1)) -dict=fuzz/dict/$(1).dict \
	    -artifact_prefix=$(BUILD)/fuzz-work/$(1)- \
	    $(BUILD)/fuzz-work/$(1) fuzz/corpus/$(1)

endef

fuzz-long: $(FUZZ_BINS)
	$(foreach n,$(FUZZ_NAMES),$(call fuzz_long,$(n)))

# make fuzz-afl-build: every harness built with AFL++, then each replays
# its committed corpus once (no campaign): the instrumented build links
# and runs. Any crash or sanitizer report on the corpus fails it.
.PHONY: fuzz-afl-build fuzz-afl
fuzz-afl-build: $(AFL_BINS)
	@set -e; h=0; t=0; for f in $(AFL_BINS); do \
	    n=$$(basename $$f); c=$$(ls fuzz/corpus/$$n | wc -l); \
	    AFL_QUIET=1 $$f fuzz/corpus/$$n/* >$(BUILD)/afl/$$n.replay.log 2>&1 || \
	        { tail -20 $(BUILD)/afl/$$n.replay.log; \
	          echo "afl $$n: corpus replay FAILED"; exit 1; }; \
	    echo "afl $$n: built, $$c corpus inputs replayed"; \
	    h=$$((h + 1)); t=$$((t + c)); \
	done; \
	echo "fuzz-afl-build: $$h harnesses built with AFL++, $$t corpus inputs replayed: ok"

# About 21 s of CPU from clean (measured: 19 s user, 2 s system), so
# make check builds them all.
CHECK_EXTRA += fuzz-afl-build

fuzz-afl: $(AFL_BINS)
	@set -e; for f in $(AFL_BINS); do \
	    n=$$(basename $$f); out=$(BUILD)/afl-work/$$n; rm -rf $$out; \
	    mkdir -p $(BUILD)/afl-work; \
	    echo "afl $$n ($(AFL_SECONDS) s)"; \
	    AFL_SKIP_CPUFREQ=1 AFL_NO_UI=1 AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1 \
	        AFL_NO_AFFINITY=1 \
	        afl-fuzz -i fuzz/corpus/$$n -o $$out -x fuzz/dict/$$n.dict \
	        -t $(FUZZ_TIMEOUT)000 -V $(AFL_SECONDS) -- $$f >$$out.log 2>&1 || \
	        { tail -20 $$out.log; exit 1; }; \
	    for k in crashes hangs; do \
	        if ls $$out/default/$$k/id* >/dev/null 2>&1; then \
	            echo "afl $$n: $$k saved in $$out/default/$$k"; exit 1; fi; \
	    done; \
	    echo "afl $$n: $$(sed -n 's/^execs_done *: *//p' $$out/default/fuzzer_stats) execs," \
	        "$$(sed -n 's/^corpus_count *: *//p' $$out/default/fuzzer_stats) in its queue," \
	        "no crash, no hang"; \
	done

# make fuzz-plants (not in make check): the core-machine harness built
# against each planted bug of sim/plants/ (applied to a copy of core/, as
# sim-plants does) must fail within FUZZ_PLANT_RUNS runs from its corpus:
# the harness can see what the simulator's own seeds see.
FUZZ_PLANT_RUNS ?= 4000
FUZZ_PLANTS := $(sort $(basename $(notdir $(wildcard sim/plants/*.patch))))
FUZZ_PLANT_BINS := $(FUZZ_PLANTS:%=$(BUILD)/fuzz/plant-%/fuzz_core_machine)
# Its headers come from the compiler (deps_many, as for sim-plants: the
# copied core files named by the core/ files they were copied from).
FUZZ_PLANT_SRCS = fuzz/fuzz_core_machine.c $(FUZZ_LINK_fuzz_core_machine) \
    $(filter-out core/%,$(LIB_SRCS)) \
    $(patsubst core/%,$(BUILD)/fuzz/plant-$*/core/%,$(wildcard core/*.c))
$(BUILD)/fuzz/plant-%/fuzz_core_machine: sim/plants/%.patch fuzz/fuzz_core_machine.c \
        $(FUZZ_LINK_fuzz_core_machine) $(LIB_SRCS)
	@rm -rf $(BUILD)/fuzz/plant-$* && mkdir -p $(BUILD)/fuzz/plant-$*
	cp -r core $(BUILD)/fuzz/plant-$*/core
	patch -s -p1 -d $(BUILD)/fuzz/plant-$* < sim/plants/$*.patch
	$(call deps_many,$(FUZZ_CC) -I$(BUILD)/fuzz/plant-$* $(FUZZ_FLAGS),$(FUZZ_PLANT_SRCS)) && \
	    sed -i 's|$(BUILD)/fuzz/plant-$*/core/|core/|g' $@.d
	$(FUZZ_CC) -I$(BUILD)/fuzz/plant-$* $(FUZZ_FLAGS) $(FUZZ_PLANT_SRCS) -o $@

.PHONY: fuzz-plants
fuzz-plants: $(FUZZ_PLANT_BINS)
	@set -e; for p in $(FUZZ_PLANTS); do \
	    d=$(BUILD)/fuzz/plant-$$p; rm -rf $$d/work; mkdir -p $$d/work; \
	    if (cd $$d && ./fuzz_core_machine -runs=$(FUZZ_PLANT_RUNS) -seed=1 \
	        $(FUZZ_ARGS_fuzz_core_machine) work $(CURDIR)/fuzz/corpus/fuzz_core_machine \
	        >log 2>&1); then echo "fuzz-plants: $$p was NOT caught"; exit 1; \
	    else echo "fuzz-plants: $$p caught: $$(grep -m1 '^FAIL' $$d/log)"; fi; \
	done

# make fuzz-plants also builds fuzz_route_attach against each planted bug
# of fuzz/plants/capabi_*.patch (applied to a copy of capabi/, whose
# headers then shadow the shipped ones: -I of the copy comes first) and
# requires a failure within FUZZ_CAPABI_PLANT_RUNS runs from its corpus:
# the ROUTE_ATTACH oracles see a decoder, judge or answer that breaks
# capabi/pbx_capabi.h's documented order, echo or re-encoding.
FUZZ_CAPABI_PLANT_RUNS ?= 200000
FUZZ_CAPABI_PLANTS := $(sort $(basename $(notdir $(wildcard fuzz/plants/capabi_*.patch))))
FUZZ_CAPABI_PLANT_BINS := $(FUZZ_CAPABI_PLANTS:%=$(BUILD)/fuzz/plant-%/fuzz_route_attach)
$(BUILD)/fuzz/plant-%/fuzz_route_attach: fuzz/plants/%.patch fuzz/fuzz_route_attach.c \
        $(LIB_SRCS) $(wildcard base/*.h capabi/*.h)
	@rm -rf $(BUILD)/fuzz/plant-$* && mkdir -p $(BUILD)/fuzz/plant-$*
	cp -r capabi $(BUILD)/fuzz/plant-$*/capabi
	patch -s -p1 -d $(BUILD)/fuzz/plant-$* < fuzz/plants/$*.patch
	$(FUZZ_CC) -I$(BUILD)/fuzz/plant-$* $(FUZZ_FLAGS) fuzz/fuzz_route_attach.c \
	    $(filter-out capabi/%,$(LIB_SRCS)) \
	    $(patsubst capabi/%,$(BUILD)/fuzz/plant-$*/capabi/%,$(wildcard capabi/*.c)) -o $@

.PHONY: fuzz-plants-capabi
fuzz-plants: fuzz-plants-capabi
fuzz-plants-capabi: $(FUZZ_CAPABI_PLANT_BINS)
	@set -e; for p in $(FUZZ_CAPABI_PLANTS); do \
	    d=$(BUILD)/fuzz/plant-$$p; rm -rf $$d/work; mkdir -p $$d/work; \
	    if (cd $$d && ./fuzz_route_attach -runs=$(FUZZ_CAPABI_PLANT_RUNS) -seed=1 \
	        -dict=$(CURDIR)/fuzz/dict/fuzz_route_attach.dict \
	        work $(CURDIR)/fuzz/corpus/fuzz_route_attach >log 2>&1); then \
	        echo "fuzz-plants: $$p was NOT caught"; exit 1; \
	    else r=$$(grep -o '^#[0-9]*' $$d/log | tail -1); \
	        w=$$(if [ -n "$$r" ]; then echo "after run $$r"; else echo "replaying the corpus"; fi); \
	        echo "fuzz-plants: $$p caught $$w," \
	        "$$(grep -m1 -o 'in fuzz_ra_[a-z_]*' $$d/log)"; fi; \
	done; echo "fuzz-plants-capabi: all $(words $(FUZZ_CAPABI_PLANTS)) caught"

# make fuzz-plants also builds each harness plant of fuzz/plants/
# (fuzz_HARNESS.NAME.patch; the capabi_*.patch plants are above: one deliberate bug in a peer file the harness
# links, applied to a copy of that file) and requires the harness to fail
# within FUZZ_HPLANT_RUNS runs from its corpus: the harness's oracle sees
# the bug. Each prints its first report line.
FUZZ_HPLANT_RUNS ?= 200000
FUZZ_HPLANTS := $(sort $(basename $(notdir $(wildcard fuzz/plants/fuzz_*.patch))))
FUZZ_HPLANT_BINS := $(FUZZ_HPLANTS:%=$(BUILD)/fuzz/hplant-%/harness)
$(BUILD)/fuzz/hplant-%/harness: fuzz/plants/%.patch $(FUZZ_SRCS) \
        $(call fuzz_objs,$(LIB_SRCS))
	@rm -rf $(@D) && mkdir -p $(@D)/src
	@for f in $(FUZZ_LINK_$(basename $*)); do \
	    mkdir -p $(@D)/src/$$(dirname $$f) && cp $$f $(@D)/src/$$f; done
	patch -s -p1 -d $(@D)/src < $<
	$(FUZZ_CC) $(FUZZ_FLAGS) fuzz/$(basename $*).c \
	    $(addprefix $(@D)/src/,$(FUZZ_LINK_$(basename $*))) \
	    $(call fuzz_objs,$(LIB_SRCS)) -o $@

.PHONY: fuzz-harness-plants
fuzz-harness-plants: $(FUZZ_HPLANT_BINS)
	@set -e; for p in $(FUZZ_HPLANTS); do \
	    d=$(BUILD)/fuzz/hplant-$$p; h=$${p%%.*}; rm -rf $$d/work; mkdir -p $$d/work; \
	    if $$d/harness -runs=$(FUZZ_HPLANT_RUNS) -seed=1 -dict=fuzz/dict/$$h.dict \
	        -artifact_prefix=$$d/ $$d/work fuzz/corpus/$$h >$$d/log 2>&1; then \
	        echo "fuzz-plants: $$p was NOT caught"; exit 1; \
	    else r=$$(grep -o '^#[0-9]*' $$d/log | tail -1); w="replaying its corpus"; \
	        if [ -n "$$r" ]; then w="after run $$r"; fi; \
	        echo "fuzz-plants: $$p caught $$w:" \
	        "$$(grep -m1 -E 'ERROR|deadly signal' $$d/log)"; fi; \
	done
fuzz-plants: fuzz-harness-plants
