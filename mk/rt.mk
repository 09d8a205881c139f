# mk/rt.mk: hosted tests of powerboxd's runtime against a fake port.
#
# The runtime's own sources (powerboxd/runtime/rt_ops.c and rt_loop.c,
# unchanged; not rt_start.c, whose startup needs PBX1 and an inventory)
# are compiled as hosted code together with tests/rt/rt_fake_port.c, a
# scripted in-memory pbx_port.h, the project's runner, tests/rt/test_*.c
# and libpbx.a (the real core). Nothing here is linked into a shipped
# image: the fake and the tests exist only in build/bin/pbx-rt-test.
#
#   make rt-test     build and run it (in CHECK_EXTRA)

RT_TEST_SRCS := tests/runner/pbx_test.c $(wildcard tests/rt/*.c) \
    powerboxd/runtime/rt_ops.c powerboxd/runtime/rt_loop.c \
    powerboxd/runtime/rt_log.c powerboxd/runtime/rt_attach.c \
    powerboxd/runtime/rt_usage.c powerboxd/runtime/rt_tslot.c
RT_TEST_OBJS := $(RT_TEST_SRCS:%.c=$(BUILD)/obj/rt-test/%.o)
RT_TEST_BIN  := $(BUILD)/bin/pbx-rt-test

$(BUILD)/obj/rt-test/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(HOSTED) $(CFLAGS) -c $< -o $@

$(RT_TEST_BIN): $(RT_TEST_OBJS) $(LIBPBX)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $(RT_TEST_OBJS) $(LIBPBX) -o $@

.PHONY: rt-test rt-cppcheck
rt-test: $(RT_TEST_BIN)
	$(RT_TEST_BIN) $(TESTS)

CHECK_EXTRA += rt-test
ALL_EXTRA   += $(RT_TEST_BIN)

# The shared gates cover the test and the fake too.
RT_GATE_SRCS := $(wildcard tests/rt/*.c)
TIDY_SRCS    += $(RT_GATE_SRCS)
tidy: $(RT_GATE_SRCS:%.c=build/tidy/%.ok)
$(RT_GATE_SRCS:%.c=build/tidy/%.ok): $(wildcard tests/rt/*.h) $(PBXD_HEADERS)

rt-cppcheck:
	cppcheck --std=c11 --enable=warning,style,performance,portability \
	    --error-exitcode=1 --inline-suppr --quiet -I. \
	    --suppress=missingIncludeSystem $(RT_GATE_SRCS)
cppcheck: rt-cppcheck
