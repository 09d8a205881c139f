# mk/powerboxd.mk: the freestanding powerboxd images and their syscall ports.
#
# Every image is built per port (linux-x86_64, erix-x86_64) and per mode
# (debug, release) into $(BUILD)/powerboxd/<port>-<mode>/, with no C library:
# -ffreestanding -nostdlib -static, non-PIE at the fixed base set by
# powerboxd/linker.ld, entered at the port's own _start. Two images per
# variant: `powerboxd` (the runtime in powerboxd/runtime, the core and the
# four libraries) and `powerboxd-portcheck` (the port smoke driver, base
# only, kept for the port tests). The Linux release images are also copied
# to $(BUILD)/bin/powerboxd and $(BUILD)/bin/powerboxd-portcheck.
#
#   make powerboxd-images      build all eight images
#   make powerboxd-port-check  ELF layout, undefined symbols, stack depth,
#                              sizes, the hosted port tests and the
#                              end-to-end tests of the Linux binary
#                              (in CHECK_EXTRA)
#   make run                   powerboxd with the reference peers, one
#                              client request to a decision (docs/HOST.md)
#   make chaos                 run.py's chaos scenario with 1,000 kills
#   make powerboxd-peers-e2e   the same with every tests/e2e/run.py
#                              scenario (`run.py ... all`: its SCENARIOS
#                              table, listed in its docstring), every
#                              request from a job launched by launchd
#                              (in powerboxd-port-check; tmux is
#                              required)
#
# PBXD_CC must be gcc: the stack check reads gcc's -fcallgraph-info output.

PBXD_CC          ?= gcc
# Worst-case stack depth allowed for any image, in bytes (docs/PORTS.md).
PBXD_STACK_LIMIT ?= 8192
PBXD_PORTS       := linux-x86_64 erix-x86_64
PBXD_MODES       := debug release

PBXD_FREE_FLAGS := $(WARN) -I. -ffreestanding -nostdlib -fno-builtin \
    -fno-stack-protector -fno-pie -fno-pic -fno-asynchronous-unwind-tables \
    -fno-unwind-tables -fno-tree-loop-distribute-patterns \
    -ffunction-sections -fdata-sections -fcallgraph-info=su -MMD -MP
PBXD_OPT_debug   := -O0 -g
PBXD_OPT_release := -O2
PBXD_LDFLAGS := -nostdlib -static -no-pie -Wl,-T,powerboxd/linker.ld \
    -Wl,--orphan-handling=error -Wl,--build-id=none -Wl,--gc-sections \
    -Wl,-z,noexecstack -Wl,--fatal-warnings

