// SPDX-License-Identifier: MIT
/*
 * base_mprotect.c - baseline of the mprotect backend: flip the pages of
 * @len bytes RW, store, flip them back RO.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "bench.h"

struct ctx {
	size_t len, size;
	uint64_t *mem;
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

struct bench_op base_mprotect(size_t len)
{
	struct ctx *c = calloc(1, sizeof(*c));

	c->len = len;
	c->size = (len + 4095) & ~(size_t)4095;
	c->src = calloc(1, len);
	c->mem = mmap(NULL, c->size, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (c->mem == MAP_FAILED)
		abort();
	memset(c->mem, 1, c->size); /* populate, as a section would be */
	if (mprotect(c->mem, c->size, PROT_READ))
		abort();
	return (struct bench_op){"raw mprotect pair", run, c, c->mem};
}
