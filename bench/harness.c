// SPDX-License-Identifier: MIT
/*
 * harness.c - timing and statistics.
 *
 * A sample is the time of a batch of operations divided by the batch size;
 * the batch is 1 for anything slower than a microsecond (so p99 is the p99
 * of single operations) and grows for faster ones until a batch lasts about
 * a microsecond, so the clock's own cost does not dominate. The cost of
 * reading the clock is measured at start-up and subtracted.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

bool bench_quick;
int rec_fd = 1;
static double clock_cost;

uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t rng_next(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

void bench_init(void)
{
	double s[1001];

	for (int i = 0; i < 1001; i++) {
		uint64_t t0 = now_ns();
		uint64_t t1 = now_ns();

		s[i] = (double)(t1 - t0);
	}
	qsort(s, 1001, sizeof(s[0]), cmp_double);
	clock_cost = s[500];
}

/* The reader thread: loads the targets round-robin until told to stop. */
struct reader {
	pthread_t tid;
	const volatile uint64_t *targets[8];
	unsigned nr;
	volatile int stop, started;
	uint64_t sink;
};

static void *reader_main(void *arg)
{
	struct reader *r = arg;
	uint64_t sum = 0;

	r->started = 1;
	while (!r->stop)
		for (unsigned i = 0; i < r->nr; i++)
			for (int k = 0; k < 64; k++)
				sum += __atomic_load_n(r->targets[i],
						       __ATOMIC_RELAXED);
	r->sink = sum;
	return NULL;
}

/* Samples per op: enough for a stable p99, bounded by a time budget. */
static unsigned samples_max(void)
{
	return bench_quick ? 400 : 4000;
}

static uint64_t set_budget_ns(void)
{
	return bench_quick ? 150000000ull : 1500000000ull;
}

static double time_batch(const struct bench_op *op, unsigned batch, uint64_t *i)
{
	uint64_t t0 = now_ns();

	for (unsigned b = 0; b < batch; b++)
		op->run(op->ctx, (*i)++);
	uint64_t t1 = now_ns();
	double t = (double)(t1 - t0) - clock_cost;

	return (t < 0 ? 0 : t) / batch;
}

void measure_set(const struct bench_op *ops, unsigned k, bool reader,
		 struct stats *out)
{
	const unsigned block = 20, max = samples_max(), min = 100;
	unsigned batch[8], n = 0;
	double *s[8];
	uint64_t iter = 1, start;
	struct reader rd = {.nr = 0};

	if (k > 8)
		abort();
	if (reader) {
		for (unsigned j = 0; j < k; j++)
			if (ops[j].read_target)
				rd.targets[rd.nr++] = ops[j].read_target;
		if (rd.nr && pthread_create(&rd.tid, NULL, reader_main, &rd))
			rd.nr = 0;
		while (rd.nr && !rd.started)
			;
	}
	/* Warm-up (discarded) doubles as calibration of the batch size. */
	for (unsigned j = 0; j < k; j++) {
		double t;

		s[j] = malloc(max * sizeof(double));
		for (int w = 0; w < 50; w++)
			time_batch(&ops[j], 1, &iter);
		start = now_ns();
		for (int w = 0; w < 50; w++)
			time_batch(&ops[j], 1, &iter);
		t = (double)(now_ns() - start) / 50;
		batch[j] = t >= 1000 ? 1 : (unsigned)(1000 / (t + 1)) + 1;
	}
	start = now_ns();
	while (n < max && (n < min || now_ns() - start < set_budget_ns())) {
		for (unsigned j = 0; j < k; j++)
			for (unsigned b = 0; b < block && n + b < max; b++)
				s[j][n + b] =
					time_batch(&ops[j], batch[j], &iter);
		n = n + block < max ? n + block : max;
	}
	if (rd.nr) {
		rd.stop = 1;
		pthread_join(rd.tid, NULL);
	}
	for (unsigned j = 0; j < k; j++) {
		qsort(s[j], n, sizeof(double), cmp_double);
		out[j] = (struct stats){.med = s[j][n / 2],
					.p99 = s[j][(n * 99) / 100],
					.n = n,
					.batch = batch[j]};
		free(s[j]);
	}
}

size_t rss_bytes(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	unsigned long size = 0, res = 0;

	if (f) {
		if (fscanf(f, "%lu %lu", &size, &res) != 2)
			res = 0;
		fclose(f);
	}
	return res * (size_t)sysconf(_SC_PAGESIZE);
}

void record(const char *backend, const char *what, const char *mode,
	    const char *unit, double v1, double v2, unsigned n)
{
	dprintf(rec_fd, "R|%s|%s|%s|%s|%.6g|%.6g|%u\n", backend, what, mode,
		unit, v1, v2, n);
}
