#!/bin/sh
# SPDX-License-Identifier: MIT
# check-abi.sh BUILD_DIR CC: the ABI of librarewrite.so, against what is
# committed in tests/abi/.
#  1. the defined dynamic symbols and their version nodes are exactly
#     tests/abi/symbols: a symbol lost, moved to another node or added
#     without being listed fails (a new function goes into a new node,
#     RAREWRITE_0.2 and later, never into a released one);
#  2. every RAREWRITE_API function of the headers is listed there, and the
#     interposed C library functions are unversioned (Base), so they still
#     preempt libc's;
#  3. at run time, the references of a program linked against the library
#     and of a library built against libc alone (pthread_create@GLIBC_2.34,
#     sigaction@GLIBC_2.2.5) all bind to librarewrite (LD_DEBUG=bindings);
#  4. the layout of every type the exported functions use, from the DWARF
#     of the library, is the committed libabigail baseline
#     (tests/abi/librarewrite.abi, written by abidw; `make abi-baseline`
#     rewrites it on purpose): abidiff must find no change;
#  5. and abidiff does fail, naming both structs, on a library built from
#     headers where struct rare_write_mapping and struct rare_pool_opts
#     each grew a member (the check would catch the change it exists for).
set -eu
B=$1
CC=${2:-cc}
so=$B/librarewrite.so
out=$B/abi
mkdir -p "$out"
fail=0
bad() {
	echo "check-abi: $*" >&2
	fail=1
}

interposed="__sysv_signal aio_fsync aio_fsync64 aio_read aio_read64 aio_write aio_write64 bsd_signal daemon fork forkpty getaddrinfo_a lio_listio lio_listio64 mq_notify pthread_create sigaction sigignore siginterrupt signal sigset ssignal sysv_signal thrd_create timer_create"

# "name version" of each defined dynamic symbol, less the nodes' own entries
objdump -T "$so" | awk '$NF !~ /^\(/ && NF >= 7 && $4 != "*UND*" && $NF != $(NF-1) {print $NF, $(NF-1)}' |
	sort >"$out/dynsym"
[ -s "$out/dynsym" ] || bad "no defined dynamic symbols in $so"
grep -v '^#' tests/abi/symbols | sort >"$out/symbols"
if ! diff -u "$out/symbols" "$out/dynsym" >"$out/symbols.diff"; then
	bad "exported symbols differ from tests/abi/symbols (- listed, + exported):"
	sed -n '3,$p' "$out/symbols.diff" | grep '^[-+]' >&2
fi

# functions declared RAREWRITE_API in the public headers: comments
# dropped (macros kept), one declaration per line, attributes dropped
for h in include/rarewrite.h include/rarewrite/list.h; do
	$CC -fpreprocessed -dD -E -P -x c "$h" 2>/dev/null
done | grep -v '^#' | tr '\n' ' ' | sed 's/;/;\n/g' | grep RAREWRITE_API |
	sed -e 's/RAREWRITE_NONNULL([^)]*)//g' \
		-e 's/__attribute__(([^()]*\(([^()]*)[^()]*\)*))//g' |
	sed -n 's/.*RAREWRITE_API[^(]*[ *]\([a-z_0-9]*\) *(.*/\1/p' |
	sort -u >"$out/api"
[ "$(wc -l <"$out/api")" -ge 20 ] || bad "found only $(wc -l <"$out/api") RAREWRITE_API declarations"
while read -r f; do
	grep -q "^$f RAREWRITE_" "$out/symbols" || bad "$f is declared RAREWRITE_API but not in a RAREWRITE_ node of tests/abi/symbols"
done <"$out/api"
while read -r name ver; do
	case " $interposed " in
	*" $name "*)
		[ "$ver" = Base ] || bad "interposed $name has version $ver (must be unversioned)"
		continue ;;
	esac
	grep -qx "$name" "$out/api" || bad "$name ($ver) is exported but not declared RAREWRITE_API"
done <"$out/dynsym"
for f in $interposed; do
	grep -q "^$f Base$" "$out/dynsym" || bad "interposed $f is not exported unversioned"
done