# The freestanding layers each image links: the runtime image takes every
# library and the core (the same sources as libpbx.a), the smoke driver
# only base.
PBXD_LIB_SRCS   := $(LIB_SRCS)
PBXD_RT_SRCS    := $(wildcard powerboxd/runtime/*.c)
PBXD_PC_SRCS    := $(wildcard powerboxd/portcheck/*.c) $(wildcard base/*.c)
PBXD_HEADERS    := $(wildcard powerboxd/port/*.h powerboxd/port/*/*.h \
                   powerboxd/runtime/*.h) $(HEADERS)
PBXD_IMAGES     :=
PBXD_CHECKS     :=

# pbxd_variant(port,mode): objects, both images and checks of one variant.
define pbxd_variant
PBXD_DIR_$(1)_$(2)  := $$(BUILD)/powerboxd/$(1)-$(2)
PBXD_PORT_$(1)_$(2) := $$(wildcard powerboxd/port/$(1)/*.c)
PBXD_SRCS_$(1)_$(2) := $$(PBXD_PORT_$(1)_$(2)) $$(PBXD_RT_SRCS) \
                       $$(PBXD_LIB_SRCS)
PBXD_PCS_$(1)_$(2)  := $$(PBXD_PORT_$(1)_$(2)) $$(PBXD_PC_SRCS)
PBXD_OBJS_$(1)_$(2) := $$(PBXD_SRCS_$(1)_$(2):%.c=$$(PBXD_DIR_$(1)_$(2))/obj/%.o)
PBXD_PCO_$(1)_$(2)  := $$(PBXD_PCS_$(1)_$(2):%.c=$$(PBXD_DIR_$(1)_$(2))/obj/%.o)
PBXD_IMG_$(1)_$(2)  := $$(PBXD_DIR_$(1)_$(2))/powerboxd
PBXD_PCI_$(1)_$(2)  := $$(PBXD_DIR_$(1)_$(2))/powerboxd-portcheck

$$(PBXD_DIR_$(1)_$(2))/obj/%.o: %.c
	@mkdir -p $$(dir $$@)
	$$(PBXD_CC) $$(PBXD_FREE_FLAGS) $$(PBXD_OPT_$(2)) -c $$< -o $$@

$$(PBXD_IMG_$(1)_$(2)): $$(PBXD_OBJS_$(1)_$(2)) powerboxd/linker.ld
	$$(PBXD_CC) $$(PBXD_LDFLAGS) $$(PBXD_OBJS_$(1)_$(2)) -o $$@

$$(PBXD_PCI_$(1)_$(2)): $$(PBXD_PCO_$(1)_$(2)) powerboxd/linker.ld
	$$(PBXD_CC) $$(PBXD_LDFLAGS) $$(PBXD_PCO_$(1)_$(2)) -o $$@

.PHONY: powerboxd-check-$(1)-$(2)
powerboxd-check-$(1)-$(2): $$(PBXD_IMG_$(1)_$(2)) $$(PBXD_PCI_$(1)_$(2))
	@python3 tests/port/elf_check.py $(1)-$(2) $$(PBXD_IMG_$(1)_$(2))
	@python3 tests/port/stack_depth.py $$(PBXD_STACK_LIMIT) $(1)-$(2) \
	    $$(PBXD_OBJS_$(1)_$(2):%.o=%.ci)
	@python3 tests/port/elf_check.py $(1)-$(2)-portcheck $$(PBXD_PCI_$(1)_$(2))
	@python3 tests/port/stack_depth.py $$(PBXD_STACK_LIMIT) \
	    $(1)-$(2)-portcheck $$(PBXD_PCO_$(1)_$(2):%.o=%.ci)

PBXD_IMAGES += $$(PBXD_IMG_$(1)_$(2)) $$(PBXD_PCI_$(1)_$(2))
PBXD_CHECKS += powerboxd-check-$(1)-$(2)
endef

$(foreach p,$(PBXD_PORTS),$(foreach m,$(PBXD_MODES),\
    $(eval $(call pbxd_variant,$(p),$(m)))))

PBXD_BIN := $(BUILD)/bin/powerboxd
$(PBXD_BIN): $(PBXD_IMG_linux-x86_64_release)
	@mkdir -p $(dir $@)
	cp $< $@

PBXD_PORTCHECK := $(BUILD)/bin/powerboxd-portcheck
$(PBXD_PORTCHECK): $(PBXD_PCI_linux-x86_64_release)
	@mkdir -p $(dir $@)
	cp $< $@

# The hosted port tests: the project's runner plus tests/port/*.c, run
# against the very Linux images built above. They use only base's inline
# helpers, so they do not wait for libpbx.a.
PBXD_TEST_SRCS := tests/runner/pbx_test.c tests/sock/pbx_test_sock.c \
    $(wildcard tests/port/*.c) powerboxd/port/linux-x86_64/lx_vdso.c
PBXD_TEST_OBJS := $(PBXD_TEST_SRCS:%.c=$(BUILD)/obj/port-test/%.o)
PBXD_TEST_BIN  := $(BUILD)/bin/pbx-port-test

$(BUILD)/obj/port-test/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(HOSTED) $(CFLAGS) -c $< -o $@

$(PBXD_TEST_BIN): $(PBXD_TEST_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $(PBXD_TEST_OBJS) -o $@

# The end-to-end tests of the Linux binary: the runner plus tests/e2e/*.c
# and libpbx.a (the wire codec and PBX1 encoder the harness speaks),
# run against the very Linux debug and release powerboxd images (and the
# pbx binary, whose `geometry check` must agree with powerboxd).
PBXD_E2E_SRCS := tests/runner/pbx_test.c tests/sock/pbx_test_sock.c \
    tests/e2e/e2e_harness.c $(wildcard tests/e2e/test_e2e*.c)
PBXD_E2E_OBJS := $(PBXD_E2E_SRCS:%.c=$(BUILD)/obj/e2e-test/%.o)
PBXD_E2E_BIN  := $(BUILD)/bin/pbx-e2e-test

$(BUILD)/obj/e2e-test/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(HOSTED) $(CFLAGS) -c $< -o $@

$(PBXD_E2E_BIN): $(PBXD_E2E_OBJS) $(LIBPBX)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $(PBXD_E2E_OBJS) $(LIBPBX) -o $@

.PHONY: powerboxd-e2e-test
powerboxd-e2e-test: $(PBXD_E2E_BIN) $(PBXD_IMAGES) $(PBX_BIN)
	PBX_BIN=$(PBX_BIN) PBX_POWERBOXD=$(PBXD_IMG_linux-x86_64_debug) \
	    $(PBXD_E2E_BIN) $(TESTS)
	PBX_BIN=$(PBX_BIN) PBX_POWERBOXD=$(PBXD_IMG_linux-x86_64_release) \
	    $(PBXD_E2E_BIN) $(TESTS)

.PHONY: powerboxd-images powerboxd-port-test powerboxd-port-check \
        powerboxd-cppcheck powerboxd-doccheck
powerboxd-images: $(PBXD_IMAGES) $(PBXD_PORTCHECK) $(PBXD_BIN)

powerboxd-port-test: $(PBXD_TEST_BIN) $(PBXD_IMAGES)
	PBX_PORTCHECK=$(PBXD_PCI_linux-x86_64_debug) $(PBXD_TEST_BIN)
	PBX_PORTCHECK=$(PBXD_PCI_linux-x86_64_release) $(PBXD_TEST_BIN)

powerboxd-port-check: $(PBXD_CHECKS) powerboxd-port-test $(PBXD_PORTCHECK) \
    $(PBXD_BIN) powerboxd-e2e-test powerboxd-peers-e2e

CHECK_EXTRA += powerboxd-port-check
ALL_EXTRA   += powerboxd-images

# The shared gates also cover this part: clang-tidy on every port, driver
# and test source, cppcheck on the same files, doccheck on the headers.
PBXD_GATE_SRCS := $(wildcard powerboxd/port/*/*.c powerboxd/portcheck/*.c \
                  powerboxd/runtime/*.c tests/port/*.c tests/e2e/*.c \
                  tests/sock/*.c)
PBXD_TIDY_OKS  := $(PBXD_GATE_SRCS:%.c=build/tidy/%.ok)
TIDY_SRCS      += $(PBXD_GATE_SRCS)
$(PBXD_TIDY_OKS): $(PBXD_HEADERS)
tidy: $(PBXD_TIDY_OKS)

powerboxd-cppcheck:
	cppcheck --std=c11 --enable=warning,style,performance,portability \
	    --error-exitcode=1 --inline-suppr --quiet -I. \
	    --suppress=missingIncludeSystem $(PBXD_GATE_SRCS)
cppcheck: powerboxd-cppcheck

powerboxd-doccheck:
	python3 scripts/doccheck.py $(wildcard powerboxd/port/*.h \
	    powerboxd/port/*/*.h powerboxd/runtime/*.h)
doccheck: powerboxd-doccheck

# make run: the demo (README.md, "make run"): the stack under `pbx up`, a
# sandboxed pbx-demo that is refused its file by the kernel, asks, is
# prompted for on a terminal (routine policy without one) and reads
# exactly that file once (peers/demo/run.sh).
.PHONY: run
run: $(PBXD_BIN) $(PBX_BIN) peers
	sh peers/demo/run.sh $(BUILD)/bin $(BUILD)/run

.PHONY: powerboxd-peers-e2e
powerboxd-peers-e2e: $(PBXD_BIN) $(PBX_BIN) peers
	python3 tests/e2e/run.py $(BUILD)/bin $(BUILD)/run-e2e all

# make chaos: run.py's chaos scenario with 1,000 kills instead of make
# check's 20 (PBX_CHAOS_SEED=N repeats a run; not in make check).
.PHONY: chaos
chaos: $(PBXD_BIN) $(PBX_BIN) peers
	PBX_CHAOS_KILLS=$${PBX_CHAOS_KILLS:-1000} python3 tests/e2e/run.py \
	    $(BUILD)/bin $(BUILD)/run-chaos chaos

# A scenario that fails on purpose (run.py fail-on-purpose: by fail(), by
# an exception after launchd died, by run.py's SIGTERM) leaves no process
# of its stack running (tests/e2e/orphans.py; in CHECK_EXTRA).
.PHONY: powerboxd-orphans
powerboxd-orphans: $(PBXD_BIN) $(PBX_BIN) peers
	python3 tests/e2e/orphans.py $(BUILD)/bin $(BUILD)/run-orphans

CHECK_EXTRA += powerboxd-orphans
