# SPDX-License-Identifier: MIT
# The benchmark: `make bench` builds and runs it (tables on stdout, CSV in
# build/bench/results.csv); `make bench-plot` draws bench/results.png from
# the last run. BENCH_QUICK=1 makes a short run (CI). `make bench-report`
# rewrites bench/README.md from BENCH_RUNS (3) full runs (bench/report.sh).
BENCH_SRC := $(wildcard bench/*.c)
BENCH_BIN := $(B)/bench/bench
BENCH_OUT := $(B)/bench

$(BENCH_BIN): $(BENCH_SRC) bench/bench.h $(HEADERS) $(B)/librarewrite.so
	@mkdir -p $(dir $@)
	$(CC) $(USER_CFLAGS) -Ibench $(BENCH_SRC) -o $@ $(USER_LDFLAGS) \
		-L$(B) -lrarewrite -pthread -Wl,-rpath,'$$ORIGIN/..'

bench: $(BENCH_BIN)
	$(BENCH_BIN) $(BENCH_OUT) | tee $(BENCH_OUT)/results.md

bench-plot:
	@test -f $(BENCH_OUT)/plot.dat || $(MAKE) bench
	@command -v gnuplot >/dev/null 2>&1 || \
		{ apt-get update && apt-get install -y gnuplot-nox; }
	gnuplot -e "dir='$(BENCH_OUT)'; out='bench/results.png'" bench/plot.gp

# SQLite's timings too where its build is there (real/real.mk).
# The SQLite section needs its two programs (real/real.mk; the source comes
# from the npm registry once, then from the verified download).
bench-report: $(BENCH_BIN) $(B)/real/sqlite/sqlite3-rare $(B)/real/sqlite/sqlite3-plain
	REAL=$(REAL) REAL_BACKENDS="$${REAL_BACKENDS:-$(AVAILABLE_BACKENDS)}" \
		sh bench/report.sh $(BENCH_BIN) $(BENCH_OUT)/report bench/README.md

.PHONY: bench bench-plot bench-report
