# mk/bench.mk: pbx-bench, the benchmarks (docs/BENCH.md).
#
#   make bench          every benchmark in one run, printed as one table
#                       beside its physical floor (bench/bench.sh):
#                       instructions per lifecycle under callgrind at
#                       three PBX1 capacities, the codec+SHA-256 floor,
#                       SHA-256 against sha256sum, SEQPACKET round trips,
#                       and powerboxd with the reference peers end to end
#                       (bench/bench_host.py) beside 12 of those trips;
#                       the lifecycle pinned to one CPU beside the
#                       zero-work skeletons of its recorded and needed
#                       message patterns (bench/bench_life.py,
#                       pbx-bench-skel), its syscalls, launchd's CPU,
#                       throughput, polkit, RSS, 900 live grants and the
#                       live powerboxd under callgrind
#   make bench-smoke    a few iterations of every benchmark, natively, and
#                       3 powerboxd lifecycles: they complete, conserve
#                       capabilities and print sane numbers (in
#                       CHECK_EXTRA; no timing asserted)
#   make bench-lint     clang-tidy, cppcheck and doccheck on bench/
#
# pbx-bench is a hosted program linked against libpbx.a, built with the
# tree's OPT (-O2 -g by default: callgrind needs the symbols).

BENCH_SRCS := $(wildcard bench/*.c)
BENCH_HDRS := $(wildcard bench/*.h)
BENCH_OBJS := $(BENCH_SRCS:%.c=$(BUILD)/obj/%.o)
BENCH_BIN  := $(BUILD)/bin/pbx-bench
BENCH_WORK := $(BUILD)/bench-work

$(BUILD)/obj/bench/%.o: CPPFLAGS += $(HOSTED)

$(BENCH_BIN): $(BENCH_OBJS) $(LIBPBX)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $(BENCH_OBJS) $(LIBPBX) -o $@

# The end-to-end row runs the freestanding powerboxd, pbx (PBX1) and the
# reference peers. Their rules live in mk/powerboxd.mk, the Makefile and
# mk/peers.mk, read after this fragment, so name the files themselves.
BENCH_HOST_BINS := $(addprefix $(BUILD)/bin/,powerboxd pbx pbx-vfsd \
                   pbx-ttyd pbx-procd pbx-launchd pbx-client)

# pbx-bench-fd (docs/BENCH.md, "Revocable descriptor"): a read through
# vfsd's OPEN descriptor beside a plain read of the same file and a read
# through a zero-work FUSE server (bench/fd/bench_fuse_floor.c, libfuse3
# as vfsd's server). It links the app library (named by path:
# mk/peers.mk is read after this file).
BENCH_FD_BIN := $(BUILD)/bin/pbx-bench-fd
BENCH_FD_SRCS := bench/fd/bench_fd.c bench/fd/bench_fuse_floor.c
# The libraries come from mk/peers.mk's PEERS_LIBS_vfsd, expanded when the
# makefiles are read: a $(shell) inside a recipe runs through the quiet
# goals' SHELL (scripts/quiet.sh), which keeps its output, so the link line
# lost -lfuse3 under `make check` (not under a plain make).
BENCH_FUSE_FLAGS := $(patsubst -I%,-isystem %,$(shell pkg-config --cflags fuse3))
$(BENCH_FD_BIN): $(BENCH_FD_SRCS) $(BUILD)/lib/libpbx-app.a $(LIBPBX)
	@mkdir -p $(dir $@)
	$(call deps_many,$(CC) $(CPPFLAGS) $(HOSTED) $(BENCH_FUSE_FLAGS),$(BENCH_FD_SRCS))
	$(CC) $(CPPFLAGS) $(HOSTED) $(BENCH_FUSE_FLAGS) $(WARN) $(OPT) \
	    $(LDFLAGS) $(BENCH_FD_SRCS) $(BUILD)/lib/libpbx-app.a $(LIBPBX) \
	    $(PEERS_LIBS_vfsd) -o $@
BENCH_HOST_BINS += $(BENCH_FD_BIN)

# pbx-bench-open (docs/BENCH.md, "Brokered open"): open() timed plainly
# and under `pbx run --sandbox --scope` (brokered); static, as launchd's
# sandbox runs it by descriptor.
BENCH_OPEN_BIN := $(BUILD)/bin/pbx-bench-open
$(BENCH_OPEN_BIN): bench/broker/bench_open.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(HOSTED) $(WARN) $(OPT) -static $(DEPS_ONE) \
	    bench/broker/bench_open.c -o $@
BENCH_HOST_BINS += $(BENCH_OPEN_BIN) $(BUILD)/bin/pbx-broker

# pbx-bench-skel (docs/BENCH.md, "Lifecycle beside its skeleton"): the
# zero-work replay of the message pattern bench/bench_life.py records.
BENCH_SKEL_BIN := $(BUILD)/bin/pbx-bench-skel
$(BENCH_SKEL_BIN): bench/skel/skeleton.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(HOSTED) $(WARN) $(OPT) $(DEPS_ONE) bench/skel/skeleton.c -o $@
BENCH_HOST_BINS += $(BENCH_SKEL_BIN)

.PHONY: bench-table bench-smoke bench-lint bench-tidy bench-cppcheck \
        bench-doccheck
bench-table: $(BENCH_BIN) $(BENCH_HOST_BINS)
	sh bench/bench.sh $(BENCH_BIN) $(BENCH_WORK)

bench-smoke: $(BENCH_BIN) $(BENCH_HOST_BINS)
	sh bench/bench.sh --smoke $(BENCH_BIN) $(BENCH_WORK)

BENCH_TARGETS += bench-table
CHECK_EXTRA   += bench-smoke bench-lint

# The shared gates cover the benchmarks too (the Makefile expands the
# tidy prerequisites before fragments are read, so add them here).
BENCH_LINT_SRCS := $(BENCH_SRCS) $(BENCH_FD_SRCS) bench/broker/bench_open.c \
                   bench/skel/skeleton.c
BENCH_TIDY_OKS := $(BENCH_LINT_SRCS:%.c=build/tidy/%.ok)
TIDY_SRCS      += $(BENCH_LINT_SRCS)
$(BENCH_TIDY_OKS): $(BENCH_HDRS)
bench-tidy: $(BENCH_TIDY_OKS)
	@echo "bench-tidy: $(words $(BENCH_TIDY_OKS)) file(s) clean"
tidy: $(BENCH_TIDY_OKS)
build/tidy/bench/fd/bench_fuse_floor.ok: TIDY_FLAGS += $(BENCH_FUSE_FLAGS)
build/tidy/bench/fd/bench_fuse_floor.ok: bench/fd/bench_fuse_floor.h
build/tidy/bench/fd/bench_fd.ok: bench/fd/bench_fuse_floor.h

bench-cppcheck:
	cppcheck --std=c11 --enable=warning,style,performance,portability \
	    --error-exitcode=1 --inline-suppr --quiet -I. \
	    --suppress=missingIncludeSystem $(HOSTED) $(BENCH_LINT_SRCS)
cppcheck: bench-cppcheck

bench-doccheck:
	python3 scripts/doccheck.py $(BENCH_HDRS) bench/fd/bench_fuse_floor.h
doccheck: bench-doccheck

bench-lint: bench-tidy bench-cppcheck bench-doccheck
