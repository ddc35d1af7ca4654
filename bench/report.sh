#!/bin/sh
# SPDX-License-Identifier: MIT
#
# bench/report.sh BENCH OUTDIR README - run the full benchmark BENCH_RUNS
# times (default 3) into OUTDIR/run-N and write README from what they
# printed (BENCH_REUSE=1: from the runs already there): the machine
# and the load in the header, the targets over all runs (median, range,
# verdicts), and every table of the last run verbatim. Nothing in README
# is typed by hand but the prose below, which carries no figure.
# `make bench-report` runs it; the plot is redrawn when gnuplot is there.
# With REAL=DIR (real/real.mk's build of SQLite, when there), the real
# program's timings are run too (real/sqlite/run, REAL_RUNS rounds,
# REAL_BACKENDS) and tabled after the targets.
set -eu

bench=$1
out=$2
readme=$3
runs=${BENCH_RUNS:-3}
plot=$(dirname "$readme")/results.png

load() { cut -d' ' -f1-3 /proc/loadavg; }

mkdir -p "$out"
if [ "${BENCH_REUSE:-0}" != 1 ]; then
	commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
	if [ -n "$(git status --porcelain -- src include bench ':!bench/README.md' \
		':!bench/results.png' 2>/dev/null)" ]; then
		commit="$commit with uncommitted changes in src/, include/ or bench/"
	fi
	echo "$commit" >"$out/commit"
	: >"$out/loads"
	date -u '+%Y-%m-%d %H:%M UTC' >"$out/date"
fi
i=1
while [ "${BENCH_REUSE:-0}" != 1 ] && [ "$i" -le "$runs" ]; do
	echo "bench-report: run $i of $runs (load $(load))" >&2
	before=$(load)
	mkdir -p "$out/run-$i"
	"$bench" "$out/run-$i" >"$out/run-$i/results.md"
	echo "$i|$before|$(load)" >>"$out/loads"
	i=$((i + 1))
done
last=$out/run-$runs

# The real program: its workload and start-up per backend against the
# unprotected build, interleaved rounds, in the same run.
real=${REAL:-}
if [ "${BENCH_REUSE:-0}" != 1 ]; then
	rm -f "$out/real.txt"
	if [ -n "$real" ] && [ -x "$real/sqlite3-rare" ] && [ -x "$real/sqlite3-plain" ]; then
		echo "bench-report: SQLite, ${REAL_RUNS:-3} rounds (load $(load))" >&2
		before=$(load)
		REAL_TIMING_ONLY=1 REAL_RUNS=${REAL_RUNS:-3} \
			REAL_BACKENDS="${REAL_BACKENDS:-pwrite shadow mprotect process}" \
			real/sqlite/run "$real" >"$out/real.txt" 2>&1 || true
		echo "load|$before|$(load)" >>"$out/real.txt"
	fi
