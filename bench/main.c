// SPDX-License-Identifier: MIT
/*
 * main.c - the benchmark's driver.
 *
 * The baselines run in one child process and every backend in a child of
 * its own (rare_write_init() chooses the backend once per process, from
 * RAREWRITE_BACKEND). A backend whose init fails is reported unavailable;
 * one that starts working (pkey, process) is picked up without a change
 * here. Children send their measurements as records through a pipe; this
 * process prints the tables, checks the performance targets
 * (check_targets()) and writes the CSV and the plot data.
 *
 * Usage: bench [output-directory]   (BENCH_QUICK=1 for a short run;
 * BENCH_BACKENDS="pwrite mprotect" and BENCH_ONLY=suite,reads,hashtable,
 * pool,baselines restrict a run while investigating)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rarewrite.h>

#include "bench.h"

extern int rec_fd;

/* "auto", then the library's backends (rare_write_backends(3)). */
static const char *backend_names[16] = {"auto"};
static size_t nr_backends = 1;

struct rec {
	char backend[24], what[64], mode[32], unit[24];
	double v1, v2;
	unsigned n;
};

static struct rec *recs;
static size_t nr_recs, cap_recs;

static void add_record(char *line)
{
	char *f[8], *save = NULL;
	int n = 0;

	for (char *t = strtok_r(line, "|\n", &save); t && n < 8;
	     t = strtok_r(NULL, "|\n", &save))
		f[n++] = t;
	if (n != 8 || strcmp(f[0], "R"))
		return;
	if (nr_recs == cap_recs) {
		cap_recs = cap_recs ? 2 * cap_recs : 256;
		recs = realloc(recs, cap_recs * sizeof(*recs));
		if (!recs)
			abort();
	}
	struct rec *r = &recs[nr_recs++];

	snprintf(r->backend, sizeof(r->backend), "%s", f[1]);
	snprintf(r->what, sizeof(r->what), "%s", f[2]);
	snprintf(r->mode, sizeof(r->mode), "%s", f[3]);
	snprintf(r->unit, sizeof(r->unit), "%s", f[4]);
	r->v1 = strtod(f[5], NULL);
	r->v2 = strtod(f[6], NULL);
	r->n = (unsigned)strtoul(f[7], NULL, 10);
}

static const struct rec *find(const char *backend, const char *what,
			      const char *mode)
{
	for (size_t i = 0; i < nr_recs; i++)
		if (!strcmp(recs[i].backend, backend) &&
		    !strcmp(recs[i].what, what) &&
		    (!mode || !strcmp(recs[i].mode, mode)))
			return &recs[i];
	return NULL;
}

