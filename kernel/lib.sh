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

# The series in apply order: first the PKS series it is based on
# (kernel/pks/, supervisor protection keys, a prerequisite of its own),
# then the rare_write series (kernel/patches/); in each, every
# NNNN-*.patch except the cover letter (0000), which carries no diff for
# git am.
series_patches() {
	local d p
	for d in pks patches; do
		for p in "$KDIR/$d"/[0-9][0-9][0-9][0-9]-*.patch; do
			[ "${p##*/}" = 0000-cover-letter.patch ] ||
				printf '%s\n' "$p"
		done
	done
}

# Out-of-tree patches the harness applies on top of the series, in order:
# kernel/bench/NNNN-*.patch (the CR0.WP comparison backend). They are not
# part of the series a maintainer reads.
bench_patches() {
	local p
	for p in "$KDIR"/bench/[0-9][0-9][0-9][0-9]-*.patch; do
		[ -e "$p" ] && printf '%s\n' "$p"
	done
	return 0
}

# Everything kernel/run applies with git am: the series, then bench/.
applied_patches() {
	series_patches
	bench_patches
}

# A hash of the series, to know whether a tree holds the current one
# (written to .git/rarewrite-series by whoever applied it).
series_stamp() {
	series_patches | xargs cat | sha256sum | cut -d' ' -f1
}

# The same for the series plus bench/ (kernel/run's .git/rarewrite-applied).
applied_stamp() {
	applied_patches | xargs cat | sha256sum | cut -d' ' -f1
}
