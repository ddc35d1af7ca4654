# librarewrite: plain GNU Make; `make`, `make check`, `make demo`, `make install`.
CC ?= cc
CFLAGS ?= -O2 -g
PREFIX ?= /usr/local
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
B := build

WARN := -Wall -Wextra
LIB_CFLAGS := $(CFLAGS) $(WARN) -std=gnu11 -fPIC -fvisibility=hidden \
	-Iinclude -Isrc $(EXTRA_CFLAGS)
# Programs and DSOs that use __wr_rare link with the section fragment.
USER_CFLAGS := $(CFLAGS) $(WARN) -std=gnu11 -Iinclude $(EXTRA_CFLAGS)
USER_LDFLAGS := -Wl,-T,rarewrite.ld $(EXTRA_LDFLAGS)

LIB_SRC := $(wildcard src/*.c src/backend/*.c)
LIB_OBJ := $(LIB_SRC:%.c=$(B)/%.o)
HEADERS := include/rarewrite.h include/rarewrite/list.h

all: $(B)/librarewrite.so $(B)/librarewrite.a

$(B)/%.o: %.c $(HEADERS) src/internal.h
	@mkdir -p $(dir $@)
	$(CC) $(LIB_CFLAGS) -c $< -o $@

$(B)/librarewrite.so: $(LIB_OBJ) src/exports.map
	$(CC) -shared -o $@ $(LIB_OBJ) -Wl,--version-script=src/exports.map \
		-Wl,-soname,librarewrite.so.0 -Wl,-z,now -Wl,-z,relro -pthread $(EXTRA_LDFLAGS)
	ln -sf librarewrite.so $(B)/librarewrite.so.0

$(B)/librarewrite.a: $(LIB_OBJ)
	rm -f $@ && ar rcs $@ $(LIB_OBJ)

install: all install-man
	install -d $(DESTDIR)$(INCLUDEDIR)/rarewrite $(DESTDIR)$(LIBDIR)/pkgconfig
	install -m 644 include/rarewrite.h $(DESTDIR)$(INCLUDEDIR)/
	install -m 644 include/rarewrite/list.h $(DESTDIR)$(INCLUDEDIR)/rarewrite/
	install -m 755 $(B)/librarewrite.so $(DESTDIR)$(LIBDIR)/librarewrite.so.0
	ln -sf librarewrite.so.0 $(DESTDIR)$(LIBDIR)/librarewrite.so
	install -m 644 $(B)/librarewrite.a rarewrite.ld $(DESTDIR)$(LIBDIR)/
	sed -e 's|@PREFIX@|$(PREFIX)|; s|@LIBDIR@|$(LIBDIR)|; s|@INCLUDEDIR@|$(INCLUDEDIR)|' \
		rarewrite.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/rarewrite.pc

include tests/tests.mk
-include examples/examples.mk
-include bench/bench.mk
-include vm/vm.mk
-include fuzz/fuzz.mk
-include real/real.mk
include man/man.mk

# The exported ABI: version node, interposers unversioned and binding.
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

.PHONY: all install clean kernel-check check-abi check-deb
