# mk/install.mk: make install, make uninstall and their checks.
#
#   make install   PREFIX=/usr/local DESTDIR=  every binary (pbx, powerboxd,
#                  the reference peers, pbx-stage and pbx-demo), the man
#                  pages of docs/man/, the libraries and the public
#                  headers, in the
#                  conventional layout below $(DESTDIR)$(PREFIX)
#   make uninstall the same PREFIX and DESTDIR: removes exactly the files
#                  install wrote (both walk INSTALL_ITEMS), then the
#                  package's own directories when they are left empty
#   make man-check every man page through `mandoc -T lint -W warning`:
#                  any warning fails (in CHECK_EXTRA)
#   make install-check  tests/install/check.sh: installs into a temporary
#                  DESTDIR, compiles each installed header alone against
#                  the installed tree, checks every binary and man page,
#                  uninstalls and asserts no file is left (in CHECK_EXTRA)
#
# The pkg-config file peers/app/pbx-app.pc goes to lib/pkgconfig: the link
# line of the app library is `pkg-config --cflags --libs pbx-app`
# (-lpbx-app -lpbx; -lpbx-app alone does not link), and install-check
# links a program with exactly that line.
#
# Headers are installed below include/powerboxd/ at the same relative path
# they have in the tree (core/pbx_core.h, base/err/core.def), because that
# is how they include each other: `-I$(PREFIX)/include/powerboxd` is the
# one flag a program needs. Private headers are never installed; the list
# is scripts/layers.py's PRIVATE table, the one copy of it, which
# scripts/install_headers.py and the install test both read.

MAN_PAGES := $(sort $(wildcard docs/man/*.[1-8]))

# Public headers: the freestanding layers' and the app library's, less the
# private ones, plus every file they include (the error tables, the peer
# header the app library's embeds): scripts/install_headers.py.
INSTALL_HEADERS := $(shell python3 scripts/install_headers.py $(FREE_DIRS) \
    peers/app)

# Every binary a user runs: pbx, powerboxd, the peers' list of
# mk/peers.mk (pbx-stage, the first program of `pbx run --grant`, is in
# it) and pbx-demo (the sandboxed demo of `make run`). Each has its page
# in docs/man/ (tests/install/check.sh fails a binary without one).
# powerboxd-portcheck and the pbx-test-* programs are test drivers and
# stay.
INSTALL_BINS = $(PBX_BIN) $(PBXD_BIN) $(PEERS_BINS) $(PEERS_DEMO_BIN)
# libpbx.a and the app library programs link (mk/peers.mk's APP_LIB).
INSTALL_LIBS = $(LIBPBX) $(APP_LIB)

# The one manifest: SOURCE:MODE:DESTINATION (relative to PREFIX) for every
# file installed. install and uninstall both walk it, so uninstall removes
# exactly what install wrote.
INSTALL_ITEMS = \
    $(foreach b,$(INSTALL_BINS),$(b):0755:bin/$(notdir $(b))) \
    $(foreach l,$(INSTALL_LIBS),$(l):0644:lib/$(notdir $(l))) \
    peers/app/pbx-app.pc:0644:lib/pkgconfig/pbx-app.pc \
    $(foreach h,$(INSTALL_HEADERS),$(h):0644:include/powerboxd/$(h)) \
    $(foreach m,$(MAN_PAGES),$(m):0644:share/man/man$(subst .,,$(suffix $(m)))/$(notdir $(m))) \
    $(foreach d,README.md $(wildcard docs/*.md),$(d):0644:share/doc/powerboxd/$(notdir $(d))) \
    $(foreach d,$(wildcard docs/bench/*.md),$(d):0644:share/doc/powerboxd/bench/$(notdir $(d)))

# The directories only this package owns: uninstall removes them (deepest
# first) when they are empty. Shared ones (bin, lib, share/man/man1) stay.
INSTALL_OWN_DIRS = include/powerboxd/base/err $(sort $(foreach h, \
    $(INSTALL_HEADERS),include/powerboxd/$(patsubst %/,%,$(dir $(h))))) \
    include/powerboxd/peers include/powerboxd share/doc/powerboxd/bench \
    share/doc/powerboxd

INSTALL_ROOT = $(DESTDIR)$(PREFIX)

.PHONY: install uninstall man-check install-check install-manifest

install: all
	@set -e; for item in $(INSTALL_ITEMS); do \
	    src=$${item%%:*}; rest=$${item#*:}; mode=$${rest%%:*}; \
	    dst="$(INSTALL_ROOT)/$${rest#*:}"; \
	    install -d "$$(dirname "$$dst")"; \
	    install -m "$$mode" "$$src" "$$dst"; \
	    echo "install $$src -> $$dst"; \
	done

uninstall:
	@set -e; for item in $(INSTALL_ITEMS); do \
	    dst="$(INSTALL_ROOT)/$${item##*:}"; \
	    if [ -e "$$dst" ] || [ -L "$$dst" ]; then \
	        rm -f "$$dst"; echo "uninstall $$dst"; fi; \
	done; \
	for d in $$(printf '%s\n' $(INSTALL_OWN_DIRS) | sort -r); do \
	    if [ -d "$(INSTALL_ROOT)/$$d" ]; then \
	        rmdir "$(INSTALL_ROOT)/$$d" 2>/dev/null || true; fi; \
	done

# The manifest's destinations, one a line (the install test compares the
# tree it finds with this list).
install-manifest:
	@for item in $(INSTALL_ITEMS); do echo "$${item##*:}"; done

man-check:
	@test -n "$(MAN_PAGES)" || { echo "man-check: no page in docs/man"; exit 1; }
	mandoc -T lint -W warning $(MAN_PAGES)
	@echo "man-check: $(words $(MAN_PAGES)) page(s) clean"

install-check: all
	MAKE="$(MAKE)" sh tests/install/check.sh

CHECK_EXTRA += man-check install-check
