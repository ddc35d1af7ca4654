# SPDX-License-Identifier: MIT
# librarewrite: plain GNU Make; `make`, `make check`, `make demo`, `make install`.
# V=1 shows every command; the default prints one line per object.
CC ?= cc
CXX ?= c++
CFLAGS ?= -O2 -g
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
B := build

# One version, in VERSION: the .so name, rarewrite.pc, the CMake package,
# and (checked by `make check-version`) the header macros, the man pages
# and debian/changelog.
VERSION := $(shell cat VERSION)
VERSION_MAJOR := $(word 1,$(subst ., ,$(VERSION)))
SONAME := librarewrite.so.$(VERSION_MAJOR)
REALNAME := librarewrite.so.$(VERSION)

# `make check` on a fresh Debian machine: before anything is built, the
# packages its lanes need (tools/packages, section [check]) are installed
# when run as root, or named in one apt-get line and make stops. With all
# of them there it installs nothing and needs no root. INSTALL_PACKAGES=no:
# never install (a package build).
ifneq ($(filter check,$(MAKECMDGOALS)),)
CHECK_PACKAGES := $(shell tools/need-packages $(if $(filter no,$(INSTALL_PACKAGES)),--no-install) check >&2)
ifneq ($(.SHELLSTATUS),0)
$(error make check: the packages named above are missing)
endif
endif

# glibc only: src/signal.c calls glibc's __sigaction and the pkey backend
# pkey_mprotect(), which musl lacks. Refuse before compiling anything.
ifneq ($(MAKECMDGOALS),clean)
# (glibc's <features.h> defines __GLIBC__ to its major version, 2)
LIBC_GLIBC_MAJOR := $(shell echo __GLIBC__ | $(CC) -E -P -include features.h -x c - 2>/dev/null | tail -n 1)
ifneq ($(LIBC_GLIBC_MAJOR),2)
$(error librarewrite builds with glibc only; $(CC) does not define __GLIBC__ (musl lacks __sigaction and pkey_mprotect, which src/signal.c and src/backend/pkey.c call). Build with a glibc compiler, e.g. make CC=gcc)
endif
endif

ifneq ($(V),1)
Q := @
msg = @printf '  %-8s %s\n' '$(1)' '$(2)'
endif

WARN := -Wall -Wextra -Werror=incompatible-pointer-types
# RAREWRITE_BUILDING_LIBRARY: the library's own objects carry no section
# registration constructor and no nonnull (its NULL checks must stay).
LIB_CFLAGS := $(CFLAGS) $(WARN) -std=gnu11 -fPIC -fvisibility=hidden \
	-DRAREWRITE_BUILDING_LIBRARY -MMD -MP -Iinclude -Isrc $(EXTRA_CFLAGS)
# Programs and DSOs that use __wr_rare link with the section fragment.
# The suite passes NULL to nonnull arguments on purpose, to see the
# library's abort message naming the call, and reads a rare_alloc() object
# past its size on purpose, to see that freed and shrunk bytes are zero;
# under -fsanitize=undefined the nonnull-attribute and object-size checks
# (which read the header's nonnull and alloc_size) would report first.
# (Also last in the link flags: a compile-and-link command reads the last.)
NO_UBSAN_CONTRACT := -fno-sanitize=nonnull-attribute,object-size
USER_CFLAGS := $(CFLAGS) $(WARN) -std=gnu11 -Iinclude $(EXTRA_CFLAGS) \
	$(NO_UBSAN_CONTRACT)
USER_LDFLAGS := -Wl,-T,rarewrite.ld $(EXTRA_LDFLAGS) $(NO_UBSAN_CONTRACT)

