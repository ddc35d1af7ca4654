# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# kernel/lib.sh: what kernel/run, run-arm, run-debug and bisect-build share.
# Sourced, not run. Expects KDIR (this directory) to be set.

# The configuration fragments (kernel/configs/), used by the scripts that
# source this file.
# shellcheck disable=SC2034
X86_CONFIG=$KDIR/configs/x86.config
ARM_CONFIG=$KDIR/configs/arm.config
ARM64_CONFIG=$KDIR/configs/arm64.config
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

# Cases that skip by design, as BACKEND:NAME (a KUnit case, or an lkdtm
# test printing "XFAIL:"): there they must skip, and say why; a skip
# anywhere else fails the lane, and so does a listed case that ran.
#   mm:rw_every_cpu_closed        any context switch unloads mm's alias:
#                                 an Oopsed window would look closed
#   pks|cr0:rw_end_restores_loaded_mm   only mm switches mm
#   mm|cr0:RARE_WRITE_NMI_STATE   only pks keeps NMI state (in PKRS)
#   mm|cr0:RARE_WRITE_FORGED_CLOSE   only pks closes with a register write
#                                 that is read back
#   alias:rw_end_restores_loaded_mm, alias:RARE_WRITE_NMI_STATE,
#   alias:RARE_WRITE_FORGED_CLOSE    as on cr0
EXPECTED_SKIPS="mm:rw_every_cpu_closed pks:rw_end_restores_loaded_mm
cr0:rw_end_restores_loaded_mm mm:RARE_WRITE_NMI_STATE cr0:RARE_WRITE_NMI_STATE
mm:RARE_WRITE_FORGED_CLOSE cr0:RARE_WRITE_FORGED_CLOSE
alias:rw_end_restores_loaded_mm alias:RARE_WRITE_NMI_STATE
alias:RARE_WRITE_FORGED_CLOSE"
skip_expected() { # backend name
	case " $(tr '\n' ' ' <<< "$EXPECTED_SKIPS") " in
	*" $1:$2 "*) return 0 ;;
	esac
	return 1
}

# kunit_check LABEL LOG BEGIN-MARKER END-MARKER BACKEND: every case result
# of the KTAP suite init ran between the two markers, through the caller's
# ok/bad/skipped; then the number of results against the suite's plan
# ("1..N", summed over the suites run there): a suite that died halfway
# printed fewer results than planned.
kunit_check() {
	local seg plan line name n=0
	seg=$(sed -n "/^RWTEST: $3\$/,/^RWTEST: $4\$/p" "$2")
	# one plan per suite run between the markers (init may run several)
	plan=$(sed -nE 's/^ +1\.\.([0-9]+)$/\1/p' <<< "$seg" |
		awk '{ s += $1; n++ } END { if (n) print s }')
	while IFS= read -r line; do
		name=$(sed -E 's/^ +(not )?ok [0-9]+ ([^ #]+).*/\2/' <<< "$line")
		n=$((n + 1))
		case "$line" in
		*"not ok "*)
			bad "$1 $name" ;;
		*"# SKIP"*)
			if skip_expected "$5" "$name"; then
				skipped "$1 $name (${line#*# SKIP })"
			else
				bad "$1 $name: skipped (${line#*# SKIP })"
			fi ;;
		*)
			if skip_expected "$5" "$name"; then
				bad "$1 $name: ran, but EXPECTED_SKIPS says it skips on $5"
			else
				ok "$1 $name"
			fi ;;
		esac
	done < <(grep -E '^ +(not )?ok [0-9]+ ' <<< "$seg" || true)
	if [ -z "$plan" ]; then
		bad "$1: no KTAP plan (1..N): the suite did not start"
	elif [ "$n" -ne "$plan" ]; then
		bad "$1: $n results for the plan 1..$plan: the suite died halfway"
	else
		ok "$1: $n results, as its plan 1..$plan says"
	fi
}

# crash_xfail BACKEND NAME SEGMENT LABEL: for a crash test whose log
# segment says "XFAIL:", a skip where EXPECTED_SKIPS lists it, a failure
# elsewhere; returns 1 when the segment has no XFAIL (then a listed test
# that ran fails). Returns 0 when it reported the test.
crash_xfail() {
	local why
	why=$(grep -m1 -o 'XFAIL:.*' <<< "$3" || true)
	if [ -n "$why" ]; then
		if skip_expected "$1" "$2"; then
			skipped "$4 ($why)"
		else
			bad "$4: $why"
		fi
		return 0
	fi
	if skip_expected "$1" "$2"; then
		bad "$4: ran, but EXPECTED_SKIPS says it skips on $1"
		return 0
	fi
	return 1
}

# context_check LABEL LOG CONTEXT: a boot that ran one lkdtm test of the
# context rule alone (init's rwtest_only=: RARE_WRITE_IN_HARDIRQ, _IN_NMI).
# rare_write() there must BUG before a window opens; in interrupt context
# that panics, and the test's panic notifier says whether the data
# changed. Passes on the refusal, the panic and an unchanged verdict, with
# no "FAIL:" line; reports through the caller's ok/bad.
context_check() {
	local why=
	if ! grep -q "^RWTEST: only-begin" "$2"; then
		why="init did not start the test"
	elif grep -q "FAIL:" "$2"; then
		why=$(grep -m1 -o "FAIL:.*" "$2")
	elif ! grep -q "window asked for in hard interrupt or NMI context" "$2"; then
		why="no refusal (\"window asked for in hard interrupt or NMI context\")"
	elif ! grep -q "rare_write in $3 context refused, __wr_rare data unchanged" "$2"; then
		why="no verdict from the panic notifier"
	elif ! grep -q "Kernel panic" "$2"; then
		why="the refusal did not end in a panic"
	fi
	if [ -z "$why" ]; then
		ok "$1: refused before a window opened (BUG, panic, data unchanged)"
	else
		bad "$1: $why"
	fi
}
