#!/bin/sh
# SPDX-License-Identifier: MIT
# check-inventory.sh BUILD_DIR INVENTORY - every writable object of
# librarewrite.so and librarewrite.a (symbols of type OBJECT or TLS in a
# section with the W flag: .data, .bss, .tdata, .tbss, .data.rel.ro, ...)
# must have a line "object symbol: why a store to it cannot widen write
# access" in INVENTORY, and every line must name an object that exists.
# Objects are the archive's members (core.o, ...); "crt" names what the
# toolchain's start files add to the shared library. GCC's numbered static
# locals (hint.0) are listed without the number.
set -eu
B=$1
INV=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# "member symbol" for each writable object of ELF file or archive $1.
writable() {
	readelf -SsW "$1" | awk -v single="$2" '
	/^File: / { m = $0; sub(/.*\(/, "", m); sub(/\).*/, "", m);
		    delete flags; next }
	/^ *\[ *[0-9]+\]/ {
		s = $0; sub(/^ *\[ */, "", s); idx = s + 0; sub(/^[0-9]+\] */, "", s);
		n = split(s, f, / +/);
		flags[idx] = (n >= 10) ? f[7] : "";
		next }
	$1 ~ /^[0-9]+:$/ && ($4 == "OBJECT" || $4 == "TLS") && $7 ~ /^[0-9]+$/ {
		if (flags[$7 + 0] !~ /W/) next;
		name = $8; sub(/\.[0-9]+$/, "", name);
		print (single != "" ? single : m), name }
	' | sort -u
}

writable "$B/librarewrite.a" "" >"$tmp/a"
# Objects of the shared library that the archive leaves out (Makefile,
# LIB_SRC_STATIC), under their own names.
o=$B/src/libc_threads.o
[ -f "$o" ] || { echo "check-inventory: $o missing (make all first)" >&2; exit 1; }
writable "$o" "${o##*/}" | sort -u - "$tmp/a" -o "$tmp/a"
writable "$B/librarewrite.so" "so" | awk '{print $2}' | sort -u >"$tmp/so"
# The inventory: "[OPEN: ]object symbol: reason", '#' comments, blanks.
sed -e '/^#/d' -e '/^[[:space:]]*$/d' -e 's/^OPEN: //' "$INV" >"$tmp/lines"
awk -F': ' '{ split($1, k, " "); print k[1], k[2] }' "$tmp/lines" |
	sort >"$tmp/inv"
grep -v '^[^ :][^ :]* [^ :][^ :]*: ..........' "$tmp/lines" >"$tmp/bad" || true

fail=0
if [ -s "$tmp/bad" ]; then
	sed 's/^/inventory: malformed line (want "object symbol: reason"): /' "$tmp/bad"
	fail=1
fi
# Objects of the archive without a line.
sort -u "$tmp/inv" | comm -23 "$tmp/a" - | while read -r o s; do
	echo "inventory: $o $s (librarewrite.a) is writable and has no line in $INV"
done >"$tmp/missing"
# Objects of the shared library (by name) without a line.
awk '{print $2}' "$tmp/inv" | sort -u | comm -23 "$tmp/so" - | while read -r s; do
	echo "inventory: $s (librarewrite.so) is writable and has no line in $INV"
done >>"$tmp/missing"
# Lines for objects that no longer exist.
{ cat "$tmp/a"; sed 's/^/crt /' "$tmp/so"; } | sort -u >"$tmp/have"
sort -u "$tmp/inv" | comm -13 "$tmp/have" - | while read -r o s; do
	echo "inventory: $o $s is listed in $INV but no longer exists"
done >>"$tmp/missing"
if [ -s "$tmp/missing" ]; then
	cat "$tmp/missing"
	fail=1
fi
if [ $fail = 0 ]; then
	echo "ok   inventory: $(wc -l <"$tmp/a") objects of librarewrite.a, $(wc -l <"$tmp/so") of librarewrite.so, each with its line ($(grep -c '^OPEN: ' "$INV") marked OPEN)"
else
	echo "FAIL inventory: see above; add or remove lines in $INV"
fi
exit $fail
