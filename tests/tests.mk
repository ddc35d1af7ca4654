# SPDX-License-Identifier: MIT
# Tests: one runner binary from tests/*.c, linked against the shared library
# and a test DSO that has a __wr_rare section of its own.
TEST_SRC := $(filter-out tests/dso_lib.c tests/copyreloc_main.c tests/stripped_main.c,$(wildcard tests/*.c))
TEST_BIN := $(B)/tests/run

$(B)/tests/libdso.so: tests/dso_lib.c $(HEADERS) $(B)/librarewrite.so
	@mkdir -p $(dir $@)
	$(CC) $(USER_CFLAGS) -fPIC -shared $< -o $@ $(USER_LDFLAGS) \
		-L$(B) -lrarewrite

$(TEST_BIN): $(TEST_SRC) tests/harness.h tests/testutil.h $(HEADERS) $(B)/librarewrite.so $(B)/tests/libdso.so
	@mkdir -p $(dir $@)
	$(CC) $(USER_CFLAGS) -Itests $(TEST_SRC) -o $@ $(USER_LDFLAGS) \
		-L$(B) -L$(B)/tests -ldso -lrarewrite -pthread \
		-Wl,-rpath,'$$ORIGIN/..' -Wl,-rpath,'$$ORIGIN'

# Programs that use the DSO's __wr_rare variable directly, apart from the
# runner (which must not carry a copy relocation); test_dso.c execs them.
COPYRELOC_BINS := $(B)/tests/copyreloc $(B)/tests/copyreloc-nopie \
	$(B)/tests/copyreloc-nocopy
COPYRELOC_LINK = $(USER_LDFLAGS) -L$(B) -L$(B)/tests -ldso -lrarewrite \
	-Wl,-rpath,'$$ORIGIN/..' -Wl,-rpath,'$$ORIGIN'

# GCC's PIE reaches another object's variable directly, so the linker
# copies it; clang's goes through the GOT unless told otherwise, and the
# copy this program exists to show would not be there.
DIRECT_EXTERN_DATA := $(shell $(CC) -fdirect-access-external-data -x c -c /dev/null \
	-o /dev/null 2>/dev/null && echo -fdirect-access-external-data)
$(B)/tests/copyreloc: tests/copyreloc_main.c $(HEADERS) $(B)/tests/libdso.so
	$(CC) $(USER_CFLAGS) -fPIE -pie $(DIRECT_EXTERN_DATA) $< -o $@ $(COPYRELOC_LINK)

$(B)/tests/copyreloc-nopie: tests/copyreloc_main.c $(HEADERS) $(B)/tests/libdso.so
	$(CC) $(USER_CFLAGS) -fno-pie -no-pie $< -o $@ $(COPYRELOC_LINK)

$(B)/tests/copyreloc-nocopy: tests/copyreloc_main.c $(HEADERS) $(B)/tests/libdso.so
	$(CC) $(USER_CFLAGS) -fPIC -Wl,-z,nocopyreloc $< -o $@ $(COPYRELOC_LINK)

# A stripped program: the fault report names the region and the file.
$(B)/tests/fault-stripped: tests/stripped_main.c $(HEADERS) $(B)/librarewrite.so
	$(CC) $(USER_CFLAGS) -s $< -o $@ $(USER_LDFLAGS) -L$(B) -lrarewrite \
		-Wl,-rpath,'$$ORIGIN/..'

$(TEST_BIN): $(COPYRELOC_BINS) $(B)/tests/fault-stripped

check: $(TEST_BIN) check-compile-fail check-write-sites check-abi
	$(TEST_BIN)

# rare_write() is type-checked: tests/compile_fail/ok_*.c must compile with
# -Werror, every tests/compile_fail/fail_*.c must not.
check-compile-fail:
	@for f in tests/compile_fail/ok_*.c; do \
		$(CC) $(USER_CFLAGS) -Werror -fsyntax-only $$f || \
			{ echo "FAIL compile-fail control $$f"; exit 1; }; \
	done; \
	for f in tests/compile_fail/fail_*.c; do \
		if $(CC) $(USER_CFLAGS) -Werror -fsyntax-only $$f 2>/dev/null; \
		then echo "FAIL compile-fail $$f compiled"; exit 1; fi; \
		echo "ok   compile-fail $$f"; \
	done

# Check mode (-DRAREWRITE_CHECK_WRITES): a half-ported file compiles as it
# is; in check mode the compiler must report exactly the lines marked
# UNCONVERTED, by file and line, with every compiler we have.
SITES := tests/compile_fail/check_sites.c
check-write-sites:
	@for cc in $(CC) $(shell command -v clang); do \
		$$cc $(USER_CFLAGS) -Werror -fsyntax-only $(SITES) || \
			{ echo "FAIL write sites: $(SITES) does not build ($$cc)"; exit 1; }; \
		want=$$(grep -n UNCONVERTED $(SITES) | grep -v '^[0-9]*: \*' | cut -d: -f1 | sort -n | tr '\n' ' '); \
		got=$$($$cc $(USER_CFLAGS) -DRAREWRITE_CHECK_WRITES -fsyntax-only $(SITES) 2>&1 | \
			sed -n 's|^$(SITES):\([0-9]*\):[0-9]*: error: .*|\1|p' | sort -nu | tr '\n' ' '); \
		if [ "$$want" != "$$got" ]; then \
			echo "FAIL write sites ($$cc): want lines $$want, compiler named $$got"; exit 1; fi; \
		echo "ok   write sites ($$cc): lines $$got"; \
	done

# The same suite under AddressSanitizer and UndefinedBehaviorSanitizer.
# The races of the cells the attack table expects blocked run a quarter of
# their budget (RAREWRITE_TEST_RACE_SCALE, tests/attack.h): make check has
# run them whole; here every race still runs and still fails on a landing.
# ASAN_RACE_SCALE=1: whole budgets here too.
ASAN_RACE_SCALE ?= 0.25
check-asan:
	$(MAKE) B=build-asan EXTRA_CFLAGS="-fsanitize=address,undefined -fno-omit-frame-pointer" \
		EXTRA_LDFLAGS="-fsanitize=address,undefined" build-asan/tests/run
	ASAN_OPTIONS=detect_leaks=0:handle_segv=0:handle_sigbus=0 UBSAN_OPTIONS=halt_on_error=1 \
		RAREWRITE_TEST_RACE_SCALE=$(ASAN_RACE_SCALE) build-asan/tests/run

.PHONY: check check-asan check-compile-fail check-write-sites

# Install into a staging prefix and build the demo exactly as a user would:
# cc prog.c $(pkg-config --cflags --libs rarewrite), shared and static.
STAGE := $(abspath $(B))/stage
check-install:
	$(MAKE) install PREFIX=$(STAGE)
	PKG_CONFIG_PATH=$(STAGE)/lib/pkgconfig sh -c '$(CC) examples/handlers.c -o $(B)/handlers-installed $$(pkg-config --cflags --libs rarewrite) -pthread && \
		$(CC) -static examples/handlers.c -o $(B)/handlers-installed-static $$(pkg-config --static --cflags --libs rarewrite)'
	LD_LIBRARY_PATH=$(STAGE)/lib RAREWRITE_BACKEND=pwrite $(B)/handlers-installed
	RAREWRITE_BACKEND=mprotect $(B)/handlers-installed-static
	@# Every linker that reads the fragment, with the rpath the README
	@# gives for a library installed outside the default path: no
	@# LD_LIBRARY_PATH. A plain store must still die with the report.
	@for ld in bfd lld; do \
		PKG_CONFIG_PATH=$(STAGE)/lib/pkgconfig sh -c '$(CC) -fuse-ld='$$ld' examples/handlers.c -o $(B)/handlers-'$$ld' $$(pkg-config --cflags --libs rarewrite) -Wl,-rpath,$$(pkg-config --variable=libdir rarewrite) -pthread' || \
			{ echo "FAIL check-install: link with ld.$$ld"; exit 1; }; \
		RAREWRITE_BACKEND=pwrite $(B)/handlers-$$ld >/dev/null || \
			{ echo "FAIL check-install: handlers-$$ld"; exit 1; }; \
		echo "ok   check-install: ld.$$ld"; \
	done
	@# gold cannot read INSERT: the link must fail, pointing at the line
	@# of the fragment that says so.
	@line=$$(grep -n '^INSERT' rarewrite.ld | cut -d: -f1); \
	if PKG_CONFIG_PATH=$(STAGE)/lib/pkgconfig sh -c '$(CC) -fuse-ld=gold examples/handlers.c -o $(B)/handlers-gold $$(pkg-config --cflags --libs rarewrite) -pthread' 2>$(B)/gold.err; then \
		echo "FAIL check-install: ld.gold linked with the fragment"; exit 1; fi; \
	grep -q "rarewrite.ld:$$line:" $(B)/gold.err && \
		sed -n "$$((line - 1))p" rarewrite.ld | grep -q 'gold is not supported' || \
		{ echo "FAIL check-install: gold's error does not point at the note"; cat $(B)/gold.err; exit 1; }; \
	echo "ok   check-install: ld.gold refused at rarewrite.ld:$$line"
	@# Linked without the fragment, init must refuse loudly: -ENOEXEC
	@# and one line saying how to link (the demo then exits 1).
	$(CC) -Iinclude examples/handlers.c -o $(B)/handlers-no-fragment $(B)/librarewrite.a -pthread
	$(B)/handlers-no-fragment >$(B)/no-fragment.out 2>$(B)/no-fragment.err; test $$? -eq 1 && \
		grep -q 'pkg-config' $(B)/no-fragment.err && grep -q 'Exec format error' $(B)/no-fragment.out
	@echo "check-install: ok"

.PHONY: check-install

# A set-user-ID test program: tests/test_core_setuid.c and scenario 13a
# make a copy of it set-user-ID root and run it as nobody. The library's
# sources are compiled in, static and without sanitizers ($(CFLAGS) only):
# the loader ignores $$ORIGIN (and LD_LIBRARY_PATH) in set-user-ID programs.
$(B)/tests/core-setuid: tests/setuid/core_setuid_main.c $(LIB_SRC) $(HEADERS) src/internal.h rarewrite.ld
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(WARN) -std=gnu11 -fvisibility=hidden -Iinclude -Isrc \
		-static $< $(LIB_SRC_STATIC) -o $@ -Wl,-T,rarewrite.ld -pthread

$(TEST_BIN): $(B)/tests/core-setuid
$(B)/tests/attack-matrix: $(B)/tests/core-setuid
$(TEST_BIN): tests/core_setuid.h

# The inventory of the library's writable state (tests/inventory.txt): every
# writable object has its line. The checker must also fail on an inventory
# that lacks a line (a control, so that it cannot pass by reading nothing).
check-inventory: all
	sh tests/check-inventory.sh $(B) tests/inventory.txt
	@sed '/^region.o rw_table:/d' tests/inventory.txt >$(B)/inventory-control.txt; \
	if sh tests/check-inventory.sh $(B) $(B)/inventory-control.txt >/dev/null; then \
		echo "FAIL inventory control: a missing line went unnoticed"; exit 1; fi; \
	echo "ok   inventory control: a missing line is reported"

check: check-inventory
.PHONY: check-inventory

# The library's layering from its objects (nm) and the headers of src/ they
# include (the calls of their inline functions; a header named after a
# source is that source's): no cycle among src/ files, backends reached
# only through their ops tables and using only the core's interface
# (src/internal.h, src/critical.h); the check must also catch a cycle it is
# given. It compiles each header of src/ alone, as the library's objects.
check-deps: all
	CC='$(CC)' LIB_CFLAGS='$(LIB_CFLAGS)' sh tests/check-deps.sh $(B)

check: check-deps
.PHONY: check-deps

# One program linked every way a user may link it (tests/link/main.c, run by
# tests/test_process_link.c on every backend): shared or static librarewrite,
# lazily or immediately bound, and fully static.
LINK_BINS := $(B)/tests/link-shared-lazy $(B)/tests/link-shared-now \
	$(B)/tests/link-static-lazy $(B)/tests/link-static-now \
	$(B)/tests/link-static-full

$(B)/tests/link-shared-%: tests/link/main.c $(HEADERS) $(B)/librarewrite.so
	$(CC) $(USER_CFLAGS) $< -o $@ $(USER_LDFLAGS) -Wl,-z,$* -L$(B) \
		-lrarewrite -pthread -Wl,-rpath,'$$ORIGIN/..'

$(B)/tests/link-static-full: tests/link/main.c $(HEADERS) $(B)/librarewrite.a
	$(CC) $(USER_CFLAGS) -static $< -o $@ $(USER_LDFLAGS) \
		$(B)/librarewrite.a -pthread

$(B)/tests/link-static-%: tests/link/main.c $(HEADERS) $(B)/librarewrite.a
	$(CC) $(USER_CFLAGS) $< -o $@ $(USER_LDFLAGS) -Wl,-z,$* \
		$(B)/librarewrite.a -pthread

# AddressSanitizer has no fully static runtime: under it the -static case
# skips (tests/test_process_link.c) and its program is not built.
ifneq (,$(findstring -fsanitize=address,$(EXTRA_CFLAGS)))
LINK_BINS := $(filter-out $(B)/tests/link-static-full,$(LINK_BINS))
endif
$(TEST_BIN): $(LINK_BINS)

# The README's two commands, make demo and make check, as root in a fresh
# Debian 12 chroot (debootstrap minbase, build-essential, git): make check
# must install what it needs by itself (tests/check-fresh.sh).
check-fresh:
	sh tests/check-fresh.sh

.PHONY: check-fresh

# System calls per operation, counted under ptrace against the figures of
# docs/backends.md (tests/syscount/syscount.c): deterministic, not timed.
$(B)/tests/syscount: tests/syscount/syscount.c $(HEADERS) $(B)/librarewrite.so
	@mkdir -p $(dir $@)
	$(CC) $(USER_CFLAGS) $< -o $@ $(USER_LDFLAGS) -L$(B) -lrarewrite \
		-Wl,-rpath,'$$ORIGIN/..'

check-syscalls: $(B)/tests/syscount $(B)/tools/backends
	@fail=0; for b in $(AVAILABLE_BACKENDS); do \
		$(B)/tests/syscount $$b || { echo "FAIL system calls per operation on $$b"; fail=1; }; \
	done; exit $$fail

check: check-syscalls

.PHONY: check-syscalls
