// SPDX-License-Identifier: MIT
/*
 * reads.c - reading protected data against reading ordinary data: the same
 * summing loop over 16 KiB in the __wr_rare section and in .bss, timed in
 * one interleaved set.
 */
#include <string.h>

#include <rarewrite.h>

#include "bench.h"

#define WORDS 2048

static uint64_t prot_array[WORDS] __wr_rare __attribute__((aligned(4096)));
static uint64_t plain_array[WORDS] __attribute__((aligned(4096)));
static volatile uint64_t sink;

/* Before rare_write_init(): protected data is ordinary memory. */
__attribute__((constructor)) static void fill(void)
{
	for (unsigned i = 0; i < WORDS; i++)
		prot_array[i] = plain_array[i] = i * 2654435761u;
}

__attribute__((noinline)) static void sum(void *ctx, uint64_t i)
{
	const uint64_t *a = ctx;
	uint64_t s = i;

	for (unsigned j = 0; j < WORDS; j++)
		s += a[j];
	sink = s;
}

void run_reads(const char *backend)
{
	struct bench_op ops[2] = {
		{"protected", sum, prot_array, NULL},
		{"plain", sum, plain_array, NULL},
	};
	struct stats st[2];

	measure_set(ops, 2, false, st);
	record(backend, "read16k", "alone", "ns", st[0].med, st[0].p99,
	       st[0].n);
	record(backend, "read16k/plain", "alone", "ns", st[1].med, st[1].p99,
	       st[1].n);
}
