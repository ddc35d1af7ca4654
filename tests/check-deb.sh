#!/bin/sh
# SPDX-License-Identifier: MIT
# check-deb.sh BUILD_DIR: the Debian packages, end to end.
#  1. copy the source (git's file list) to BUILD_DIR/deb/ and build the
#     packages there with dpkg-buildpackage -us -uc -b, so nothing is
#     written into the source tree;
#  2. lintian on the result: no error or warning (tags justified in
#     debian/*.lintian-overrides only);
#  3. the symbols file fails the build when an exported symbol disappears:
#     dpkg-gensymbols -c1, as dh_makeshlibs runs it, on the library relinked
#     without rare_realloc must fail;
#  4. install both packages with dpkg -i, build examples/handlers.c with
#     `pkg-config --cflags --libs rarewrite` alone and run it on every
#     backend; man finds and renders the installed pages;
#  5. purge the packages again (KEEP_DEB=1 keeps them), so the system
#     library never shadows the tree's build in other lanes.
set -eu
B=$1
top=$(pwd)
out=$top/$B/deb
ver=$(dpkg-parsechangelog -S Version)
src=$out/librarewrite-${ver%-*}
rm -rf "$out"
mkdir -p "$src"
git ls-files -co --exclude-standard -z | xargs -0 cp --parents -t "$src" --
[ -x "$src/debian/rules" ]

echo "check-deb: dpkg-buildpackage -us -uc -b (log: $B/deb/build.log)"
(cd "$src" && DEB_BUILD_OPTIONS="nocheck ${DEB_BUILD_OPTIONS:-}" \
	dpkg-buildpackage -us -uc -b) >"$out/build.log" 2>&1 || {
	tail -30 "$out/build.log"
	echo "check-deb: dpkg-buildpackage failed"
	exit 1
}
changes=$(ls "$out"/librarewrite_*.changes)
ls "$out"/*.deb

echo "check-deb: lintian"
lintian --fail-on error,warning --info "$changes" >"$out/lintian.txt" 2>&1 || {
	cat "$out/lintian.txt"
	echo "check-deb: lintian reports errors or warnings"
	exit 1
}
cat "$out/lintian.txt"

echo "check-deb: a lost symbol must fail the symbols check"
neg=$out/lost-symbol
mkdir -p "$neg"
objdump -T "$src/debian/librarewrite0/usr/lib/"*/librarewrite.so.0 | grep -q ' rare_realloc$'
sed 's/^\t\trare_realloc;$//; s/^\tlocal:$/\tlocal:\n\t\trare_realloc;/' \
	"$src/src/exports.map" >"$neg/exports.map"
cc -shared -o "$neg/librarewrite.so.0" "$src"/debian/build/src/*.o \
	"$src"/debian/build/src/backend/*.o -Wl,--version-script="$neg/exports.map" \
	-Wl,-soname,librarewrite.so.0 -pthread
if objdump -T "$neg/librarewrite.so.0" | grep -q ' rare_realloc$'; then
	echo "check-deb: the relinked library still exports rare_realloc"
	exit 1
fi
if (cd "$src" && dpkg-gensymbols -plibrarewrite0 -v"$ver" -c1 \
	-P"$neg" -e"$neg/librarewrite.so.0" -O"$neg/symbols") >"$neg/log" 2>&1; then
	cat "$neg/log"
	echo "check-deb: dpkg-gensymbols accepted a library without rare_realloc"
	exit 1
fi
grep -q 'rare_realloc@RAREWRITE_0.1' "$neg/log" || {
	cat "$neg/log"
	echo "check-deb: the symbols check failed, but not for rare_realloc"
	exit 1
}
sed -n '/disappeared/p; /^-.*rare_realloc/p' "$neg/log"

if [ "${KEEP_DEB:-0}" != 1 ]; then
	trap 'dpkg --purge librarewrite-dev librarewrite0 >/dev/null 2>&1 || true' EXIT
fi
echo "check-deb: dpkg -i"
dpkg -i "$out"/librarewrite0_*.deb "$out"/librarewrite-dev_*.deb

echo "check-deb: the demo against the installed packages, pkg-config alone"
cd "$out"
flags=$(env -u PKG_CONFIG_PATH pkg-config --cflags --libs rarewrite)
echo "cc examples/handlers.c $flags"
cc "$top/examples/handlers.c" -o handlers $flags
ldd ./handlers | grep -Eq "librarewrite.so.0 => (/usr)?/lib/x86_64-linux-gnu/librarewrite.so.0" || {
	ldd ./handlers
	echo "check-deb: handlers does not use the installed library"
	exit 1
}
# the installed library's list of backends (rare_write_backends(3))
cc "$top/tools/backends.c" -o backends $flags
for b in auto $(./backends); do
	rc=0
	RAREWRITE_BACKEND=$b ./handlers >"demo-$b.log" 2>&1 || rc=$?
	# 2: the backend is not available here (the demo's convention)
	case $rc in
	0) echo "check-deb: demo on $b: ok" ;;
	2) echo "check-deb: demo on $b: not available here" ;;
	*) cat "demo-$b.log"; echo "check-deb: demo on $b failed ($rc)"; exit 1 ;;
	esac
done

for name in rare_write rare_realloc rarewrite; do
	page=$(man -w "$name")
	case $page in /usr/share/man/*) ;; *) echo "check-deb: man -w $name: $page"; exit 1 ;; esac
	MANWIDTH=80 man --warnings -E UTF-8 "$name" 2>man.err >/dev/null
	[ ! -s man.err ] || { cat man.err; exit 1; }
done
echo "check-deb: ok"
