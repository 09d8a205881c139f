# mk/deps.mk: header dependencies that cannot lie (issue 22 item 7).
#
#   make deps-check   after a build of every program, test and image:
#                     each object has its compiler-written .d, nothing is
#                     out of date, and `make -n -W HEADER` over every
#                     object under $(BUILD)/obj and $(BUILD)/powerboxd
#                     compiles exactly the objects whose .d names HEADER,
#                     for every tracked header and .def file
#                     (tests/deps/deps_check.py; docs/TESTING.md, "Header
#                     dependencies"). In CHECK_EXTRA.

# Every program whose objects live under those folders is built first
# (named by path: this file is included before the fragments that set
# their variables), so that no other goal of a parallel `make check`
# writes an object there while the check reads them.
DEPS_CHECK_BUILT := all peers powerboxd-images $(BUILD)/bin/pbx-peers-test \
                    $(BUILD)/bin/pbx-port-test $(BUILD)/bin/pbx-e2e-test \
                    $(BUILD)/bin/pbx-rt-test $(BUILD)/bin/pbx-bench

.PHONY: deps-check
deps-check: $(DEPS_CHECK_BUILT)
	python3 tests/deps/deps_check.py $(BUILD) BUILD=$(BUILD) CC=$(CC)

CHECK_EXTRA += deps-check
