#!/bin/sh
# SPDX-License-Identifier: MIT
# check-deb.sh BUILD_DIR: the Debian packages, end to end (as root).
#  1. as a buildd builds them: a clean Debian 12 chroot (debootstrap
#     --variant=buildd: essential packages and build-essential) with the
#     Build-Depends alone, the source (git's file list) in /build,
#     dpkg-buildpackage -us -uc -b as user nobody without network, tests on
#     (make check, debian/rules), so a tool make check needs and
#     Build-Depends lacks fails here;
#  2. reproducible: a second build of the same source on this machine, in
#     another folder, later, as root, with another umask, time zone and
#     locale, must give byte-identical .deb files (sha256); a third that
#     records its folder in the objects must not (the control);
#  3. lintian on the first build: no error or warning;
#  4. the symbols file fails the build when an exported symbol disappears:
#     dpkg-gensymbols -c1, as dh_makeshlibs runs it, on the library relinked
#     without rare_realloc must fail;
#  5. install the packages with dpkg -i; autopkgtest (debian/tests: the
#     suite built against them, every backend); examples/handlers.c built
#     with `pkg-config --cflags --libs rarewrite` alone runs on every
#     backend; man finds and renders the installed pages;
#  6. purge the packages on every exit path (KEEP_DEB=1 keeps them, and the
#     chroot), so the system library never shadows the tree's build in
#     other lanes.
# DEB_MIRROR: the archive for the chroot (default: deb.debian.org).
# DEB_RACE_SCALE: RAREWRITE_TEST_RACE_SCALE (tests/attack.h) for the suite
# of the build (1) and of autopkgtest (5): the races of the cells the attack
# table expects blocked run this part of their budget (default 0.25; make
# check has run them whole; 1: whole here too). Every race still runs and
# still fails when it lands.
set -eu
B=$1
top=$(pwd)
out=$top/$B/deb
ver=$(dpkg-parsechangelog -S Version)
name=librarewrite-${ver%-*}
mirror=${DEB_MIRROR:-http://deb.debian.org/debian}
suite=bookworm
race_scale=${DEB_RACE_SCALE:-0.25}
[ "$(id -u)" = 0 ] || { echo "check-deb: run as root (chroot, dpkg -i)"; exit 1; }
# The tools of this lane (make check's are Build-Depends, in the chroot).
need=
for t in debootstrap:debootstrap autopkgtest:autopkgtest lintian:lintian \
	dpkg-buildpackage:dpkg-dev dh:debhelper unshare:util-linux; do
	command -v "${t%%:*}" >/dev/null || need="$need ${t#*:}"
done
if [ -n "$need" ]; then
	echo "check-deb: apt-get install$need"
	# shellcheck disable=SC2086
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $need
fi
rm -rf "$out"
mkdir -p "$out"
step() { echo "check-deb: $* ($(date -u +%H:%M:%S))"; }
copy_source() {
	mkdir -p "$1"
	git ls-files -co --exclude-standard -z | xargs -0 cp --parents -t "$1" --
	[ -x "$1/debian/rules" ]
}
failed() {
	# The failed cases first: the log's tail may not reach them.
	grep -E '^FAIL ' "$1" || :
	tail -n 40 "$1"
	echo "check-deb: $2 (log: $1)"
	exit 1
}

# 1. The buildd build. unshare: a mount namespace for the chroot's /proc
# (gone with the build, nothing to unmount on any exit path), a PID
# namespace, and no network for the build itself.
root=$out/chroot
# The .debs cache check-fresh's debootstrap shares (tests/check-fresh.sh).
debs=/var/cache/rarewrite-debootstrap
mkdir -p "$debs"
step "debootstrap --variant=buildd $suite (log: $B/deb/debootstrap.log)"
# Twice, as .ci/run's apt-get: the mirror syncs while we read it.
debootstrap --variant=buildd --cache-dir="$debs" "$suite" "$root" "$mirror" >"$out/debootstrap.log" 2>&1 || {
	echo "check-deb: debootstrap failed, again in 30s"
	sleep 30
	rm -rf "$root"
	debootstrap --variant=buildd --cache-dir="$debs" "$suite" "$root" "$mirror" >"$out/debootstrap.log" 2>&1
} || failed "$out/debootstrap.log" "debootstrap failed"
cat >"$root/etc/apt/sources.list" <<EOF
deb $mirror $suite main
deb $mirror $suite-updates main
deb ${mirror%/debian}/debian-security $suite-security main
EOF
echo 'Acquire::Retries "5";' >"$root/etc/apt/apt.conf.d/80retries"
cp /etc/resolv.conf "$root/etc/resolv.conf"
copy_source "$root/build/$name"
step "the Build-Depends in the chroot (log: $B/deb/build-dep.log)"
build_dep() {
	chroot "$root" sh -c "apt-get update -q && cd /build/$name &&
		DEBIAN_FRONTEND=noninteractive apt-get build-dep -y -q --no-install-recommends ./" \
		>>"$out/build-dep.log" 2>&1
}
build_dep || { sleep 30 && build_dep; } || failed "$out/build-dep.log" "apt-get build-dep failed"
chown -R nobody:nogroup "$root/build"
step "dpkg-buildpackage -us -uc -b in the chroot, user nobody, no network, tests on, race scale $race_scale (log: $B/deb/build.log)"
unshare --net --mount --pid --fork --mount-proc="$root/proc" \
	chroot --userspec=nobody:nogroup "$root" \
	env -i PATH=/usr/bin:/bin HOME=/build LANG=C.UTF-8 \
	RAREWRITE_TEST_RACE_SCALE="$race_scale" \
	sh -c "cd /build/$name && dpkg-buildpackage -us -uc -b" >"$out/build.log" 2>&1 ||
	failed "$out/build.log" "dpkg-buildpackage failed"
grep -E '^[0-9]+ passed, 0 failed' "$out/build.log" >/dev/null || failed "$out/build.log" "the test step did not run"
grep -E '^[0-9]+ passed, [0-9]+ failed' "$out/build.log" | tail -n 1
mkdir -p "$out/first"
cp "$root/build/"*.deb "$root/build/"*.changes "$root/build/"*.buildinfo "$out/first/"

# 2. The second build. Without the test step (nocheck): make check writes
# only below debian/build (tests, stages), never debian/tmp or the package
# folders, so a .deb that differs from the first (tests on) would be a
# finding either way, and the suite has just run.
src=$out/second/another/folder/$name
copy_source "$src"
step "the second build: $src, nocheck, umask 002, TZ=Asia/Tokyo, LC_ALL=C (log: $B/deb/build2.log)"
(cd "$src" && umask 002 && TZ=Asia/Tokyo LC_ALL=C DEB_BUILD_OPTIONS="nocheck" \
	dpkg-buildpackage -us -uc -b) >"$out/build2.log" 2>&1 ||
	failed "$out/build2.log" "the second dpkg-buildpackage failed"
# same_debs DIR1 DIR2: the same .deb files, byte for byte.
same_debs() {
	debs1=$(cd "$1" && ls ./*.deb)
	debs2=$(cd "$2" && ls ./*.deb)
	[ "$debs1" = "$debs2" ] || { echo "check-deb: other packages: $debs1 / $debs2"; return 1; }
	for deb in $debs1; do
		a=$(sha256sum <"$1/$deb" | cut -d' ' -f1)
		b=$(sha256sum <"$2/$deb" | cut -d' ' -f1)
		if [ "$a" != "$b" ]; then
			echo "check-deb: ${deb#./} differs between the two builds ($a, $b)"
			return 1
		fi
		echo "check-deb: reproducible: ${deb#./} $a"
	done
}
if ! same_debs "$out/first" "$src/.."; then
	command -v diffoscope >/dev/null && diffoscope "$out/first" "$src/.." | head -n 80
	exit 1
fi
# The control: a third build that leaks its folder into the objects (the
# build flags without -ffile-prefix-map) must differ, so the comparison
# sees what the folders change.
leak=$out/third/$name
copy_source "$leak"
step "control: a build that records its folder must differ (log: $B/deb/build3.log)"
(cd "$leak" && DEB_BUILD_OPTIONS=nocheck DEB_CFLAGS_STRIP="-ffile-prefix-map=$leak=." \
	dpkg-buildpackage -us -uc -b) >"$out/build3.log" 2>&1 ||
	failed "$out/build3.log" "the control build failed"
if same_debs "$out/first" "$leak/.." >"$out/control.txt"; then
	cat "$out/control.txt"
	echo "check-deb: the control build leaked its folder, but the comparison saw no difference"
	exit 1
fi
tail -n 1 "$out/control.txt"

changes=$(ls "$out/first/"librarewrite_*.changes)
step "lintian"
lintian --fail-on error,warning --info "$changes" >"$out/lintian.txt" 2>&1 || {
	cat "$out/lintian.txt"
	echo "check-deb: lintian reports errors or warnings"
	exit 1
}
cat "$out/lintian.txt"

step "a lost symbol must fail the symbols check"
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
	# shellcheck disable=SC2064 # $root is fixed now
	trap "dpkg --purge librarewrite-dev librarewrite0-dbgsym librarewrite0 >/dev/null 2>&1 || true; rm -rf '$root'" EXIT
	trap 'exit 1' HUP INT TERM
fi
step "dpkg -i"
dpkg -i "$out/first/"librarewrite0_*.deb "$out/first/"librarewrite0-dbgsym_*.deb \
	"$out/first/"librarewrite-dev_*.deb

# -B: the packages just installed, not a build of its own; null: here.
step "autopkgtest (debian/tests, race scale $race_scale, log: $B/deb/autopkgtest.log)"
rc=0
# The scribbler, in-flight and lock races ran in the build's tests above,
# on the library these packages hold: the autopkgtest runs the rest.
autopkgtest -B --env="RAREWRITE_TEST_RACE_SCALE=$race_scale" \
	--env="INSTALLED_SUITE_LEAVE_OUT=attack_scribble attack_inflight attack_lock" \
	--output-dir "$out/autopkgtest" "$src" -- null >"$out/autopkgtest.log" 2>&1 || rc=$?
grep -h '^installed-suite:' "$out/autopkgtest/"*-stdout 2>/dev/null || true
cat "$out/autopkgtest/summary" 2>/dev/null || true
[ "$rc" -eq 0 ] || failed "$out/autopkgtest.log" "autopkgtest exited $rc"

step "the demo against the installed packages, pkg-config alone"
cd "$out"
flags=$(env -u PKG_CONFIG_PATH pkg-config --cflags --libs rarewrite)
echo "cc examples/handlers.c $flags"
# shellcheck disable=SC2086 # pkg-config's flags are words
cc "$top/examples/handlers.c" -o handlers $flags
ldd ./handlers | grep -Eq "librarewrite.so.0 => (/usr)?/lib/x86_64-linux-gnu/librarewrite.so.0" || {
	ldd ./handlers
	echo "check-deb: handlers does not use the installed library"
	exit 1
}
# the installed library's list of backends (rare_write_backends(3))
# shellcheck disable=SC2086
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

for page in rare_write rare_realloc rarewrite; do
	path=$(man -w "$page")
	case $path in /usr/share/man/*) ;; *) echo "check-deb: man -w $page: $path"; exit 1 ;; esac
	MANWIDTH=80 man --warnings -E UTF-8 "$page" 2>man.err >/dev/null
	[ ! -s man.err ] || { cat man.err; exit 1; }
done
step "ok"