fi

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
family=$(sed -n 's/^cpu family[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
model=$(sed -n 's/^model[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
virt=$(systemd-detect-virt 2>/dev/null || true)
[ -n "$virt" ] || virt=unknown
pku=no
grep -qw pku /proc/cpuinfo && pku=yes
os=$(sed -n 's/^PRETTY_NAME="\(.*\)"/\1/p' /etc/os-release 2>/dev/null || true)
mitig=$(for f in spectre_v2 retbleed spec_rstack_overflow; do
	[ -r /sys/devices/system/cpu/vulnerabilities/$f ] &&
		printf '%s: %s; ' "$f" "$(cat /sys/devices/system/cpu/vulnerabilities/$f)"
done)

if command -v gnuplot >/dev/null 2>&1 && [ -f "$last/plot.dat" ]; then
	gnuplot -e "dir='$last'; out='$plot'" bench/plot.gp
	have_plot=1
else
	have_plot=0
fi

{
	cat <<'EOF'
# Benchmark: every backend against its raw mechanism, in one run

```sh
make bench                  # one full run; tables on stdout, build/bench/results.csv
BENCH_QUICK=1 make bench    # a short run, for CI
make bench-report           # BENCH_RUNS (3) full runs, then this file is rewritten from them
```

This file is written by `make bench-report` (`bench/report.sh`): the header
from the machine, the targets from every run, the tables from the last run
as the benchmark printed them. No figure in it is typed by hand.

Every operation is timed in one set with the raw mechanism its backend uses
(same size) and, for `rare_write`, with the Chromium-style reference: the
operations of a set run in alternating blocks, warm-up discarded, up to 4,000
samples each; "x base" is the ratio of medians. Each figure is measured
alone and with another thread reading protected data. Baselines, each in its
own file under `bench/`: a plain store, two WRPKRU around a store to a
page of a write-disabled key (pkey's, PKU only), a null syscall (getppid), pwrite()
into a memfd mapped read-only, an mprotect RW/RO pair around a store, a
writable mmap alias mapped/stored/unmapped, a futex round trip between two
processes, and the Chromium `ProtectedMemory` design (one section, writers
count inside it, the whole section flipped RW under a lock by the first
writer and back by the last). The system calls each operation makes are not
timed but counted, in `make check` (docs/backends.md, "System calls per
operation").

EOF
	echo "## The runs"
	echo
	echo "- commit: $(cat "$out/commit")"
	echo "- date: $(cat "$out/date") (the first run's start)"
	echo "- CPU: $cpu (family $family, model $model), $(nproc) CPUs online, virtualization: $virt, PKU: $pku"
	echo "- kernel: $(uname -r) ($(uname -m)), ${os:-unknown OS}"
	echo "- mitigations: ${mitig:-unknown}"
	quick=
	[ -z "${BENCH_QUICK:-}" ] || [ "$BENCH_QUICK" = 0 ] ||
		quick=" (BENCH_QUICK: short runs, not figures for a release)"
	echo "- $runs runs of \`make bench\`${quick:- (full)}, back to back; load average (1, 5, 15 min) before and after each:"
	echo
	echo "| run | load before | load after |"
	echo "|---:|---|---|"
	awk -F'|' '{ printf "| %s | %s | %s |\n", $1, $2, $3 }' "$out/loads"
	echo
	echo "The machine may be shared: a load above its CPU count means other"
	echo "work ran during the runs, and absolute times suffer first; ratios"
	echo "are within one interleaved set."
	echo
	echo "## Targets over the $runs runs"
	echo
	echo "Median of the runs' values, their range, and how many runs met the limit."
	echo
	echo "| target | backend | median | range | limit | runs met |"
	echo "|---|---|---:|---|---:|---:|"
	i=1
	while [ "$i" -le "$runs" ]; do
		grep '^target,' "$out/run-$i/results.csv" | sed "s/^/$i,/"
		i=$((i + 1))
	done | awk -F, -v runs="$runs" '
	{
		key = $4 "|" $3
		if (!(key in n)) { order[++nk] = key; limit[key] = sprintf("%s %.3f", $5, $7) }
		v[key, ++n[key]] = $6 + 0
		met[key] += $8
	}
	END {
		for (k = 1; k <= nk; k++) {
			key = order[k]; m = n[key]
			for (a = 1; a <= m; a++) s[a] = v[key, a]
			for (a = 1; a <= m; a++)
				for (b = a + 1; b <= m; b++)
					if (s[b] < s[a]) { t = s[a]; s[a] = s[b]; s[b] = t }
			med = m % 2 ? s[(m + 1) / 2] : (s[m / 2] + s[m / 2 + 1]) / 2
			split(key, kb, "|")
			printf "| %s | %s | %.3f | %.3f-%.3f | %s | %d of %d |\n",
				kb[1], kb[2], med, s[1], s[m], limit[key], met[key], m
		}
	}'
	grep -h '^| rare_write 8 B over 2 WRPKRU and a store | pkey | - |' "$last/results.md" | head -n 1 |
		sed 's/^| \([^|]*\)| \([^|]*\)| - | - | \(.*\) |$/| \1| \2| - | - | - | \3 |/'
	echo
	echo "## A real program: SQLite"
	echo
	if [ -f "$out/real.txt" ]; then
		rounds=$(sed -n 's/^--- workload: .*, \([0-9]*\) rounds per build$/\1/p' "$out/real.txt")
		echo "\`real/sqlite/run\` (the check-real lane's script, timings only) on the"
		echo "lane's build (real/README.md): the workload and 20 start-ups (\`select 1\`)"
		echo "per round, each protected build against the unprotected one, ${rounds:-?}"
		echo "interleaved rounds, medians; load before and after:"
		echo "$(sed -n 's/^load|\(.*\)|\(.*\)$/\1 and \2/p' "$out/real.txt")."
		echo "CPU time (user + system) is the steadier figure on a shared machine."
		echo
		echo "| backend | workload CPU, protected / unprotected | CPU <= 1.05 | workload wall | start-up wall, per run |"
		echo "|---|---|---|---|---|"
		awk '
		/^ok   workload [a-z]+: output identical/ { same[$3] = 1 }
		/^FAIL workload/ { b = $3; sub(/:$/, "", b); bad[b] = 1 }
		/time [a-z]+\/unprotected, medians:/ {
			b = $2; sub(/\/.*/, "", b); order[++n] = b
			match($0, /wall [0-9]+\/[0-9]+ ms = [0-9.]+/); wall[b] = substr($0, RSTART + 5, RLENGTH - 5)
			match($0, /cpu [0-9]+\/[0-9]+ ms = [0-9.]+/); cpu[b] = substr($0, RSTART + 4, RLENGTH - 4)
		}
		/start-up [a-z]+\/unprotected, median per run:/ {
			b = $2; sub(/\/.*/, "", b); sub(/.*median per run: /, ""); start[b] = $0
		}
		END {
			for (i = 1; i <= n; i++) {
				b = order[i]
				r = cpu[b]; sub(/.*= /, "", r)
				printf "| `%s` | %s | %s | %s | %s |\n", b, cpu[b],
					(r + 0 <= 1.05 ? "met" : "missed"), wall[b],
					start[b] (b in bad ? " (output differed!)" : "")
			}
		}' "$out/real.txt"
		echo
		grep -E '^[0-9]+ passed, [0-9]+ failed' "$out/real.txt" | tail -n 1 |
			sed 's/^/Output checks: /; s/$/ (every round'"'"'s output identical to the unprotected build)./'
	else
		echo "Not run: build it first (\`make check-real\`, or its binaries:"
		echo "\`make build/real/sqlite/sqlite3-rare build/real/sqlite/sqlite3-plain\`)."
	fi
	echo
	echo "## Tables of run $runs"
	sed -e '/^## rarewrite benchmark/d' \
		-e 's|CSV in .*/results.csv|CSV in the run'"'"'s results.csv|' \
		"$last/results.md" | cat -s
	echo
	if [ "$have_plot" = 1 ]; then
		echo "![median per operation, per backend, alone and with a reader thread](results.png)"
		echo
	fi
	cat <<'EOF'
## When to choose which backend

- **`pwrite`** (the `auto` choice without PKU): a write is one system call
  and never changes a page table, so readers on other CPUs pay no
  shootdowns; no writable mapping of protected data ever exists in the
  process. Choose it by default. It has no begin/end windows; batch several
  stores with `rare_write_map` (one pwrite at unmap).
- **`shadow`**: a writable alias is mapped and unmapped per write, and every
  write is a TLB shootdown for the other threads (see the hash-table
  lookups). It makes sense only where a real writable view is needed and
  `pwrite` is not acceptable.
- **`mprotect`**: the CR0.WP analogue. A window opens all protected data to
  every thread while it lasts, but it is the only backend without PKU with
  `rare_write_begin/end`. Choose it for code that must use begin/end and
  updates in bursts, single-threaded or with few readers.
- **`pkey`**: thread-local windows for the cost of a WRPKRU; where the CPU
  has PKU, `auto` picks it. It has figures only where the benchmark ran on
  such a CPU (see the header).
- **`process`**: no mapping, descriptor or window in the process can write
  protected memory; a helper process applies validated requests, one round
  trip per write, fast while a CPU is free for the helper to poll. Choose it
  where the strongest isolation matters more than write latency.
EOF
} >"$readme"
echo "bench-report: wrote $readme from $runs runs in $out" >&2
