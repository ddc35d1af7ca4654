// SPDX-License-Identifier: MIT
/*
 * base_mprotect.c - baseline of the mprotect backend: flip the pages of
 * @len bytes RW, store, flip them back RO; either a mapping of their own or
 * pages inside a larger read-only mapping, as protected data usually is (a
 * __wr_rare section of several pages, a pool).
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "bench.h"

struct ctx {
	size_t len, size;
	uint64_t *mem; /* the pages flipped */
	unsigned char *src;
};

static void run(void *p, uint64_t i)
{
	struct ctx *c = p;

	memcpy(c->src, &i, sizeof(i));
	if (mprotect(c->mem, c->size, PROT_READ | PROT_WRITE))
		abort();
	if (c->len == 8)
		__atomic_store_n(c->mem, i, __ATOMIC_RELAXED);
	else
		memcpy(c->mem, c->src, c->len);
	if (mprotect(c->mem, c->size, PROT_READ))
		abort();
}

/* @pad pages of read-only mapping on either side of the flipped pages:
 * with pad 0 the flipped pages are a mapping of their own; otherwise each
 * flip splits the mapping (VMA) in three and the flip back merges it. */
static struct bench_op make(size_t len, size_t pad, const char *name)
{
	struct ctx *c = calloc(1, sizeof(*c));
	size_t total;
	char *base;

	c->len = len;
	c->size = (len + 4095) & ~(size_t)4095;
	c->src = calloc(1, len);
	total = c->size + 2 * pad * 4096;
	base = mmap(NULL, total, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (base == MAP_FAILED)
		abort();
	memset(base, 1, total); /* populate, as a section would be */
	if (mprotect(base, total, PROT_READ))
		abort();
	c->mem = (uint64_t *)(base + pad * 4096);
	return (struct bench_op){name, run, c, c->mem};
}

struct bench_op base_mprotect(size_t len)
{
	return make(len, 0, "raw mprotect pair");
}

struct bench_op base_mprotect_within(size_t len)
{
	return make(len, 8, "raw mprotect pair within a mapping");
}
