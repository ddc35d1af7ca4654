// SPDX-License-Identifier: MIT
/*
 * pool_mem.c - what protected dynamic memory costs in RAM: 1,000,000
 * objects of 32 bytes from one rare_pool, resident memory against payload.
 * Each object gets its first word written, as a user initialises it, and
 * every object is read once afterwards, so that pages the backend wrote
 * through the kernel (pwrite) are mapped and counted like the others.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rarewrite.h>

#include "bench.h"

void run_pool_memory(const char *backend)
{
	const size_t nr = bench_quick ? 100000 : 1000000, size = 32;
	void **objs = malloc(nr * sizeof(void *));
	size_t before, after;
	uint64_t sum = 0, t0;
	struct rare_pool *pool;

	fprintf(stderr, "  %-9s pool %zu x %zu bytes\n", backend, nr, size);
	if (!objs)
		abort();
	memset(objs, 0x5a, nr * sizeof(void *)); /* resident before we count */
	before = rss_bytes();
	pool = rare_pool_create(nr * size + nr * size / 8);
	if (!pool)
		abort();
	t0 = now_ns();
	for (size_t i = 0; i < nr; i++) {
		if (!(objs[i] = rare_alloc(pool, size)))
			abort();
		rare_write(*(uint64_t *)objs[i], i + 1); /* a user's init */
	}
	t0 = now_ns() - t0;
	for (size_t i = 0; i < nr; i++)
		sum += *(volatile const uint64_t *)objs[i];
	after = rss_bytes();
	if (sum != (uint64_t)nr * (nr + 1) / 2)
		abort();
	record(backend, "pool.rss", "alone", "bytes", (double)(after - before),
	       (double)(nr * size), (unsigned)nr);
	record(backend, "pool.alloc+init", "alone", "ns", (double)t0 / nr, 0,
	       (unsigned)nr);
	rare_pool_destroy(pool);
	free(objs);
}
