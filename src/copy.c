// SPDX-License-Identifier: MIT
/*
 * copy.c - stores through a writable address that concurrent readers never
 * see torn: memcpy() may split even an aligned 8-byte copy into smaller or
 * overlapping stores, so aligned 1/2/4/8-byte units get one store each.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

void rw_store(void *dst, const void *src, size_t len)
{
	uintptr_t d = (uintptr_t)dst;

	if (len == 8 && !(d & 7)) {
		uint64_t v;

		memcpy(&v, src, 8);
		__atomic_store_n((uint64_t *)dst, v, __ATOMIC_RELAXED);
	} else if (len == 4 && !(d & 3)) {
		uint32_t v;

		memcpy(&v, src, 4);
		__atomic_store_n((uint32_t *)dst, v, __ATOMIC_RELAXED);
	} else if (len == 2 && !(d & 1)) {
		uint16_t v;

		memcpy(&v, src, 2);
		__atomic_store_n((uint16_t *)dst, v, __ATOMIC_RELAXED);
	} else {
		memmove(dst, src, len);
	}
}

/*
 * Not memset() for up to 8 bytes: glibc's (2.36, AVX2) fills 2 or 3 bytes
 * one byte at a time, and a reader saw an aligned 2-byte fill torn.
 */
void rw_fill(void *dst, int c, size_t len)
{
	if (len <= 8) {
		uint64_t v = 0x0101010101010101ULL * (unsigned char)c;

		rw_store(dst, &v, len);
	} else {
		memset(dst, c, len);
	}
}

void rw_seg_store(const struct rw_seg *s, void *at)
{
	if (s->src)
		rw_store(at, s->src, s->len);
	else
		rw_fill(at, s->fill, s->len);
}

void *rw_staging_copy(const void *addr, size_t len)
{
	void *stage = malloc(len);

	if (!stage)
		rw_die("rare_write_map", addr, "out of memory for %zu bytes",
		       len);
	memcpy(stage, addr, len);
	return stage;
}
