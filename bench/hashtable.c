// SPDX-License-Identifier: MIT
/*
 * hashtable.c - the workload a user recognises: a chained hash table of
 * 100,000 entries whose buckets and entries live in a rare_pool, looked up
 * by several threads while 1% of the operations update a value; against
 * the same table in ordinary heap memory with plain stores.
 *
 * The unprotected table packs its entries in pages as the pool does, so
 * that the comparison is of protection, not of allocators.
 *
 * Each thread times its lookups in runs of 99 and each update alone, so the
 * lookup rate includes whatever the updates of the other threads cost it
 * (TLB shootdowns of the page-table backends land in the lookup time).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rarewrite.h>

#include "bench.h"

#define NR_ENTRIES 100000
#define NR_BUCKETS 131072 /* power of two */
#define MAX_THREADS 8
#define MAX_UPDATES 400000

struct entry {
	uint64_t key;
	uint64_t value;
	struct entry *next;
	uint64_t pad;
};

static volatile uint64_t sink;

struct table {
	bool protected_;
	struct rare_pool *pool;
	struct entry **buckets;
	struct entry *plain; /* the unprotected table's entries */
	uint64_t seed;
};

static unsigned bucket_of(uint64_t key)
{
	return (unsigned)((key * 0x9e3779b97f4a7c15ULL) >> 47) &
	       (NR_BUCKETS - 1);
}

static void table_build(struct table *t, bool protected_)
{
	struct entry *p = NULL;

	uint64_t rng = t->seed = 42;

	t->protected_ = protected_;
	if (protected_) {
		t->pool = rare_pool_create(NR_BUCKETS * sizeof(void *) +
					   (size_t)NR_ENTRIES *
						   sizeof(struct entry) * 2);
		if (!t->pool)
			abort();
		t->buckets = rare_alloc(t->pool, NR_BUCKETS * sizeof(void *));
	} else {
		/* The same layout as the pool's: entries packed in pages. */
		t->buckets = calloc(NR_BUCKETS, sizeof(void *));
		t->plain = aligned_alloc(4096, NR_ENTRIES * sizeof(*p));
	}
	if (!t->buckets)
		abort();
	for (unsigned i = 0; i < NR_ENTRIES; i++) {
		uint64_t key = rng_next(&rng);
		unsigned b = bucket_of(key);
		struct entry e = {key, i, t->buckets[b], 0};

		if (protected_) {
			p = rare_alloc(t->pool, sizeof(*p));
			if (!p)
				abort();
			rare_write_memcpy(p, &e, sizeof(e));
			rare_write(t->buckets[b], p);
		} else {
			if (!t->plain)
				abort();
			p = &t->plain[i];
			*p = e;
			t->buckets[b] = p;
		}
	}
}

static void table_free(struct table *t)
{
	if (t->protected_) {
		rare_pool_destroy(t->pool);
		return;
	}
	free(t->plain);
	free(t->buckets);
}

static struct entry *lookup(const struct table *t, uint64_t key)
{
	struct entry *e =
		__atomic_load_n(&t->buckets[bucket_of(key)], __ATOMIC_ACQUIRE);

	for (; e; e = __atomic_load_n(&e->next, __ATOMIC_ACQUIRE))
		if (e->key == key)
			return e;
	return NULL;
}

static void update(const struct table *t, struct entry *e, uint64_t v)
{
	if (t->protected_)
		rare_write(e->value, v);
	else
		__atomic_store_n(&e->value, v, __ATOMIC_RELAXED);
}

/* Read every bucket and entry once, so all pages are resident. */
static void touch(const struct table *t)
{
	uint64_t sum = 0;

	for (unsigned b = 0; b < NR_BUCKETS; b++)
		for (const struct entry *e = t->buckets[b]; e; e = e->next)
			sum += e->value;
	sink = sum;
}

struct worker {
	pthread_t tid;
	const struct table *t;
	unsigned id;
	volatile int *stop;
	uint64_t lookups, lookup_ns, sum;
	unsigned nr_updates;
	double *update_ns;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	uint64_t rng = 1000 + w->id, sum = 0;

