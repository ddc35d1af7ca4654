// SPDX-License-Identifier: MIT
/*
 * base_pwrite.c - baseline of the pwrite backend: pwrite() of @len bytes
 * into a memfd that the process maps read-only, nothing else.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "bench.h"

struct ctx {
	int fd;
	size_t len;
	const uint64_t *view;
	unsigned char *src;
};

static void run(void *p, uint64_t i)
{
	struct ctx *c = p;

	memcpy(c->src, &i, sizeof(i));
	if (pwrite(c->fd, c->src, c->len, 0) != (ssize_t)c->len)
		abort();
}

struct bench_op base_pwrite(size_t len)
{
	struct ctx *c = calloc(1, sizeof(*c));
	size_t size = (len + 4095) & ~(size_t)4095;

	c->len = len;
	c->src = calloc(1, len);
	c->fd = memfd_create("bench-pwrite", MFD_CLOEXEC);
	if (c->fd < 0 || ftruncate(c->fd, (off_t)size))
		abort();
	c->view = mmap(NULL, size, PROT_READ, MAP_SHARED, c->fd, 0);
	if (c->view == MAP_FAILED)
		abort();
	return (struct bench_op){"raw pwrite", run, c, c->view};
}