# run time: who binds pthread_create and sigaction
$CC -O2 -fPIC -shared tests/abi/libc_only.c -o "$out/libc_only.so" -pthread
objdump -T "$out/libc_only.so" | grep -q '(GLIBC_2.34) *pthread_create' ||
	bad "libc_only.so does not reference pthread_create@GLIBC_2.34"
$CC -O2 -Iinclude tests/abi/main.c -o "$out/main" -Wl,-T,rarewrite.ld \
	-L"$B" -lrarewrite "$out/libc_only.so" -pthread \
	-Wl,-rpath,"$(cd "$B" && pwd)" -Wl,-rpath,"$(cd "$out" && pwd)"
RAREWRITE_BACKEND=pwrite LD_DEBUG=bindings "$out/main" 2>"$out/bindings" ||
	bad "abi main failed"
for who in main libc_only.so; do
	for f in pthread_create sigaction; do
		grep -E "binding file [^ ]*$who \[0\] to [^ ]*librarewrite.so.0 \[0\]: normal symbol \`$f'" \
			"$out/bindings" >/dev/null ||
			bad "$who: $f does not bind to librarewrite ($(grep "$who \[0\].*\`$f'" "$out/bindings" | head -1))"
	done
done

# layout: abidiff against the baseline (needs the library's DWARF: -g)
if ! command -v abidiff >/dev/null; then
	bad "abidiff not found (apt-get install abigail-tools)"
	exit 1
fi
readelf -S "$so" | grep -q '\.debug_info' ||
	bad "$so has no DWARF (build with -g) for the layout check"
# status bits: 1 error, 2 usage, 4 ABI change, 8 incompatible change
abidiff --headers-dir2 include tests/abi/librarewrite.abi "$so" >"$out/abidiff.txt" 2>&1 || {
	bad "the layout differs from tests/abi/librarewrite.abi (status $?):"
	cat "$out/abidiff.txt" >&2
}

# the check catches what it exists for: each struct grows a member
m=$out/mutant
rm -rf "$m"
mkdir -p "$m/include/rarewrite" "$m/obj"
sed -e '/^struct rare_write_mapping {/,/^};/s/^\tunsigned long token;/&\n\tunsigned long grown;/' \
	-e '/^struct rare_pool_opts {/,/^};/s/^\tunsigned flags;.*/&\n\tvoid *grown;/' \
	include/rarewrite.h >"$m/include/rarewrite.h"
cp include/rarewrite/list.h "$m/include/rarewrite/"
[ "$(grep -c grown "$m/include/rarewrite.h")" -eq 2 ] || bad "mutant header: the structs were not found"
# shellcheck disable=SC2016 # $1, $0 belong to the inner shell
find src -name '*.c' -print0 | CC=$CC M=$m xargs -0 -n1 -P2 sh -c \
	'exec $CC -O0 -g -std=gnu11 -fPIC -fvisibility=hidden -DRAREWRITE_BUILDING_LIBRARY \
		-I"$M/include" -Isrc -c "$1" -o "$M/obj/$(echo "$1" | tr / _).o"' sh ||
	bad "mutant library: compile failed"
$CC -shared -o "$m/librarewrite.so" "$m"/obj/*.o -Wl,--version-script=src/exports.map \
	-Wl,-soname,librarewrite.so.0 -pthread
if abidiff --headers-dir2 "$m/include" tests/abi/librarewrite.abi "$m/librarewrite.so" \
	>"$m/abidiff.txt" 2>&1; then
	bad "abidiff accepted a library whose public structs grew"
fi
for t in rare_write_mapping rare_pool_opts; do
	grep -q "struct $t" "$m/abidiff.txt" || bad "abidiff did not name struct $t: $(cat "$m/abidiff.txt")"
done

[ $fail -eq 0 ] && echo "check-abi: ok ($(grep -c ' RAREWRITE_' "$out/dynsym") symbols in $(awk '$2 ~ /^RAREWRITE_/ {print $2}' "$out/dynsym" | sort -u | tr '\n' ' ')nodes, interposers unversioned and binding, layout = tests/abi/librarewrite.abi, a grown struct is caught)"
exit $fail
