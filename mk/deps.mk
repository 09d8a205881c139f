# mk/deps.mk: header dependencies that cannot lie (issue 22 item 7).
#
#   make deps-check   after a build of every program, test and image:
#                     each object and each one-command program
#                     (DEPS_CHECK_BINS) has its compiler-written .d,
#                     nothing is out of date, and `make -n -W HEADER` over
#                     every object under $(BUILD)/obj, $(BUILD)/powerboxd,
#                     $(BUILD)/fuzz-obj and $(BUILD)/afl-obj and every
#                     such program compiles exactly the objects and
#                     programs whose .d names HEADER, for every tracked
#                     header and .def file (tests/deps/deps_check.py;
#                     docs/TESTING.md, "Header dependencies"). In
#                     CHECK_EXTRA.

# Every program whose objects live under those folders is built first
# (named by path: this file is included before the fragments that set
# their variables), so that no other goal of a parallel `make check`
# writes an object there while the check reads them.
DEPS_CHECK_BUILT := all peers powerboxd-images $(BUILD)/bin/pbx-peers-test \
                    $(BUILD)/bin/pbx-port-test $(BUILD)/bin/pbx-e2e-test \
                    $(BUILD)/bin/pbx-rt-test $(BUILD)/bin/pbx-bench

# The programs compiled in one command (sources straight to the binary,
# their .d beside them: DEPS_ONE and deps_many in the Makefile), every one
# make check builds. Named by the fragments' variables, expanded only where
# the Makefile adds them to deps-check's prerequisites, after every
# fragment is read.
DEPS_CHECK_BINS = $(SIM_BIN) $(BUILD)/sim/pbx-sim-O0 \
    $(BUILD)/sim/pbx-sim-asan $(SIM_PLANT_BINS) $(PEERS_STAGE_BIN) \
    $(PEERS_DEMO_BIN) $(PEERS_FDCAT_BIN) $(PEERS_HIJACK_BIN) \
    $(PEERS_WALLS_BIN) $(PEERS_SPOOF_BIN) $(PEERS_PROBE_BIN) \
    $(BENCH_FD_BIN) $(BENCH_OPEN_BIN) $(BENCH_SKEL_BIN) $(FUZZ_BINS) \
    $(AFL_BINS)

.PHONY: deps-check
deps-check: $(DEPS_CHECK_BUILT)
	python3 tests/deps/deps_check.py $(BUILD) --bins "$(DEPS_CHECK_BINS)" \
	    BUILD=$(BUILD) CC=$(CC)

CHECK_EXTRA += deps-check
