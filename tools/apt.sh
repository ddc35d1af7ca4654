# SPDX-License-Identifier: MIT
# shellcheck shell=sh
# apt_update, apt_install PKG...: apt-get that survives a Debian mirror
# caught mid-sync. Sourced by tools/need-packages (make check, check-vm)
# and .ci/run, as root; POSIX sh (no `local`: the loop variable is apt_try).
#
# The archive is a mirror that syncs while we read it: an index can come
# with the wrong size ("Mirror sync in progress?") and apt-get update then
# exits 100. Every fetch is retried (Acquire::Retries); update and install
# are tried again after a pause, and an index that still fails after the
# last try is left out (seen: bookworm-security's armhf index, for minutes):
# install then names any package it cannot find.

# (and another apt-get's lock is waited for, not an error)
APT_GET="apt-get -o Acquire::Retries=5 -o DPkg::Lock::Timeout=600"

apt_update() {
	for apt_try in 1 2 3; do
		DEBIAN_FRONTEND=noninteractive $APT_GET update -q && return 0
		[ $apt_try = 3 ] && break
		echo "apt-get update failed (try $apt_try of 3), again in $((apt_try * 15))s" >&2
		sleep $((apt_try * 15))
	done
	echo "apt-get update: index files still failing after 3 tries; going on without them" >&2
}

apt_install() {
	for apt_try in 1 2; do
		DEBIAN_FRONTEND=noninteractive $APT_GET install -y -q \
			--no-install-recommends "$@" && return 0
		echo "apt-get install failed (try $apt_try), again in 30s" >&2
		sleep 30
		apt_update
	done
	DEBIAN_FRONTEND=noninteractive $APT_GET install -y -q --no-install-recommends "$@"
}
