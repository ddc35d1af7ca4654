#!/bin/sh
# check-abi.sh BUILD_DIR CC: the dynamic symbol table of librarewrite.so.
#  1. every public function of the headers is exported in node RAREWRITE_0.1;
#  2. nothing else is exported but the interposed C library functions, and
#     those are unversioned (Base), so they still preempt libc's;
#  3. at run time, the references of a program linked against the library
#     and of a library built against libc alone (pthread_create@GLIBC_2.34,
#     sigaction@GLIBC_2.2.5) all bind to librarewrite (LD_DEBUG=bindings).
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

interposed="bsd_signal pthread_create sigaction signal sysv_signal"

# "name version" of each defined dynamic symbol
objdump -T "$so" | awk '$NF !~ /^\(/ && NF >= 7 && $4 != "*UND*" {print $NF, $(NF-1)}' |
	grep -v '^RAREWRITE_0.1 RAREWRITE_0.1$' | sort >"$out/dynsym"
[ -s "$out/dynsym" ] || bad "no defined dynamic symbols in $so"

# functions declared RAREWRITE_API in the public headers
sed -n 's/^RAREWRITE_API[^(]*[ *]\([a-z_0-9]*\)(.*/\1/p; /^RAREWRITE_API [^(]*$/{n; s/^\([a-z_0-9]*\)(.*/\1/p}' \
	include/rarewrite.h include/rarewrite/list.h | sort -u >"$out/api"
[ "$(wc -l <"$out/api")" -ge 20 ] || bad "found only $(wc -l <"$out/api") RAREWRITE_API declarations"

while read -r f; do
	grep -qx "$f RAREWRITE_0.1" "$out/dynsym" || bad "$f is not exported as $f@@RAREWRITE_0.1"
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
	grep -q "^$f " "$out/dynsym" || bad "interposed $f is not exported"
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

[ $fail -eq 0 ] && echo "check-abi: ok ($(grep -c RAREWRITE_0.1 "$out/dynsym") symbols in RAREWRITE_0.1, interposers unversioned and binding)"
exit $fail
