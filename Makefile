# powerboxd: one GNU Makefile for the whole tree.
#
#   make            build libraries, tools and tests into build/
#   make check      every gate and every test (see README.md)
#   make install    PREFIX=/usr/local DESTDIR= conventional layout
#
# Sources are discovered by folder, so a new file in a library folder is
# built without editing this file. Variants (gcc, clang, sanitizers) are
# separate BUILD directories driven by recursive make from `check`.

CC       ?= cc
BUILD    ?= build
PREFIX   ?= /usr/local
DESTDIR  ?=
SAN      ?=
OPT      ?= -O2 -g

WARN := -std=c11 -Wall -Wextra -Wpedantic -Wconversion -Wshadow -Werror \
        -Wstrict-prototypes -Wmissing-prototypes -Wvla -Wformat=2
ifeq ($(SAN),1)
SANFLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all \
            -fno-omit-frame-pointer
endif
CPPFLAGS += -I.
# -MMD -MP: every object also depends on every header it includes, as the
# compiler saw them (the .d files beside the objects, included below), so
# editing a header rebuilds exactly the objects that include it.
CFLAGS   += $(WARN) $(OPT) $(SANFLAGS) -MMD -MP
# Programs compiled in one command (sources straight to a binary: the
# simulator, the static programs, the fuzz harness mains) get theirs from
# the compiler too, in a .d beside the program ($@.d, naming the program):
# DEPS_ONE on the compile of a program from one source file (its other
# inputs objects), deps_many(compiler and flags, sources) as the recipe
# line before the compile of one from many sources (the compiler, with
# the compile's own flags, names every header each source includes: -MMD
# keeps only the last source's list when one command compiles several).
DEPS_ONE  = -MMD -MP -MF $@.d
deps_many = $(1) -MM -MP -MT $@ $(2) >$@.d
LDFLAGS  += $(SANFLAGS)
# Hosted code (tests, tools, peers) may use POSIX; the libraries may not.
HOSTED   := -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE

