#!/bin/sh
# SPDX-License-Identifier: MIT
# check-build.sh BUILD_DIR MAKE: what the Makefile promises a packager.
#  1. objects depend on every header they include (-MMD -MP): a private
#     header under src/backend/ outdates the objects that include it;
#  2. the default build prints one line per object, V=1 the commands;
#  3. the library links with -z defs (no undefined symbol left for the
#     program to supply);
#  4. the library's own objects carry no section-registration constructor
#     (the header's constructor is for programs and their libraries);
#  5. make uninstall removes everything make install put in a stage.
# Every check is of the build it is given: the sub-makes keep the caller's
# variable definitions (B, CFLAGS, EXTRA_LDFLAGS, PREFIX, LIBDIR: a
# package build's) and lose its options (their output is read, so none may
# inherit -s, -n or -q; -j and the jobserver go with them).
set -eu
B=$1
MAKE=${2:-make}
# MAKEFLAGS is "[letters] [--long-options] -- VAR=value ...": keep what
# follows the first "-- " (an option never has a space after its "--").
case " ${MAKEFLAGS:-}" in
*" -- "*) MAKEFLAGS="-- ${MAKEFLAGS#*-- }" && export MAKEFLAGS ;;
*) unset MAKEFLAGS ;;
esac
unset MFLAGS
fail=0
bad() {
	echo "check-build: $*" >&2
	fail=1
}

# 0. the build given is the one the sub-makes see (not the default build/)
$MAKE -s -q all || bad "make all is not up to date in $B: the sub-make does not see the build it was given"

# 1. -W pretends the header was just changed, without touching it
$MAKE -s -q "$B/src/backend/process.o" || bad "$B/src/backend/process.o is not up to date after make"
if $MAKE -s -q -W src/backend/process_ring.h "$B/src/backend/process.o"; then
	bad "$B/src/backend/process.o does not depend on src/backend/process_ring.h"
fi
$MAKE -s -q -W include/rarewrite.h "$B/src/query.o" &&
	bad "$B/src/query.o does not depend on include/rarewrite.h"

# 2. quiet by default, V=1 shows the command
t=$B/vtest
rm -rf "$t"
$MAKE B="$t" "$t/src/query.o" >"$B/quiet.log" 2>&1
grep -q '^  CC  *'"$t"'/src/query.o$' "$B/quiet.log" || bad "quiet build did not print '  CC $t/src/query.o': $(cat "$B/quiet.log")"
grep -q -- '-fPIC' "$B/quiet.log" && bad "quiet build printed the command"
rm -rf "$t"
$MAKE B="$t" V=1 "$t/src/query.o" >"$B/verbose.log" 2>&1
grep -q -- '-fPIC.*-c src/query.c' "$B/verbose.log" || bad "V=1 did not print the command: $(cat "$B/verbose.log")"
rm -rf "$t"

# 3. -z defs on the link line
$MAKE -n -W src/exports.map V=1 "$B/librarewrite.so" | grep -q -- '-Wl,-z,defs' ||
	bad "the library is not linked with -Wl,-z,defs"

# 4. nothing in the library registers a section
n=$(nm "$B/librarewrite.so" | grep -c 'rare_write_register_this_object_' || true)
[ "$n" -eq 0 ] || bad "librarewrite.so has $n copies of the header's registration constructor"

# 5. install, uninstall: the stage is left empty. DESTDIR, not PREFIX:
# the caller's LIBDIR, INCLUDEDIR... (a package's /usr/lib/<triplet>) are
# kept, and nothing can be installed outside the stage.
s=$(pwd)/$B/uninstall-stage
rm -rf "$s"
$MAKE -s install DESTDIR="$s" >/dev/null
[ -n "$(find "$s" -name rarewrite.h -type f)" ] || bad "make install did not install into $s"
$MAKE -s uninstall DESTDIR="$s" >/dev/null
left=$(find "$s" ! -type d | sed "s|^$s/||")
[ -z "$left" ] || bad "make uninstall left: $(echo "$left" | tr '\n' ' ')"
rm -rf "$s"

[ $fail -eq 0 ] && echo "check-build: ok (header dependencies, quiet and V=1, -z defs, no constructor in the library, uninstall leaves nothing)"
exit $fail