/* Run @fn in a child whose records come back through a pipe. */
static void spawn(const char *label, void (*fn)(const char *), const char *arg)
{
	int p[2];
	pid_t pid;
	int status;
	FILE *in;
	char line[512];

	if (pipe(p))
		abort();
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		abort();
	if (!pid) {
		close(p[0]);
		rec_fd = p[1];
		fn(arg);
		base_futex_stop();
		_exit(0);
	}
	close(p[1]);
	in = fdopen(p[0], "r");
	while (fgets(line, sizeof(line), in))
		add_record(line);
	fclose(in);
	waitpid(pid, &status, 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		fprintf(stderr, "bench: %s child failed (status %#x)\n", label,
			status);
}

static void baselines_child(const char *arg)
{
	struct bench_op ops[] = {
		base_store(),	  base_syscall(), base_pwrite(8),
		base_mprotect(8), base_alias(8),  base_futex(),
		base_chromium(),
	};
	struct stats st;

	(void)arg;
	fprintf(stderr, "baselines\n");
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		for (int m = 0; m < 2; m++) {
			/* Both CPUs are the ping-pong's: no reader there. */
			if (m && !strcmp(ops[i].name, "futex ping-pong"))
				continue;
			measure_set(&ops[i], 1, m, &st);
			record("baseline", ops[i].name, m ? "reader" : "alone",
			       "ns", st.med, st.p99, st.n);
		}
}

/* BENCH_ONLY=suite,reads,hashtable,pool,baselines: run only those parts. */
static bool part(const char *name)
{
	const char *only = getenv("BENCH_ONLY");
	size_t n = strlen(name);

	if (!only || !*only)
		return true;
	for (const char *p = only; (p = strstr(p, name)); p += n)
		if ((p == only || p[-1] == ',') && (!p[n] || p[n] == ','))
			return true;
	return false;
}

static void backend_child(const char *name)
{
	int err;

	setenv("RAREWRITE_BACKEND", name, 1);
	err = rare_write_init();
	if (err) {
		record(name, "unavailable", strerror(-err), "-", 0, 0, 0);
		return;
	}
	fprintf(stderr, "backend %s (%s)\n", name, rare_write_backend());
	record(name, "resolves", rare_write_backend(),
	       mechanism_name(rare_write_backend()), 0, 0, 0);
	if (!strcmp(name, "auto")) {
		run_backend_suite(name, true);
		return;
	}
	if (part("suite"))
		run_backend_suite(name, false);
	if (part("reads"))
		run_reads(name);
	if (part("hashtable"))
		run_hashtable(name);
	if (part("pool"))
		run_pool_memory(name);
}

static const char *fmt_ns(double ns, char *buf)
{
	if (ns < 10)
		sprintf(buf, "%.1f ns", ns);
	else if (ns < 1000)
		sprintf(buf, "%.0f ns", ns);
	else if (ns < 1e6)
		sprintf(buf, "%.2f us", ns / 1e3);
	else
		sprintf(buf, "%.2f ms", ns / 1e6);
	return buf;
}

static bool available(const char *b)
{
	return find(b, "resolves", NULL) != NULL;
}

static const struct row {
	const char *what, *label, *base;
} rows[] = {
	{"write8", "rare_write 8 B", "write8/mech"},
	{"memcpy4k", "rare_write_memcpy 4 KiB", "memcpy4k/mech"},
	{"memcpy64k", "rare_write_memcpy 64 KiB", "memcpy64k/mech"},
	{"stores64", "64 x rare_write 8 B", "stores64/mech"},
	{"stores64/window", "64 stores in one begin/end", "stores64"},
	{"map256", "map + unmap 256 B", "map256/mech"},
	{"list", "rare_list_add + rare_list_del", "list/mech"},
	{"alloc", "rare_alloc + rare_free 32 B", "alloc/mech"},
};
#define NR_ROWS (sizeof(rows) / sizeof(rows[0]))

static void print_baselines(void)
{
	char a[32], b[32], c[32], d[32];

	printf("\n### Baselines (same run)\n\n");
	printf("| baseline | alone median | alone p99 | with reader median "
	       "| with reader p99 |\n|---|---:|---:|---:|---:|\n");
	for (size_t i = 0; i < nr_recs; i++) {
		const struct rec *r = &recs[i], *o;

		if (strcmp(r->backend, "baseline") || strcmp(r->mode, "alone"))
			continue;
		o = find("baseline", r->what, "reader");
		printf("| %s | %s | %s | %s | %s |\n", r->what,
		       fmt_ns(r->v1, a), fmt_ns(r->v2, b),
		       o ? fmt_ns(o->v1, c) : "-", o ? fmt_ns(o->v2, d) : "-");
	}
}

static void print_backend(const char *b)
{
	const struct rec *res = find(b, "resolves", NULL);
	char s[6][32];

	printf("\n### Backend `%s` (raw mechanism: %s)\n\n", b, res->unit);
	printf("| operation | alone median | p99 | x base | with reader "
	       "median | p99 | x base |\n|---|---:|---:|---:|---:|---:|---:|"
	       "\n");
	for (size_t i = 0; i < NR_ROWS; i++) {
		const struct rec *al = find(b, rows[i].what, "alone");
		const struct rec *rd = find(b, rows[i].what, "reader");
		const struct rec *bal = find(b, rows[i].base, "alone");
		const struct rec *brd = find(b, rows[i].base, "reader");

		if (!al || !rd)
			continue;
		snprintf(s[4], 32, "%.2fx", bal ? al->v1 / bal->v1 : 0);
		snprintf(s[5], 32, "%.2fx", brd ? rd->v1 / brd->v1 : 0);
		printf("| %s | %s | %s | %s | %s | %s | %s |\n", rows[i].label,
		       fmt_ns(al->v1, s[0]), fmt_ns(al->v2, s[1]), s[4],
		       fmt_ns(rd->v1, s[2]), fmt_ns(rd->v2, s[3]), s[5]);
	}
	const struct rec *chal = find(b, "write8/chromium", "alone");
	const struct rec *chrd = find(b, "write8/chromium", "reader");
	const struct rec *al = find(b, "write8", "alone");
	const struct rec *rd = find(b, "write8", "reader");

	const struct rec *wal = find(b, "write8/within", "alone");
	const struct rec *wrd = find(b, "write8/within", "reader");

	if (wal && wrd && al && rd)
		printf("| raw mprotect pair on 1 page within a 17-page mapping "
		       "(same sets) | %s | %s | %.2fx | %s | %s | %.2fx |\n",
		       fmt_ns(wal->v1, s[0]), fmt_ns(wal->v2, s[1]),
		       al->v1 / wal->v1, fmt_ns(wrd->v1, s[2]),
		       fmt_ns(wrd->v2, s[3]), rd->v1 / wrd->v1);
	if (chal && chrd && al && rd)
		printf("| Chromium-style write 8 B (same sets) | %s | %s | "
		       "%.1fx faster | %s | %s | %.1fx faster |\n",
		       fmt_ns(chal->v1, s[0]), fmt_ns(chal->v2, s[1]),
		       chal->v1 / al->v1, fmt_ns(chrd->v1, s[2]),
		       fmt_ns(chrd->v2, s[3]), chrd->v1 / rd->v1);
	printf("\n\"x base\": median over the median of the raw mechanism "
	       "(same size) timed in the same interleaved set; for the "
	       "begin/end row, over 64 separate rare_write calls.\n");
}

static void print_workloads(void)
{
	char a[32], b2[32];

	printf("\n### Reads, hash table, pools\n\n");
	printf("| backend | 16 KiB read: protected / plain speed | hash "
	       "lookups/s protected (plain) | lookup speed ratio | update "
	       "median (p99) | table RSS protected / plain | pool RSS / "
	       "payload |\n|---|---:|---:|---:|---:|---:|---:|\n");
	for (size_t i = 1; i < nr_backends; i++) {
		const char *b = backend_names[i];
		const struct rec *hr = find(b, "hashtable.ratio", NULL),
				 *rp = find(b, "read16k", NULL),
				 *rq = find(b, "read16k/plain", NULL),
				 *hl = find(b, "hashtable.lookup", NULL),
				 *hp = find(b, "hashtable/plain.lookup", NULL),
				 *hu = find(b, "hashtable.update", NULL),
				 *hm = find(b, "hashtable.rss", NULL),
				 *pm = find(b, "hashtable/plain.rss", NULL),
				 *pr = find(b, "pool.rss", NULL);

		if (!available(b))
			continue;
		printf("| %s | ", b);
		if (rp && rq)
			printf("%.3fx | ", rq->v1 / rp->v1);
		else
			printf("- | ");
		if (hl && hp && hu && hm && pm && hr)
			printf("%.1fM (%.1fM) on %u threads | %.3fx | %s (%s) "
			       "| %.1f / %.1f MiB | ",
			       hl->v1 / 1e6, hp->v1 / 1e6, hl->n, hr->v1,
			       fmt_ns(hu->v1, a), fmt_ns(hu->v2, b2),
			       hm->v1 / 1048576, pm->v1 / 1048576);
		else
			printf("- | - | - | - | ");
		if (pr)
			printf("%u x 32 B: %.1f / %.1f MiB = %.3fx |\n", pr->n,
			       pr->v1 / 1048576, pr->v2 / 1048576,
			       pr->v1 / pr->v2);
		else
			printf("- |\n");
	}
}

/*
 * pkey's limit over its two WRPKRU: each WRPKRU serializes (about 13 ns
 * here), and the library finds and checks the region and reads PKRU
 * before the first and after the second, 6-10 ns in all, which the other
 * backends hide behind a system call.
 */
#define PKEY_LIMIT 1.5

static FILE *csv;
static unsigned nr_miss;

static void target(const char *name, const char *backend, double value,
		   const char *op, double limit)
{
	bool ok = op[0] == '<' ? value <= limit : value >= limit;

	printf("| %s | %s | %.3f | %s %.3f | %s |\n", name, backend, value, op,
	       limit, ok ? "PASS" : "MISS");
	fprintf(csv, "target,%s,%s,%s,%.6g,%.6g,%d\n", backend, name, op, value,
		limit, ok);
	nr_miss += !ok;
}

static double ratio(const char *b, const char *x, const char *y,
		    const char *mode)
{
	const struct rec *a = find(b, x, mode), *c = find(b, y, mode);

	return a && c && c->v1 ? a->v1 / c->v1 : -1;
}

static void check_targets(void)
{
	static const char *const own[] = {"pwrite", "shadow", "mprotect"};
	static const char *const modes[] = {"alone", "reader"};
	char name[96];

	printf("\n### Targets\n\n| target | backend | measured | limit | "
	       "result |\n|---|---|---:|---:|---|\n");
	for (size_t i = 0; i < 3; i++)
		for (int m = 0; m < 2 && available(own[i]); m++) {
			snprintf(name, sizeof(name),
				 "rare_write 8 B over its raw mechanism (%s)",
				 modes[m]);
			target(name, own[i],
			       ratio(own[i], "write8", "write8/mech", modes[m]),
			       "<=", 1.15);
		}
	for (int m = 0; m < 2 && available("process"); m++) {
		snprintf(name, sizeof(name),
			 "rare_write 8 B over the futex ping-pong (%s)",
			 modes[m]);
		target(name, "process",
		       ratio("process", "write8", "write8/mech", modes[m]),
		       "<=", 1.5);
		/* What it is built on: sendmsg() and a reply, raw. */
		snprintf(name, sizeof(name),
			 "rare_write 8 B over a raw seqpacket round trip (%s)",
			 modes[m]);
		target(name, "process",
		       ratio("process", "write8", "write8/seqpacket", modes[m]),
		       "<=", 1.15);
	}
	/* pkey's raw mechanism is two WRPKRU around a store: the library
	 * adds its checks (the region, PKRU read before and after). */
	for (int m = 0; m < 2 && available("pkey"); m++) {
		snprintf(name, sizeof(name),
			 "rare_write 8 B over 2 WRPKRU and a store (%s)",
			 modes[m]);
		target(name, "pkey",
		       ratio("pkey", "write8", "write8/mech", modes[m]),
		       "<=", PKEY_LIMIT);
	}
	if (!available("pkey"))
		printf("| rare_write 8 B over 2 WRPKRU and a store | pkey | "
		       "- | - | no figure: no PKU on this machine |\n");
	/* auto is timed against its backend's raw mechanism too. */
	if (available("auto")) {
		const char *mode = find("auto", "resolves", NULL)->mode;
		char b[64];

		snprintf(b, sizeof(b), "auto=%s", mode);
		for (int m = 0; m < 2; m++) {
			snprintf(name, sizeof(name),
				 "rare_write 8 B over its raw mechanism (%s)",
				 modes[m]);
			target(name, b,
			       ratio("auto", "write8", "write8/mech", modes[m]),
			       "<=", strcmp(mode, "pkey") ? 1.15 : PKEY_LIMIT);
		}
	}
	if (available("mprotect"))
		target("rare_write 8 B over raw mprotect pair within a "
		       "mapping",
		       "mprotect",
		       ratio("mprotect", "write8", "write8/within", "alone"),
		       "<=", 1.15);
	if (available("auto")) {
		const struct rec *r = find("auto", "resolves", NULL);
		char b[64];

		snprintf(b, sizeof(b), "auto=%s", r->mode);
		target("speed-up over Chromium-style (alone)", b,
		       ratio("auto", "write8/chromium", "write8", "alone"),
		       ">=", 3);
		target("speed-up over Chromium-style (reader running)", b,
		       ratio("auto", "write8/chromium", "write8", "reader"),
		       ">=", 15);
	}
	for (size_t i = 1; i < nr_backends; i++) {
		const char *b = backend_names[i];

		if (!available(b))
			continue;
		if (find(b, "read16k", NULL))
			target("protected reads / plain reads (speed)", b,
			       ratio(b, "read16k/plain", "read16k", NULL),
			       ">=", 0.98);
		if (find(b, "hashtable.lookup", NULL))
			target("hash lookups protected / plain (speed)", b,
			       find(b, "hashtable.ratio", NULL)->v1,
			       ">=", 0.98);
		const struct rec *p = find(b, "pool.rss", NULL);

		if (p)
			target("pool resident / payload", b, p->v1 / p->v2,
			       "<=", 1.10);
	}
	if (available("mprotect"))
		target("64 stores in begin/end / 64 rare_write", "mprotect",
		       ratio("mprotect", "stores64/window", "stores64",
			     "alone"),
		       "<=", 1.0 / 30);
}

static void write_plot_data(const char *dir)
{
	char path[512];
	FILE *f;
	unsigned nb = 0;
	static const char *const modes[] = {"alone", "reader"};

	snprintf(path, sizeof(path), "%s/plot.dat", dir);
	f = fopen(path, "w");
	if (!f)
		return;
	fprintf(f, "operation");
	for (int m = 0; m < 2; m++) {
		for (size_t i = 1; i < nr_backends; i++)
			if (available(backend_names[i]))
				fprintf(f, " \"%s\"", backend_names[i]);
		fprintf(f, " \"chromium-style\"");
	}
	fprintf(f, "\n");
	for (size_t i = 1; i < nr_backends; i++)
		nb += available(backend_names[i]);
	for (size_t r = 0; r < NR_ROWS; r++) {
		fprintf(f, "\"%s\"", rows[r].label);
		for (int m = 0; m < 2; m++) {
			for (size_t i = 1; i < nr_backends; i++) {
				const struct rec *x;

				if (!available(backend_names[i]))
					continue;
				x = find(backend_names[i], rows[r].what,
					 modes[m]);
				if (x)
					fprintf(f, " %.6g", x->v1 / 1000);
				else
					fprintf(f, " NaN");
			}
			const struct rec *c =
				find("baseline", "chromium-style section flip",
				     modes[m]);
			if (r == 0 && c)
				fprintf(f, " %.6g", c->v1 / 1000);
			else
				fprintf(f, " NaN");
		}
		fprintf(f, "\n");
	}
	fclose(f);
	snprintf(path, sizeof(path), "%s/plot.vars", dir);
	f = fopen(path, "w");
	if (f) {
		fprintf(f, "nb = %u\n", nb + 1);
		fclose(f);
	}
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : "build/bench";
	const char *q = getenv("BENCH_QUICK");
	char path[512];

	bench_quick = q && *q && strcmp(q, "0");
	while (nr_backends < sizeof(backend_names) / sizeof(backend_names[0]) &&
	       (backend_names[nr_backends] =
			rare_write_backends((unsigned)nr_backends - 1, NULL)))
		nr_backends++;
	bench_init();
	mkdir(dir, 0755);
	if (part("baselines"))
		spawn("baselines", baselines_child, NULL);
	for (size_t i = 0; i < nr_backends; i++)
		if (!getenv("BENCH_BACKENDS") ||
		    strstr(getenv("BENCH_BACKENDS"), backend_names[i]))
			spawn(backend_names[i], backend_child,
			      backend_names[i]);

	snprintf(path, sizeof(path), "%s/results.csv", dir);
	csv = fopen(path, "w");
	if (!csv) {
		fprintf(stderr, "bench: %s: %s\n", path, strerror(errno));
		return 1;
	}
	fprintf(csv, "backend,measure,mode,unit,median_or_value,p99_or_ref,"
		     "n\n");
	for (size_t i = 0; i < nr_recs; i++)
		fprintf(csv, "%s,%s,%s,%s,%.6g,%.6g,%u\n", recs[i].backend,
			recs[i].what, recs[i].mode, recs[i].unit, recs[i].v1,
			recs[i].v2, recs[i].n);

	printf("\n## rarewrite benchmark%s\n", bench_quick ? " (quick)" : "");
	for (size_t i = 0; i < nr_backends; i++) {
		const struct rec *u =
			find(backend_names[i], "unavailable", NULL);
		const struct rec *r = find(backend_names[i], "resolves", NULL);

		if (u)
			printf("\n- `%s`: unavailable here (%s)\n",
			       backend_names[i], u->mode);
		else if (r && !strcmp(backend_names[i], "auto"))
			printf("\n- `auto` resolves to `%s`\n", r->mode);
	}
	print_baselines();
	for (size_t i = 1; i < nr_backends; i++)
		if (available(backend_names[i]))
			print_backend(backend_names[i]);
	print_workloads();
	check_targets();
	fclose(csv);
	write_plot_data(dir);
	printf("\n%u target(s) missed; CSV in %s/results.csv\n", nr_miss, dir);
	return 0;
}
