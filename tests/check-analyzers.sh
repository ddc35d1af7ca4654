#!/bin/sh
# SPDX-License-Identifier: MIT
# check-analyzers.sh scan-build|fanalyzer MAKE: build the library under
# clang's static analyser (scan-build --status-bugs) or gcc -fanalyzer and
# compare the findings, "tool file checker", with tests/analyzers.pending
# (findings in files of other owners that they have been told of). Any
# other finding fails; a pending one no longer found is reported.
set -eu
tool=$1
MAKE=${2:-make}
unset MAKEFLAGS MFLAGS
b=build/$tool
rm -rf "$b"
mkdir -p "$b"
status=0
# $MAKE may be several words
# shellcheck disable=SC2086
case $tool in
scan-build)
	scan-build --status-bugs -o "$b/report" $MAKE -k B="$b" all >"$b/log" 2>&1 || status=$?
	sed -n 's/^\(src\/[^:]*\):[0-9]*:[0-9]*: warning: .* \[\([a-zA-Z.]*\)\]$/scan-build \1 \2/p' "$b/log" ;;
fanalyzer)
	$MAKE -k B="$b" EXTRA_CFLAGS="-fanalyzer -Werror" all >"$b/log" 2>&1 || status=$?
	sed -n 's/^\(src\/[^:]*\):[0-9]*:[0-9]*: error: .*\[-Werror=\(analyzer-[a-z-]*\)\]$/fanalyzer \1 -W\2/p' "$b/log" ;;
*)
	echo "usage: check-analyzers.sh scan-build|fanalyzer [MAKE]" >&2
	exit 2 ;;
esac >"$b/found"
sort -u "$b/found" >"$b/findings"
grep "^$tool " tests/analyzers.pending | sort -u >"$b/pending"
new=$(comm -23 "$b/findings" "$b/pending")
gone=$(comm -13 "$b/findings" "$b/pending")
[ -z "$gone" ] || echo "check-analyzers: gone, remove from tests/analyzers.pending: $gone"
if [ -n "$new" ]; then
	echo "check-analyzers: $tool: new findings:"
	echo "$new"
	grep -E 'warning:|error:' "$b/log" | grep -v 'warnings being treated' || true
	exit 1
fi
if [ "$status" -ne 0 ] && [ ! -s "$b/findings" ]; then
	echo "check-analyzers: $tool failed without a finding:"
	tail -20 "$b/log"
	exit 1
fi
echo "check-analyzers: $tool: no new finding ($(wc -l <"$b/findings") pending with their owners)"
