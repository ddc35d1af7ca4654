# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# kernel/lib.sh: what kernel/run, run-arm, run-debug and bisect-build share.
# Sourced, not run. Expects KDIR (this directory) to be set.

# The configuration fragments (kernel/configs/), used by the scripts that
# source this file.
# shellcheck disable=SC2034
X86_CONFIG=$KDIR/configs/x86.config
ARM_CONFIG=$KDIR/configs/arm.config
DEBUG_CONFIG=$KDIR/configs/debug.config

# The series in apply order: every kernel/patches/NNNN-*.patch except the
# cover letter (0000), which carries no diff for git am.
series_patches() {
	local p
	for p in "$KDIR"/patches/[0-9][0-9][0-9][0-9]-*.patch; do
		[ "${p##*/}" = 0000-cover-letter.patch ] || printf '%s\n' "$p"
	done
}

# A hash of the series, to know whether a tree holds the current one.
series_stamp() {
	series_patches | xargs cat | sha256sum | cut -d' ' -f1
}