LIB_SRC := $(wildcard src/*.c src/backend/*.c)
LIB_OBJ := $(LIB_SRC:%.c=$(B)/%.o)
# What a static program links: not the C library's thread starters, whose
# next definition only the dynamic linker can name (src/libc_threads.c).
LIB_SRC_STATIC := $(filter-out src/libc_threads.c,$(LIB_SRC))
LIB_OBJ_STATIC := $(LIB_SRC_STATIC:%.c=$(B)/%.o)
HEADERS := include/rarewrite.h include/rarewrite/list.h

all: $(B)/librarewrite.so $(B)/librarewrite.a

# The public headers and internal.h explicitly too: an object built before
# the tree had -MMD has no .d file and would otherwise never be rebuilt.
$(B)/%.o: %.c $(HEADERS) src/internal.h
	@mkdir -p $(dir $@)
	$(call msg,CC,$@)
	$(Q)$(CC) $(LIB_CFLAGS) -c $< -o $@

-include $(LIB_OBJ:.o=.d)

# librarewrite.so.0.N.M, with the links librarewrite.so.0 (the soname) and
# librarewrite.so (for -lrarewrite), in the build tree as once installed.
$(B)/librarewrite.so: $(LIB_OBJ) src/exports.map VERSION
	$(call msg,LD,$(B)/$(REALNAME))
	$(Q)$(CC) -shared -o $(B)/$(REALNAME) $(LIB_OBJ) \
		-Wl,--version-script=src/exports.map -Wl,-soname,$(SONAME) \
		-Wl,-z,defs -Wl,-z,now -Wl,-z,relro -pthread $(EXTRA_LDFLAGS)
	$(Q)ln -sf $(REALNAME) $(B)/$(SONAME)
	$(Q)ln -sf $(SONAME) $@

$(B)/librarewrite.a: $(LIB_OBJ_STATIC)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $(LIB_OBJ_STATIC)

SUBST = sed -e 's|@PREFIX@|$(PREFIX)|g; s|@LIBDIR@|$(LIBDIR)|g; s|@INCLUDEDIR@|$(INCLUDEDIR)|g' \
	-e 's|@VERSION@|$(VERSION)|g; s|@VERSION_MAJOR@|$(VERSION_MAJOR)|g'
CMAKEDIR := $(LIBDIR)/cmake/rarewrite

install: all install-man
	install -d $(DESTDIR)$(INCLUDEDIR)/rarewrite $(DESTDIR)$(LIBDIR)/pkgconfig \
		$(DESTDIR)$(CMAKEDIR) $(DESTDIR)$(BINDIR)
	install -m 644 include/rarewrite.h include/rarewrite.hpp $(DESTDIR)$(INCLUDEDIR)/
	install -m 644 include/rarewrite/list.h $(DESTDIR)$(INCLUDEDIR)/rarewrite/
	install -m 755 $(B)/$(REALNAME) $(DESTDIR)$(LIBDIR)/
	ln -sf $(REALNAME) $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(LIBDIR)/librarewrite.so
	install -m 644 $(B)/librarewrite.a rarewrite.ld $(DESTDIR)$(LIBDIR)/
	$(SUBST) rarewrite.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/rarewrite.pc
	$(SUBST) cmake/rarewrite-config.cmake.in > $(DESTDIR)$(CMAKEDIR)/rarewrite-config.cmake
	$(SUBST) cmake/rarewrite-config-version.cmake.in > $(DESTDIR)$(CMAKEDIR)/rarewrite-config-version.cmake
	install -m 755 tools/rarewrite-cc $(DESTDIR)$(BINDIR)/

# Everything install put there, and the directories it made if now empty.
uninstall: uninstall-man
	rm -f $(DESTDIR)$(INCLUDEDIR)/rarewrite.h $(DESTDIR)$(INCLUDEDIR)/rarewrite.hpp \
		$(DESTDIR)$(INCLUDEDIR)/rarewrite/list.h \
		$(DESTDIR)$(LIBDIR)/$(REALNAME) $(DESTDIR)$(LIBDIR)/$(SONAME) \
		$(DESTDIR)$(LIBDIR)/librarewrite.so $(DESTDIR)$(LIBDIR)/librarewrite.a \
		$(DESTDIR)$(LIBDIR)/rarewrite.ld $(DESTDIR)$(LIBDIR)/pkgconfig/rarewrite.pc \
		$(DESTDIR)$(CMAKEDIR)/rarewrite-config.cmake \
		$(DESTDIR)$(CMAKEDIR)/rarewrite-config-version.cmake \
		$(DESTDIR)$(BINDIR)/rarewrite-cc
	-rmdir $(DESTDIR)$(INCLUDEDIR)/rarewrite $(DESTDIR)$(CMAKEDIR) 2>/dev/null

# The library's backends (rare_write_backends(3)), for the loops of the
# .mk files: expanded when a recipe runs, so a target whose recipe reads
# them has $(B)/tools/backends among its prerequisites. Empty is an error,
# never a loop over nothing.
$(B)/tools/backends: tools/backends.c $(HEADERS) $(B)/librarewrite.so
	@mkdir -p $(dir $@)
	$(CC) $(USER_CFLAGS) $< -o $@ $(USER_LDFLAGS) -L$(B) -lrarewrite \
		-Wl,-rpath,'$$ORIGIN/..'
NO_BACKENDS = $(error $@: $(B)/tools/backends$(if $(1), $(1)) printed no backend (is $(B)/tools/backends a prerequisite of $@?))
BACKENDS = $(or $(shell $(B)/tools/backends),$(call NO_BACKENDS))
# Those that start on this machine (pkey needs protection keys).
AVAILABLE_BACKENDS = $(or $(shell $(B)/tools/backends --available),$(call NO_BACKENDS,--available))

include tests/tests.mk
include tests/attack.mk
include tests/contracts.mk
-include examples/examples.mk
-include bench/bench.mk
-include vm/vm.mk
-include fuzz/fuzz.mk
-include real/real.mk
include man/man.mk

# The exported ABI: version nodes, interposers unversioned and binding, and
# the layout of every public type against the committed libabigail
# baseline (tests/abi/librarewrite.abi).
check-abi: all
	sh tests/check-abi.sh $(B) $(CC)

# The Debian packages: build, lintian, lost-symbol check, install, demo.
check-deb:
	sh tests/check-deb.sh $(B)

# The kernel port: patch, build and boot Linux 6.12 under QEMU (kernel/README.md).
kernel-check:
	kernel/run

clean:
	rm -rf $(B)

.PHONY: all install uninstall clean kernel-check check-abi check-deb
