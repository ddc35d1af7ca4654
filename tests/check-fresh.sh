#!/bin/sh
# SPDX-License-Identifier: MIT
#
# check-fresh.sh - the README's two commands on a fresh Debian 12, as root:
# debootstrap bookworm (minbase with build-essential and git) into a scratch
# folder, git clone this checkout's HEAD into it (what is not committed is
# not tested), and run `make demo` and `make check` there as root, so that
# make check has to install what its lanes need by itself. Before, as
# nobody, make check must stop at the one apt-get line, building nothing;
# after, with everything installed, its package check needs no root.
#
# The chroot's apt reaches the archive as the host's does: the host's
# sources (and the keyrings they name) and its Acquire settings (retries,
# proxy, date checks) are copied in. Everything that mounts (debootstrap's
# own /proc, then /proc, /sys, /dev and a fresh /dev/shm for the tests)
# runs in a mount namespace of its own (unshare -m), so the mounts go away
# with it on every exit path, a killed run included; the scratch folder is
# removed at exit (rm --one-file-system).
#
# Environment: FRESH_MIRROR (default: the host's bookworm archive),
# FRESH_KEEP=1 keeps the scratch folder, TMPDIR where it goes.
set -eu

say() { echo "check-fresh: $*"; }
die() { say "$*" >&2; exit 1; }

# --- inside the mount namespace: check-fresh.sh --inside WORK MIRROR ---------
if [ "${1:-}" = --inside ]; then
	work=$2 mirror=$3
	root=$work/root
	t0=$(date +%s)
	say "debootstrap bookworm (minbase, build-essential, git) from $mirror"
	# The .debs stay in a cache that check-deb's debootstrap also reads
	# (it then fetches only what it lacks); debootstrap checks each one
	# against the archive's index.
	mkdir -p /var/cache/rarewrite-debootstrap
	debootstrap --variant=minbase --include=build-essential,git \
		--cache-dir=/var/cache/rarewrite-debootstrap bookworm \
		"$root" "$mirror" >"$work/debootstrap.log" 2>&1 ||
		{ tail -20 "$work/debootstrap.log"; die "debootstrap failed"; }
	t1=$(date +%s)
	say "debootstrap: $((t1 - t0)) s, $(du -sm "$root" | cut -f1) MB"

	# apt as on the host: sources, the keyrings they name, Acquire settings.
	rm -f "$root"/etc/apt/sources.list "$root"/etc/apt/sources.list.d/*
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list \
		/etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		cp "$f" "$root$f"
		sed -n 's/.*[Ss]igned-[Bb]y[:=] *\([^] ]*\).*/\1/p' "$f" | while read -r key; do
			if [ -f "$key" ] && [ ! -e "$root$key" ]; then
				mkdir -p "$(dirname "$root$key")"
				cp "$key" "$root$key"
			fi
		done
	done
	for f in /etc/apt/apt.conf.d/*; do
		if grep -qE 'Acquire::(Retries|Check-Valid-Until|Check-Date|https?::Proxy)' "$f"; then
			cp "$f" "$root$f"
		fi
	done
	cp -L /etc/resolv.conf "$root/etc/resolv.conf"
	mv "$work/rarewrite" "$root/root/rarewrite"

	mount -t proc proc "$root/proc"
	mount -t sysfs sys "$root/sys"
	mount --bind /dev "$root/dev"
	mount -t tmpfs -o mode=1777,nosuid,nodev shm "$root/dev/shm"
	in_root() {
		chroot "$root" /usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 \
			PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$@"
	}
	as_nobody() {
		in_root setpriv --reuid=65534 --regid=65534 --clear-groups "$@"
	}
	set +e
	# Not root, packages missing: make check names them in one apt-get
	# line and stops before building anything.
	in_root sh -c 'git clone -q /root/rarewrite /tmp/user && chown -R 65534 /tmp/user'
	as_nobody sh -c 'cd /tmp/user && make check' >"$work/user.log" 2>&1
	urc=$?
	line=$(grep '^apt-get install ' "$work/user.log")
	if [ $urc = 0 ] || [ -z "$line" ] || [ -e "$root/tmp/user/build" ]; then
		cat "$work/user.log"
		say "FAIL: make check as nobody (status $urc) did not stop at the apt-get line before building"
		exit 1
	fi
	say "make check as nobody: stops at '$line'"

	say "make demo and make check, as root"
	in_root sh -c 'cd /root/rarewrite && make demo && make check' >"$work/make.log" 2>&1
	rc=$?
	# With everything installed, no root is needed and nothing is done.
	if ! out=$(as_nobody sh -c 'cd /tmp/user && tools/need-packages check' 2>&1) ||
		[ -n "$out" ]; then
		say "FAIL: tools/need-packages check as nobody after the install: $out"
		rc=1
	fi
	umount -l "$root/dev/shm" "$root/dev" "$root/sys" "$root/proc"
	t2=$(date +%s)
	grep -E '^need-packages:|^check-cxx: [0-9]|^[0-9]+ passed, [0-9]+ failed' "$work/make.log" || true
	[ $rc = 0 ] || { tail -40 "$work/make.log"; say "FAIL: make demo && make check exited $rc"; }
	say "debootstrap $((t1 - t0)) s; make demo, make check (packages included) $((t2 - t1)) s"
	exit $rc
fi

# --- outside: the scratch folder, the clone, the namespace -----------------
top=$(cd "$(dirname "$0")/.." && pwd)
[ "$(id -u)" = 0 ] || die "needs root (debootstrap, chroot, mount)"
for t in debootstrap unshare git; do
	command -v $t >/dev/null || die "$t not found (tools/packages, section [ci])"
done
git -C "$top" diff --quiet HEAD || say "uncommitted changes are not tested"

# shellcheck disable=SC2016 # apt-get's own $(SITE) fields
mirror=${FRESH_MIRROR:-$(apt-get indextargets --format '$(SITE) $(RELEASE)' \
	'Created-By: Packages' 2>/dev/null | awk '$2 == "bookworm" { print $1; exit }')}
mirror=${mirror:-http://deb.debian.org/debian}

work=$(mktemp -d "${TMPDIR:-/tmp}/check-fresh.XXXXXX")
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
	rc=$?
	if [ "${FRESH_KEEP:-0}" = 1 ]; then
		say "kept $work"
	else
		# The mounts lived in the namespace of `unshare -m`, not here;
		# --one-file-system would stop at any that did not.
		rm -rf --one-file-system "$work"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM

git clone -q --no-hardlinks "$top" "$work/rarewrite"
git -C "$work/rarewrite" fetch -q "$top" HEAD
git -C "$work/rarewrite" checkout -q --detach FETCH_HEAD
say "clone of $(git -C "$work/rarewrite" log --oneline -1)"

set +e
unshare -m --propagation private sh "$top/tests/check-fresh.sh" --inside "$work" "$mirror"
rc=$?
set -e
[ $rc = 0 ] && say "ok: $(tail -n 1 "$work/make.log")"
exit $rc
