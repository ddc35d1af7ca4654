// SPDX-License-Identifier: MIT
/* base_store.c - baseline: one plain 8-byte store to ordinary memory. */
#include "bench.h"

static uint64_t word;

static void run(void *ctx, uint64_t i)
{
	__atomic_store_n((uint64_t *)ctx, i, __ATOMIC_RELAXED);
}

struct bench_op base_store(void)
{
	return (struct bench_op){"plain store", run, &word, &word};
}
