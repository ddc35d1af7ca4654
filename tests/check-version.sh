#!/bin/sh
# SPDX-License-Identifier: MIT
# check-version.sh BUILD_DIR CC: VERSION is the one version of the tree.
# Generated from it: the library's file name and soname, rarewrite.pc
# (BUILD_DIR/rarewrite.pc, as make install writes it), the CMake package.
# Checked against it here: the header's RAREWRITE_VERSION_*, what
# rare_write_version() returns, every man page's .TH line (version, and
# the date of the release's debian/changelog entry), debian/changelog.
set -eu
B=$1
CC=${2:-cc}
fail=0
bad() {
	echo "check-version: $*" >&2
	fail=1
}
v=$(cat VERSION)
echo "$v" | grep -Eqx '[0-9]+\.[0-9]+\.[0-9]+' || bad "VERSION is not MAJOR.MINOR.PATCH: '$v'"
major=${v%%.*}
rest=${v#*.}
minor=${rest%%.*}
patch=${rest#*.}

for part in MAJOR:$major MINOR:$minor PATCH:$patch; do
	got=$(sed -n "s/^#define RAREWRITE_VERSION_${part%%:*} \([0-9]*\)$/\1/p" include/rarewrite.h)
	[ "$got" = "${part#*:}" ] || bad "include/rarewrite.h: RAREWRITE_VERSION_${part%%:*} is '$got', VERSION says ${part#*:}"
done

[ -f "$B/librarewrite.so.$v" ] || bad "$B/librarewrite.so.$v missing"
[ "$(readlink "$B/librarewrite.so.$major")" = "librarewrite.so.$v" ] ||
	bad "$B/librarewrite.so.$major does not link to librarewrite.so.$v"
soname=$(readelf -d "$B/librarewrite.so.$v" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = "librarewrite.so.$major" ] || bad "soname is '$soname', want librarewrite.so.$major"

pcv=$(PKG_CONFIG_PATH="$B" pkg-config --modversion rarewrite)
[ "$pcv" = "$v" ] || bad "rarewrite.pc says $pcv"

# the library running says the version too
cat >"$B/version-probe.c" <<'PROBE'
#include <stdio.h>
#include <rarewrite.h>
int main(void)
{
	unsigned v = rare_write_version();
	printf("%u.%u.%u\n", v >> 16, (v >> 8) & 0xff, v & 0xff);
	return 0;
}
PROBE
$CC -Iinclude "$B/version-probe.c" -o "$B/version-probe" -L"$B" -lrarewrite \
	-Wl,-rpath,"$(cd "$B" && pwd)"
run=$("$B/version-probe")
[ "$run" = "$v" ] || bad "rare_write_version() says $run"

# debian/changelog: its newest entry is this version; its date is the
# release date the manual carries
top=$(sed -n '1s/^librarewrite (\([^)]*\)).*/\1/p' debian/changelog)
[ "${top%-*}" = "$v" ] || bad "debian/changelog's newest entry is $top"
date=$(sed -n '/^ -- /{s/.*>  //p; q}' debian/changelog)
day=$(date -u -d "$date" +%Y-%m-%d) || bad "debian/changelog: cannot read the date '$date'"
for page in man/man1/*.1 man/man3/*.3 man/man7/*.7; do
	th=$(sed -n 's/^\.TH [^ ]* [0-9] \([^ ]*\) "librarewrite \([^"]*\)".*/\1 \2/p' "$page")
	[ "$th" = "$day $v" ] || bad "$page: .TH says '$th', want '$day $v' (release date, VERSION)"
done

[ $fail -eq 0 ] && echo "check-version: ok ($v: header, librarewrite.so.$v, soname librarewrite.so.$major, rarewrite.pc, rare_write_version(), $(find man -name '*.[137]' | wc -l) man pages dated $day, debian/changelog)"
exit $fail