# The freestanding layers: the four seed libraries, the base and the core.
FREE_DIRS := base sha2 ipc bootstrap capabi core
LIB_SRCS  := $(foreach d,$(FREE_DIRS),$(wildcard $(d)/*.c))
TEST_SRCS := tests/runner/pbx_test.c $(wildcard tests/*.c)
TOOL_SRCS := $(wildcard tools/pbx/*.c)
FUZZ_SRCS := $(wildcard fuzz/fuzz_*.c)

LIB_OBJS  := $(LIB_SRCS:%.c=$(BUILD)/obj/%.o)
TEST_OBJS := $(TEST_SRCS:%.c=$(BUILD)/obj/%.o)
TOOL_OBJS := $(TOOL_SRCS:%.c=$(BUILD)/obj/%.o)
LIBPBX    := $(BUILD)/lib/libpbx.a
TEST_BIN  := $(BUILD)/bin/pbx-test
PBX_BIN   := $(BUILD)/bin/pbx
FUZZ_BINS := $(FUZZ_SRCS:fuzz/%.c=$(BUILD)/fuzz/%)

HEADERS   := $(foreach d,$(FREE_DIRS),$(wildcard $(d)/*.h)) \
             $(wildcard base/err/*.def)

.PHONY: all test check install clean format format-check doccheck docs docs-check \
        layers freestanding tidy cppcheck analyzer fuzz fuzz-smoke fuzz-long fuzz-afl check-gcc check-clang \
        check-asan run bench
.DEFAULT_GOAL := all

all: $(LIBPBX) $(TEST_BIN) $(PBX_BIN)

# An object's headers are the ones its .d names (-MMD above), and so are
# a one-command program's (DEPS_ONE, deps_many): no compile or link rule
# lists headers by hand, so a header edit rebuilds exactly the objects
# and programs that include it (make deps-check, mk/deps.mk). Only the
# lint stamps (tidy, analyzer) depend on every header, on purpose.
$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

# Tests and tools are hosted programs.
$(BUILD)/obj/tests/%.o $(BUILD)/obj/tools/%.o: CPPFLAGS += $(HOSTED)

$(LIBPBX): $(LIB_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@
	$(AR) rcs $@ $^

$(TEST_BIN): $(TEST_OBJS) $(LIBPBX)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $(TEST_OBJS) $(LIBPBX) -o $@

# pbx also links the app library (PBX_TOOL_LIBS, set with its rules in
# mk/peers.mk, which adds it to the prerequisites too).
$(PBX_BIN): $(TOOL_OBJS) $(LIBPBX)
	@mkdir -p $(dir $@)
	$(if $(TOOL_OBJS),$(CC) $(LDFLAGS) $(TOOL_OBJS) $(PBX_TOOL_LIBS) $(LIBPBX) -o $@,@true)

test: $(TEST_BIN) $(PBX_BIN)
	PBX_BIN=$(PBX_BIN) $(TEST_BIN) $(TESTS)

# ---- gates -----------------------------------------------------------------

# Simple (:=): expanded here, never under check's quiet SHELL, whose
# recipe-time $(shell) output would be swallowed (an empty list).
C_FILES := $(shell git ls-files '*.c' '*.h' 2>/dev/null || find . -name '*.[ch]' -not -path './build/*')

format:
	clang-format -i $(C_FILES)

format-check:
	clang-format --dry-run --Werror $(C_FILES)

doccheck:
	python3 scripts/doccheck.py $(foreach d,$(FREE_DIRS),$(wildcard $(d)/*.h))
	python3 scripts/seedrows_check.py

freestanding:
	sh scripts/freestanding.sh $(FREE_DIRS)

# Include layering (which folder may use which, private headers, cycles);
# the folder table of docs/HACKING.md is generated from the same rules.
layers:
	@python3 scripts/layers.py check

# docs/ARCHITECTURE.md embeds the core's transition table; these keep it
# generated from the code rather than written by hand.
docs: $(PBX_BIN)
	sh scripts/docs_fsm.sh $(PBX_BIN) update
	python3 scripts/layers.py update-doc
	python3 scripts/equivalents.py update-doc

docs-check: $(PBX_BIN)
	sh scripts/docs_fsm.sh $(PBX_BIN) check
	python3 scripts/equivalents.py check

TIDY_SRCS = $(LIB_SRCS) $(TOOL_SRCS) $(TEST_SRCS) $(FUZZ_SRCS)
TIDY_OKS  = $(TIDY_SRCS:%.c=build/tidy/%.ok)
TIDY_FLAGS := -I. -std=c11 $(HOSTED)
# One stamp per file, so `make -j` runs clang-tidy in parallel and a clean
# file is not analysed again until it or a header changes.
build/tidy/%.ok: %.c $(HEADERS) .clang-tidy
	@mkdir -p $(dir $@)
	@clang-tidy --quiet $< -- $(TIDY_FLAGS) >$@.log 2>&1 || \
	    { grep -v 'warnings generated' $@.log; exit 1; }
	@touch $@

tidy: $(TIDY_OKS)
	@echo "tidy: $(words $(TIDY_OKS)) file(s) clean"

cppcheck:
	cppcheck --std=c11 --enable=warning,style,performance,portability \
	    --error-exitcode=1 --inline-suppr --quiet -I. \
	    --suppress=missingIncludeSystem \
	    $(LIB_SRCS) $(TOOL_SRCS) $(TEST_SRCS) $(FUZZ_SRCS)

# gcc's static analyzer over the freestanding layers, the operator tool
# and the test runner, at the release optimisation level; any finding fails.
ANALYZER_SRCS = $(LIB_SRCS) $(TOOL_SRCS) tests/runner/pbx_test.c
ANALYZER_OKS  = $(ANALYZER_SRCS:%.c=build/analyzer/%.ok)
build/analyzer/%.ok: %.c $(HEADERS)
	@mkdir -p $(dir $@)
	@gcc -fanalyzer -Werror -std=c11 -O2 -I. $(HOSTED) -Wall -Wextra \
	    -c $< -o $(@:.ok=.o)
	@touch $@

analyzer: $(ANALYZER_OKS)
	@echo "analyzer: $(words $(ANALYZER_OKS)) file(s) clean"

check-gcc:
	$(MAKE) BUILD=build/gcc CC=gcc all test
check-clang:
	$(MAKE) BUILD=build/clang CC=clang all test
check-asan:
	$(MAKE) BUILD=build/asan CC=clang SAN=1 all test

# ---- fuzzers: mk/fuzz.mk (harnesses, budgets, campaigns, AFL++) --------------

# ---- parts with their own rules ---------------------------------------------
# Each part outside the freestanding layers (the executable and its ports,
# the reference peers, the simulator, benchmarks) keeps its rules in
# mk/<part>.mk. A fragment may append targets to CHECK_EXTRA (run by
# `make check`), to ALL_EXTRA (built by `make all`) and to BENCH_TARGETS.

CHECK_EXTRA :=
ALL_EXTRA :=
BENCH_TARGETS :=
include $(sort $(wildcard mk/*.mk))

all: $(ALL_EXTRA)

# The header dependencies the compiler wrote (see -MMD above).
-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)

# deps-check also reads the one-command programs (DEPS_CHECK_BINS, named
# in mk/deps.mk from the fragments' variables, complete only here).
deps-check: $(DEPS_CHECK_BINS)

bench: $(BENCH_TARGETS)

# ---- everything ------------------------------------------------------------

# make check's quiet mode (the default; V=1 turns it off): no command is
# echoed and every recipe line runs under scripts/quiet.sh, which prints a
# line's output only when it fails (then in full, with the line itself) and
# otherwise only its summary lines. Only when check (QUIET_GOALS) is a
# goal, so other targets (make run's prompt above all) are untouched;
# tests/quiet/check.sh (quiet-check, in check) tests it.
.PHONY: quiet-check
quiet-check:
	sh tests/quiet/check.sh
CHECK_EXTRA += quiet-check

QUIET_GOALS ?= check
ifneq ($(V),1)
ifneq ($(filter $(QUIET_GOALS),$(MAKECMDGOALS)),)
.SILENT:
$(QUIET_GOALS): SHELL := $(CURDIR)/scripts/quiet.sh
endif
endif

check: format-check doccheck docs-check layers freestanding cppcheck tidy analyzer check-gcc check-clang \
       check-asan fuzz-smoke $(CHECK_EXTRA)
	@echo "make check: every gate passed"

# install, uninstall, man-check and install-check: mk/install.mk.

clean:
	rm -rf build
