# mk/peers.mk: the reference peers for the Linux host (docs/HOST.md).
#
# peers/lib/ is pure decision logic (no I/O); peers/common/ is the shared
# socket layer; each peers/<name>/ is one thin I/O main linked into
# $(BUILD)/bin/pbx-<name>. They are hosted programs (libc allowed) that
# link the project's libraries from libpbx.a.
#
#   make peers             build pbx-vfsd, pbx-ttyd, pbx-procd,
#                          pbx-launchd, pbx-client and libpbx-app.a
#                          (in ALL_EXTRA)
#   make peers-test        the peers' tests: pure tables, then every peer
#                          as a real process over real sockets
#   make peers-lint        clang-tidy, cppcheck and doccheck on every peer
#                          and peer-test source
#   make peers-check       both (in CHECK_EXTRA)

PEERS_NAMES      := vfsd ttyd procd launchd client broker
PEERS_LIB_SRCS   := $(wildcard peers/lib/*.c peers/common/*.c)
PEERS_LIB_OBJS   := $(PEERS_LIB_SRCS:%.c=$(BUILD)/obj/%.o)
PEERS_HEADERS    := $(wildcard peers/lib/*.h peers/common/*.h peers/app/*.h)
# The app library programs link (peers/app/, docs/HOST.md): its own
# objects and the peer library's, so a program needs only it and libpbx.a.
APP_SRCS         := $(wildcard peers/app/*.c)
APP_OBJS         := $(APP_SRCS:%.c=$(BUILD)/obj/%.o)
APP_LIB          := $(BUILD)/lib/libpbx-app.a
PEERS_BINS       := $(PEERS_NAMES:%=$(BUILD)/bin/pbx-%)
PEERS_TEST_SRCS  := tests/runner/pbx_test.c $(wildcard tests/peers/*.c)
# launchd's timer heap is pure: tested on its own (test_peers_launchd_timer.c).
PEERS_TEST_SRCS  += peers/launchd/launchd_timer.c
# Its indexes are pure too (test_peers_launchd_index.c).
PEERS_TEST_SRCS  += peers/launchd/launchd_index.c
# procd's hung list is checked against walks (test_peers_proc_index.c).
PEERS_TEST_SRCS  += peers/procd/procd_hung.c
PEERS_TEST_OBJS  := $(PEERS_TEST_SRCS:%.c=$(BUILD)/obj/peers-test/%.o)
PEERS_TEST_BIN   := $(BUILD)/bin/pbx-peers-test
PEERS_GATE_SRCS   = $(sort $(wildcard peers/*/*.c tests/peers/*.c \
                                      tests/peers/sandbox/*.c) \
                      tests/e2e/fdcat.c tests/e2e/walls.c \
                      tests/e2e/hijack.c tests/e2e/spoof.c)
# Statically linked programs: launchd's --sandbox runs only those
# (docs/HOST.md, "Sandboxed programs"). Built without the sanitizers,
# whose runtimes do not link statically. Each is compiled in one command,
# its headers named by the compiler in the .d beside it (deps_many).
PEERS_STATIC_FLAGS = $(CPPFLAGS) $(HOSTED) $(WARN) $(OPT) -static
PEERS_PROBE_BIN    := $(BUILD)/bin/pbx-sandbox-probe
# pbx-demo (make run) is compiled from its sources in one static link, so
# a sanitizer variant's objects never reach it.
PEERS_DEMO_BIN     := $(BUILD)/bin/pbx-demo
PEERS_DEMO_SRCS     = peers/demo/demo.c $(APP_SRCS) $(PEERS_LIB_SRCS) \
                      $(filter-out core/% bootstrap/%,$(LIB_SRCS))

$(BUILD)/obj/peers/%.o: CPPFLAGS += $(HOSTED)

# peers_bin(name): one peer executable from its own folder. The app
# library comes after the peer library's objects, so only its own members
# (pbx-client's call layer) are taken from it.
define peers_bin
PEERS_OBJS_$(1) := $$(patsubst %.c,$$(BUILD)/obj/%.o,$$(wildcard peers/$(1)/*.c))
$$(BUILD)/bin/pbx-$(1): $$(PEERS_OBJS_$(1)) $$(PEERS_LIB_OBJS) $$(APP_LIB) $$(LIBPBX)
	@mkdir -p $$(dir $$@)
	$$(CC) $$(LDFLAGS) $$(PEERS_OBJS_$(1)) $$(PEERS_LIB_OBJS) $$(APP_LIB) $$(LIBPBX) $$(PEERS_LIBS_$(1)) -o $$@
endef
# vfsd's FUSE server (revocable descriptors, docs/HOST.md) links Debian's
# libfuse3 (.ci/run installs fuse3, libfuse3-dev and pkg-config); its
# headers are system headers, outside the warning flags.
# Both are simple (:=) variables, expanded here: a recipe-time $(shell)
# would run under make check's quiet SHELL, which swallows its output.
PEERS_LIBS_vfsd  := $(shell pkg-config --libs fuse3)
PEERS_FUSE_FLAGS := $(patsubst -I%,-isystem %,$(shell pkg-config --cflags fuse3))
$(BUILD)/obj/peers/vfsd/vfsd_fuse_server.o: CPPFLAGS += $(PEERS_FUSE_FLAGS)
build/tidy/peers/vfsd/vfsd_fuse_server.ok: TIDY_FLAGS += $(PEERS_FUSE_FLAGS)
$(foreach p,$(PEERS_NAMES),$(eval $(call peers_bin,$(p))))

# pbx-stage (install mode, `pbx run --grant`) is a job's first program,
# sandboxed jobs' too: static, from its sources like pbx-demo.
PEERS_STAGE_BIN  := $(BUILD)/bin/pbx-stage
PEERS_STAGE_SRCS  = peers/stage/stage.c $(APP_SRCS) $(PEERS_LIB_SRCS) \
                    $(filter-out core/% bootstrap/%,$(LIB_SRCS))
PEERS_BINS       += $(PEERS_STAGE_BIN)
# The e2e scenario pbx-run-grant's program: reads descriptor N.
PEERS_FDCAT_BIN  := $(BUILD)/bin/pbx-test-fdcat
PEERS_FDCAT_SRCS  = tests/e2e/fdcat.c $(APP_SRCS) $(PEERS_LIB_SRCS) \
                    $(filter-out core/% bootstrap/%,$(LIB_SRCS))

# The e2e scenario route-hijack's foreign program (also run sandboxed).
PEERS_HIJACK_BIN  := $(BUILD)/bin/pbx-test-hijack
PEERS_HIJACK_SRCS  = tests/e2e/hijack.c $(PEERS_LIB_SRCS) \
                     $(filter-out core/% bootstrap/%,$(LIB_SRCS))

$(PEERS_HIJACK_BIN): $(PEERS_HIJACK_SRCS)
	@mkdir -p $(dir $@)
	$(call deps_many,$(CC) $(PEERS_STATIC_FLAGS),$(PEERS_HIJACK_SRCS))
	$(CC) $(PEERS_STATIC_FLAGS) $(PEERS_HIJACK_SRCS) -o $@

$(PEERS_STAGE_BIN): $(PEERS_STAGE_SRCS)
	@mkdir -p $(dir $@)
	$(call deps_many,$(CC) $(PEERS_STATIC_FLAGS),$(PEERS_STAGE_SRCS))
	$(CC) $(PEERS_STATIC_FLAGS) $(PEERS_STAGE_SRCS) -o $@

$(PEERS_FDCAT_BIN): $(PEERS_FDCAT_SRCS)
	@mkdir -p $(dir $@)
	$(call deps_many,$(CC) $(PEERS_STATIC_FLAGS),$(PEERS_FDCAT_SRCS))
	$(CC) $(PEERS_STATIC_FLAGS) $(PEERS_FDCAT_SRCS) -o $@

# The e2e scenario sandbox-walls's program: tries every wall, then asks
# honestly (docs/HOST.md, "The walls"); static, from its sources.
PEERS_WALLS_BIN  := $(BUILD)/bin/pbx-test-walls
PEERS_WALLS_SRCS  = tests/e2e/walls.c $(APP_SRCS) $(PEERS_LIB_SRCS) \
                    $(filter-out core/% bootstrap/%,$(LIB_SRCS))

$(PEERS_WALLS_BIN): $(PEERS_WALLS_SRCS)
	@mkdir -p $(dir $@)
	$(call deps_many,$(CC) $(PEERS_STATIC_FLAGS),$(PEERS_WALLS_SRCS))
	$(CC) $(PEERS_STATIC_FLAGS) $(PEERS_WALLS_SRCS) -o $@

# The e2e scenario any-spoof's program: a look-alike prompt printed
# while a real one shows (docs/HOST.md, "The job's terminal"); static.
PEERS_SPOOF_BIN  := $(BUILD)/bin/pbx-test-spoof
PEERS_SPOOF_SRCS  = tests/e2e/spoof.c $(APP_SRCS) $(PEERS_LIB_SRCS) \
                    $(filter-out core/% bootstrap/%,$(LIB_SRCS))

$(PEERS_SPOOF_BIN): $(PEERS_SPOOF_SRCS)
	@mkdir -p $(dir $@)
	$(call deps_many,$(CC) $(PEERS_STATIC_FLAGS),$(PEERS_SPOOF_SRCS))
	$(CC) $(PEERS_STATIC_FLAGS) $(PEERS_SPOOF_SRCS) -o $@

$(PEERS_PROBE_BIN): tests/peers/sandbox/probe.c
	@mkdir -p $(dir $@)
	$(CC) $(PEERS_STATIC_FLAGS) $(DEPS_ONE) $< -o $@

$(PEERS_DEMO_BIN): $(PEERS_DEMO_SRCS)
	@mkdir -p $(dir $@)
	$(call deps_many,$(CC) $(PEERS_STATIC_FLAGS),$(PEERS_DEMO_SRCS))
	$(CC) $(PEERS_STATIC_FLAGS) $(PEERS_DEMO_SRCS) -o $@

$(BUILD)/obj/peers-test/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(HOSTED) $(CFLAGS) -c $< -o $@

# The broker's notification handler is tested in the kernel as well.
PEERS_TEST_EXTRA := $(BUILD)/obj/peers/broker/broker_notify.o \
                    $(BUILD)/obj/peers/broker/broker_mount.o \
                    $(BUILD)/obj/peers/broker/broker_say.o \
                    $(BUILD)/obj/peers/broker/broker_limit.o
$(PEERS_TEST_BIN): $(PEERS_TEST_OBJS) $(PEERS_TEST_EXTRA) $(APP_OBJS) \
                   $(PEERS_LIB_OBJS) $(LIBPBX)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $(PEERS_TEST_OBJS) $(PEERS_TEST_EXTRA) $(APP_OBJS) \
	      $(PEERS_LIB_OBJS) $(LIBPBX) -o $@

$(APP_LIB): $(APP_OBJS) $(PEERS_LIB_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@
	$(AR) rcs $@ $^

# The pbx command (Makefile) links the app library; its sources include
# the app and peer headers.
PBX_TOOL_LIBS := $(APP_LIB)
$(PBX_BIN): $(APP_LIB)

.PHONY: peers peers-test peers-lint peers-check peers-tidy peers-cppcheck \
        peers-doccheck
peers: $(PEERS_BINS) $(APP_LIB) $(PEERS_DEMO_BIN) $(PEERS_FDCAT_BIN) \
       $(PEERS_WALLS_BIN) $(PEERS_HIJACK_BIN) $(PEERS_SPOOF_BIN)

peers-test: $(PEERS_TEST_BIN) $(PEERS_BINS) $(PEERS_PROBE_BIN)
	PBX_PEERS_BIN=$(BUILD)/bin PBX_LAUNCHD_CHECK_INDEX=1 PBX_PROCD_CHECK_INDEX=1 $(PEERS_TEST_BIN) $(TESTS)

PEERS_TIDY_OKS = $(PEERS_GATE_SRCS:%.c=build/tidy/%.ok)
$(PEERS_TIDY_OKS): $(PEERS_HEADERS)
peers-tidy: $(PEERS_TIDY_OKS)
	@echo "peers-tidy: $(words $(PEERS_TIDY_OKS)) file(s) clean"

peers-cppcheck:
	cppcheck --std=c11 --enable=warning,style,performance,portability \
	    --error-exitcode=1 --inline-suppr --quiet -I. \
	    --suppress=missingIncludeSystem $(HOSTED) $(PEERS_GATE_SRCS)

peers-doccheck:
	python3 scripts/doccheck.py $(PEERS_HEADERS)

peers-lint: peers-tidy peers-cppcheck peers-doccheck

peers-check: peers-test peers-lint

CHECK_EXTRA += peers-check
ALL_EXTRA   += peers
