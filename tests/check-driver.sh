#!/bin/sh
# SPDX-License-Identifier: MIT
# check-driver.sh BUILD_DIR CC: tools/rarewrite-cc, check mode's driver.
#  1. with gcc and clang, --check-only names exactly the lines of
#     tests/compile_fail/driver_sites.c marked UNCONVERTED, in its one
#     wording, whichever spelling declared the object (that file compiles
#     cleanly in a normal build), and as notes exactly those marked
#     ADDRESS_ONLY (initialisers that only take an address); the same for
#     driver_sites.cc with g++ and clang++ (C++, every spelling);
#  2. -DRAREWRITE_CHECK_WRITES alone rejects the suffix spelling as a syntax
#     error (why the driver rewrites it);
#  3. as a CC wrapper (CC="rarewrite-cc gcc") around -c -o: the object is
#     the real compile's, the exit status 0, the sites listed on stderr and
#     appended to RAREWRITE_SITES; RAREWRITE_STRICT=1 makes them fatal;
#  4. link steps pass through; a C++ compile is checked too.
# $CC and $flags are lists of words (CC="ccache gcc" works):
# shellcheck disable=SC2086
set -eu
B=$1
CC=${2:-cc}
out=$B/driver
mkdir -p "$out"
fail=0
nbad=0
bad() {
	echo "check-driver: $*" >&2
	fail=1
	nbad=$((nbad + 1))
}
drv=tools/rarewrite-cc
src=tests/compile_fail/driver_sites.c
flags="-O2 -Wall -Wextra -std=gnu11 -Iinclude"
want=$(grep -n UNCONVERTED "$src" | grep -v '^[0-9]*: \*' | cut -d: -f1 | sort -n | tr '\n' ' ')

# check_file SOURCE FLAGS COMPILER...: the sites and notes of SOURCE
check_file() {
	src=$1
	fl=$2
	shift 2
	want=$(grep -n UNCONVERTED "$src" | grep -v '^[0-9]*: \*' | cut -d: -f1 | sort -n | tr '\n' ' ')
	want_notes=$(grep -n ADDRESS_ONLY "$src" | grep -v '^[0-9]*: \*' | cut -d: -f1 | sort -n | tr '\n' ' ')
	for cc; do
		was=$nbad
		$cc $fl -Werror -fsyntax-only "$src" || bad "$src does not compile as it is ($cc)"
		if $drv --check-only $cc $fl -c "$src" 2>"$out/sites"; then
			bad "--check-only exited 0 with sites to report ($cc)"
		fi
		got=$(sed -n "s|^$src:\([0-9]*\): rarewrite: write site: .*|\1|p" "$out/sites" | sort -nu | tr '\n' ' ')
		[ "$want" = "$got" ] || {
			bad "$cc: want lines $want, the driver named $got"
			cat "$out/sites" >&2
		}
		notes=$(sed -n "s|^$src:\([0-9]*\): rarewrite: note: address taken, not a write: .*|\1|p" "$out/sites" | sort -nu | tr '\n' ' ')
		[ "$want_notes" = "$notes" ] || bad "$cc: want notes at $want_notes, the driver noted $notes"
		other=$(grep -v -e ': rarewrite: write site: ' -e ': rarewrite: note: address taken, not a write: ' "$out/sites" || true)
		[ -z "$other" ] || bad "$cc: the driver printed more than site and note lines: $other"
		[ $nbad -ne "$was" ] || echo "ok   driver ($cc, $src): lines $got, notes $notes"
	done
}

clang=$(command -v clang || true)
check_file "$src" "$flags" $CC $clang
for cc in $CC $clang; do
	if $cc $flags -DRAREWRITE_CHECK_WRITES -fsyntax-only "$src" 2>"$out/plain"; then
		bad "$cc: -DRAREWRITE_CHECK_WRITES alone accepted the suffix spelling"
	fi
done
cxx_src=tests/compile_fail/driver_sites.cc
check_file "$cxx_src" "-O2 -Wall -Wextra -std=c++11 -Iinclude" g++ clang++
src=tests/compile_fail/driver_sites.c
want=$(grep -n UNCONVERTED "$src" | grep -v '^[0-9]*: \*' | cut -d: -f1 | sort -n | tr '\n' ' ')

# as a wrapper around a real compile
rm -f "$out/all-sites" "$out/o.o"
RAREWRITE_SITES=$out/all-sites $drv $CC $flags -c "$src" -o "$out/o.o" 2>"$out/wrap.err" ||
	bad "wrapped compile failed: $(cat "$out/wrap.err")"
[ -s "$out/o.o" ] || bad "wrapped compile wrote no object"
nm "$out/o.o" | grep -q ' T port$' || bad "the object is not the real compile's"
[ "$(wc -l <"$out/all-sites")" -ge "$(echo "$want" | wc -w)" ] ||
	bad "RAREWRITE_SITES has $(wc -l <"$out/all-sites") lines"
if RAREWRITE_STRICT=1 $drv $CC $flags -c "$src" -o "$out/o.o" 2>/dev/null; then
	bad "RAREWRITE_STRICT=1 exited 0 with sites"
fi
# a failing real compile keeps its status and skips the check pass
echo 'int broken(void) { return }' >"$out/broken.c"
if $drv $CC $flags -c "$out/broken.c" -o "$out/broken.o" 2>/dev/null; then
	bad "a failing compile exited 0 through the driver"
fi
# compile and link in one step: the program is built, its sites listed
printf '#include <rarewrite.h>\nstatic long x __wr_rare;\nint main(void)\n{\n\tx = 1;\n\treturn 0;\n}\n' >"$out/m.c"
$drv $CC -Iinclude "$out/m.c" -o "$out/m" -Wl,-T,rarewrite.ld -L"$B" -lrarewrite 2>"$out/m.err" ||
	bad "a compile-and-link through the driver failed: $(cat "$out/m.err")"
[ -x "$out/m" ] || bad "compile-and-link: no program"
grep -q "m.c:5: rarewrite: write site" "$out/m.err" || bad "compile-and-link: the site was not listed: $(cat "$out/m.err")"
# a C++ compile through the driver: the object, and its sites
rm -f "$out/cxx.o"
$drv g++ -std=c++11 -Iinclude -c "$cxx_src" -o "$out/cxx.o" 2>"$out/cxx.err" ||
	bad "a C++ compile through the driver failed: $(cat "$out/cxx.err")"
[ -s "$out/cxx.o" ] || bad "a C++ compile through the driver wrote no object"
grep -q "^$cxx_src:[0-9]*: rarewrite: write site: " "$out/cxx.err" ||
	bad "a C++ compile through the driver listed no site: $(cat "$out/cxx.err")"
# a link of objects passes through
$drv $CC "$out/o.o" -r -o "$out/o-r.o" || bad "a link through the driver failed"

[ $fail -eq 0 ] && echo "check-driver: ok ($(echo "$want" | wc -w) sites with each compiler, wrapper keeps the object and the status)"
exit $fail