	while (!*w->stop) {
		uint64_t t0 = now_ns();

		for (int i = 0; i < 99; i++) {
			/* Keys of the table: replay its generator. */
			uint64_t s = w->t->seed +
				     0x9e3779b97f4a7c15ULL *
					     (rng_next(&rng) % NR_ENTRIES);
			uint64_t key = rng_next(&s);
			struct entry *e = lookup(w->t, key);

			sum += e ? __atomic_load_n(&e->value, __ATOMIC_RELAXED)
				 : 1;
		}
		uint64_t t1 = now_ns();
		uint64_t s = w->t->seed + 0x9e3779b97f4a7c15ULL *
						  (rng_next(&rng) % NR_ENTRIES);
		struct entry *e = lookup(w->t, rng_next(&s));

		if (!e)
			abort();
		uint64_t t2 = now_ns();

		update(w->t, e, t2);
		uint64_t t3 = now_ns();

		w->lookups += 100;
		w->lookup_ns += (t1 - t0) + (t2 - t1);
		if (w->nr_updates < MAX_UPDATES)
			w->update_ns[w->nr_updates++] = (double)(t3 - t2);
	}
	w->sum = sum;
	return NULL;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

struct ht_result {
	double rate; /* lookups per second, all threads */
	double upd_med, upd_p99;
};

static struct ht_result run_once(const struct table *t, unsigned threads,
				 uint64_t duration_ns)
{
	struct worker w[MAX_THREADS];
	volatile int stop = 0;
	struct ht_result r = {0};
	double *all = malloc(sizeof(double) * MAX_UPDATES * threads);
	size_t n = 0;

	for (unsigned i = 0; i < threads; i++) {
		w[i] = (struct worker){.t = t, .id = i, .stop = &stop};
		w[i].update_ns = malloc(sizeof(double) * MAX_UPDATES);
		if (pthread_create(&w[i].tid, NULL, worker_main, &w[i]))
			abort();
	}
	usleep((useconds_t)(duration_ns / 1000));
	stop = 1;
	for (unsigned i = 0; i < threads; i++) {
		pthread_join(w[i].tid, NULL);
		if (w[i].lookup_ns)
			r.rate += (double)w[i].lookups * 1e9 /
				  (double)w[i].lookup_ns;
		memcpy(all + n, w[i].update_ns,
		       w[i].nr_updates * sizeof(double));
		n += w[i].nr_updates;
		free(w[i].update_ns);
	}
	qsort(all, n, sizeof(double), cmp_double);
	if (n) {
		r.upd_med = all[n / 2];
		r.upd_p99 = all[n * 99 / 100];
	}
	free(all);
	return r;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(double), cmp_double);
	return v[n / 2];
}

void run_hashtable(const char *backend)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned threads = cpus < 2		? 2
			   : cpus > MAX_THREADS ? MAX_THREADS
						: (unsigned)cpus;
	/* Many short rounds, alternating the tables and their order; the
	 * ratio is the median of the per-round ratios, which cancels the
	 * drift of a shared machine. */
	const int rounds = bench_quick ? 6 : 24;
	const uint64_t dur = bench_quick ? 60000000ull : 100000000ull;
	double rate[2][24], ratio[24], upd[24], upd99[24];
	struct table t[2] = {0};
	size_t mem[2];

	fprintf(stderr, "  %-9s hashtable\n", backend);
	for (int p = 0; p < 2; p++) {
		size_t before = rss_bytes();

		table_build(&t[p], p == 1);
		touch(&t[p]);
		mem[p] = rss_bytes() - before;
	}
	for (int r = 0; r < rounds; r++) {
		for (int k = 0; k < 2; k++) {
			int p = (r + k) % 2;
			struct ht_result x = run_once(&t[p], threads, dur);

			rate[p][r] = x.rate;
			if (p) {
				upd[r] = x.upd_med;
				upd99[r] = x.upd_p99;
			}
		}
		ratio[r] = rate[1][r] / rate[0][r];
	}
	record(backend, "hashtable.lookup", "threads", "lookups/s",
	       median(rate[1], rounds), 0, threads);
	record(backend, "hashtable/plain.lookup", "threads", "lookups/s",
	       median(rate[0], rounds), 0, threads);
	record(backend, "hashtable.ratio", "threads", "x",
	       median(ratio, rounds), 0, (unsigned)rounds);
	record(backend, "hashtable.update", "threads", "ns",
	       median(upd, rounds), median(upd99, rounds), threads);
	record(backend, "hashtable.rss", "threads", "bytes", (double)mem[1], 0,
	       NR_ENTRIES);
	record(backend, "hashtable/plain.rss", "threads", "bytes",
	       (double)mem[0], 0, NR_ENTRIES);
	table_free(&t[0]);
	table_free(&t[1]);
}
