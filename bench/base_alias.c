// SPDX-License-Identifier: MIT
/*
 * base_alias.c - baseline of the shadow backend: a memfd mapped read-only;
 * each write maps a writable alias of the touched pages, stores through it
 * and unmaps it.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "bench.h"

struct ctx {
	int fd;
	size_t len, size;
	const uint64_t *view;
	unsigned char *src;
};

static void run(void *p, uint64_t i)
{
	struct ctx *c = p;
	uint64_t *alias;

	memcpy(c->src, &i, sizeof(i));
	alias = mmap(NULL, c->size, PROT_READ | PROT_WRITE, MAP_SHARED, c->fd,
		     0);
	if (alias == MAP_FAILED)
		abort();
	if (c->len == 8)
		__atomic_store_n(alias, i, __ATOMIC_RELAXED);
	else
		memcpy(alias, c->src, c->len);
	munmap(alias, c->size);
}

struct bench_op base_alias(size_t len)
{
	struct ctx *c = calloc(1, sizeof(*c));

	c->len = len;
	c->size = (len + 4095) & ~(size_t)4095;
	c->src = calloc(1, len);
	c->fd = memfd_create("bench-alias", MFD_CLOEXEC);
	if (c->fd < 0 || ftruncate(c->fd, (off_t)c->size))
		abort();
	c->view = mmap(NULL, c->size, PROT_READ, MAP_SHARED, c->fd, 0);
	if (c->view == MAP_FAILED)
		abort();
	return (struct bench_op){"raw mmap/munmap alias", run, c, c->view};
}
