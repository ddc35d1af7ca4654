# SPDX-License-Identifier: MIT
# The manual: section 3 for every call and macro, rarewrite(7) for the model.
MANDIR ?= $(PREFIX)/share/man
MAN_PAGES := $(wildcard man/man1/*.1 man/man3/*.3 man/man7/*.7)

# Each further name in a page's NAME section becomes a symlink to the page.
install-man:
	install -d $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man3 $(DESTDIR)$(MANDIR)/man7
	install -m 644 $(filter %.1,$(MAN_PAGES)) $(DESTDIR)$(MANDIR)/man1/
	install -m 644 $(filter %.3,$(MAN_PAGES)) $(DESTDIR)$(MANDIR)/man3/
	install -m 644 $(filter %.7,$(MAN_PAGES)) $(DESTDIR)$(MANDIR)/man7/
	sh man/names.sh $(MAN_PAGES) | while read -r name sec page; do \
		[ "$$name.$$sec" = "$$page" ] || \
			ln -sf "$$page" "$(DESTDIR)$(MANDIR)/man$$sec/$$name.$$sec" || exit 1; \
	done

uninstall-man:
	sh man/names.sh $(MAN_PAGES) | while read -r name sec page; do \
		rm -f "$(DESTDIR)$(MANDIR)/man$$sec/$$name.$$sec" || exit 1; \
	done

# Every exported symbol and public macro has a page; lint is clean; every C
# example of the manual and README.md compiles, and in check mode (through
# rarewrite-cc, with gcc and clang) names exactly its plain stores.
# Then `make install-man` into a stage, and every installed name, links
# included, must render with man -l and with man(1) looking it up.
check-docs: $(B)/librarewrite.so
	sh man/check-docs.sh $(B)
	sh man/check-examples.sh $(B) $(CC) $(shell command -v clang)
	rm -rf $(B)/docs/stage
	$(MAKE) -s install-man DESTDIR=$(abspath $(B)/docs/stage) PREFIX=/usr
	@n=0; for f in $(B)/docs/stage/usr/share/man/man*/*; do \
		MANWIDTH=80 man --warnings -E UTF-8 -l "$$f" 2>$(B)/docs/w >$(B)/docs/r || exit 1; \
		test ! -s $(B)/docs/w && test -s $(B)/docs/r || { echo "check-docs: $$f"; cat $(B)/docs/w; exit 1; }; \
		name=$$(basename "$$f"); \
		MANPATH=$(abspath $(B)/docs/stage/usr/share/man) man -w "$${name%.*}" >/dev/null || exit 1; \
		n=$$((n + 1)); \
	done; \
	test $$n -eq $$(sh man/names.sh $(MAN_PAGES) | wc -l) && \
	echo "check-docs: make install-man: $$n names under share/man, each renders with man -l"

.PHONY: install-man uninstall-man check-docs
