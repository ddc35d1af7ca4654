// SPDX-License-Identifier: MIT
/*
 * base_wrpkru.c - baseline of the pkey backend: open a write-disabled
 * protection key with WRPKRU, store 8 bytes into a page tagged with it,
 * and close the key again with a second WRPKRU. That is the least any
 * pkey window can cost; the library's rare_write() adds its checks.
 *
 * Only built into the pkey comparison: on a CPU without PKU (or a kernel
 * that gives out no key) the constructor aborts, and the pkey backend is
 * then unavailable anyway.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "bench.h"

#if defined(__x86_64__) || defined(__i386__)
struct ctx {
	uint64_t *page;
	uint32_t open, closed; /* PKRU values: the key writable, not */
};

static inline void wrpkru(uint32_t pkru)
{
	__asm__ volatile("wrpkru" : : "a"(pkru), "c"(0), "d"(0) : "memory");
}

static inline uint32_t rdpkru(void)
{
	uint32_t eax, edx;

	__asm__ volatile("rdpkru" : "=a"(eax), "=d"(edx) : "c"(0));
	return eax;
}

static void run(void *p, uint64_t i)
{
	const struct ctx *c = p;

	wrpkru(c->open);
	__atomic_store_n(c->page, i, __ATOMIC_RELAXED);
	wrpkru(c->closed);
}

struct bench_op base_wrpkru(void)
{
	struct ctx *c = calloc(1, sizeof(*c));
	int key = pkey_alloc(0, PKEY_DISABLE_WRITE);

	if (!c || key < 0) {
		fprintf(stderr, "base_wrpkru: no protection key\n");
		abort();
	}
	c->page = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (c->page == MAP_FAILED ||
	    pkey_mprotect(c->page, 4096, PROT_READ | PROT_WRITE, key))
		abort();
	c->closed = rdpkru();
	c->open = c->closed & ~(3u << (2 * key));
	return (struct bench_op){"2 WRPKRU and a store", run, c, c->page};
}
#else
struct bench_op base_wrpkru(void)
{
	fprintf(stderr, "base_wrpkru: not an x86 CPU\n");
	abort();
}
#endif
