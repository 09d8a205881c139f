# mk/eva.mk: Frama-C EVA on the freestanding libraries (issue 22 item 4;
# docs/SECURITY.md and docs/TESTING.md, "Abstract interpretation").
#
#   make eva        every driver (eva/eva_<lib>.c): base, sha2, ipc,
#                   capabi, bootstrap and the core; prints each one's
#                   alarm count and fails above eva/baseline.txt or on
#                   an alarm eva/alarms.txt does not argue. Not in
#                   make check (the core was measured at about 4
#                   minutes of CPU and sha2 over 2; on 2026-12-06 the
#                   whole run took about 70 s of CPU: docs/SECURITY.md).
#   make eva-check  the same for EVA_CHECK_LIBS (base, ipc, capabi,
#                   bootstrap: about 30 s of CPU), in CHECK_EXTRA.
#
# frama-c comes from Debian's frama-c-base (.ci/run installs it).

EVA_CHECK_LIBS ?= base ipc capabi bootstrap

.PHONY: eva eva-check
eva:
	python3 eva/eva.py $(BUILD)/eva

eva-check:
	python3 eva/eva.py --tag eva-check $(BUILD)/eva-check $(EVA_CHECK_LIBS)

CHECK_EXTRA += eva-check
