#!/bin/sh
# SPDX-License-Identifier: MIT
# check-export.sh BUILD_DIR CC BACKENDS: the exported protected variable of
# examples/export/ (the recipe of __wr_rare(3)), built by tests/contracts.mk:
#  1. libfoo exports the accessor foo_policy_rare_ref@@FOO_1.1 and no
#     symbol for the variable itself (its size is not ABI);
#  2. the PIE program has no copy relocation, reads and writes the policy
#     through the accessor on every backend of BACKENDS (those that start
#     here: tools/backends --available), and a plain store dies;
#  3. in check mode a plain store to foo_policy in a file that sees only
#     foo.h is a write site.
set -eu
B=$1
CC=${2:-cc}
BACKENDS=${3:-}
[ -n "$BACKENDS" ] || { echo "check-export: no backend starts here" >&2; exit 1; }
e=$B/export
fail=0
bad() {
	echo "check-export: $*" >&2
	fail=1
}
objdump -T "$e/libfoo.so" | grep -q 'FOO_1.1  *foo_policy_rare_ref$' ||
	bad "libfoo.so does not export foo_policy_rare_ref@@FOO_1.1"
objdump -T "$e/libfoo.so" | grep -q ' foo_policy$' &&
	bad "libfoo.so exports the variable foo_policy itself"
readelf -r "$e/foo_main" | grep -q "R_X86_64_COPY.*foo" && bad "foo_main has a copy relocation of a libfoo symbol"
for b in $BACKENDS; do
	RAREWRITE_BACKEND=$b "$e/foo_main" >"$e/run.log" 2>&1 ||
		bad "foo_main on $b: status $? ($(cat "$e/run.log"))"
done
printf '#include "foo.h"\nvoid set(void)\n{\n\tfoo_policy.level = 3;\n}\n' >"$e/store.c"
if tools/rarewrite-cc --check-only "$CC" -Iinclude -Iexamples/export -c "$e/store.c" 2>"$e/sites"; then
	bad "check mode did not flag a store through foo.h"
fi
grep -q "store.c:4: rarewrite: write site" "$e/sites" || bad "check mode: $(cat "$e/sites")"
[ $fail -eq 0 ] && echo "check-export: ok (accessor in FOO_1.1, no variable symbol, no copy relocation, $BACKENDS, check mode sees the header)"
exit $fail
