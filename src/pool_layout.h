/* SPDX-License-Identifier: MIT */
/*
 * pool_layout.h - the head of a pool (its first bookkeeping page), shared by
 * pool.c, which owns it, and the fault report, which prints a pool's name
 * from it (rw_pool_name(), an inline that calls nothing, so the report
 * does not depend on the allocator).
 */
#ifndef RAREWRITE_POOL_LAYOUT_H
#define RAREWRITE_POOL_LAYOUT_H

#include <stdint.h>

#include "rarewrite.h"
#include "internal.h"

#define POOL_MAGIC 0x72617265706f6f6cULL /* "rarepool" */
#define MIN_SHIFT 4			 /* 16-byte slots */
#define NR_CLASSES 8			 /* 16 .. 2048 bytes */
#define SLOT_WORDS 4			 /* 256 bits: 4096 / 16 slots */

enum page_state {
	PAGE_FREE = 0,
	/* 1 .. NR_CLASSES: small objects of class state - 1 */
	PAGE_LARGE_HEAD = NR_CLASSES + 1,
	PAGE_LARGE_TAIL,
};

struct page_meta {
	uint64_t used_slots[SLOT_WORDS];
	uint16_t state;
	uint16_t nr_used;
	uint32_t run; /* pages in a large run, on its head */
};

struct rare_pool {
	uint64_t magic;
	/* rare_pool_set_name(): printable ASCII, NUL-padded; read by the
	 * fault report (rw_pool_name()), protected like the rest. */
	char name[RARE_POOL_NAME_MAX];
	size_t nr_pages;	   /* object pages */
	uintptr_t objects;	   /* first object page */
	size_t bump;		   /* object pages ever handed out */
	uint32_t hint[NR_CLASSES]; /* a page of the class with free slots */
	struct page_meta meta[];
};

/*
 * For the fault report, async-signal-safe: the name of the pool whose
 * region is @r into @out (RARE_POOL_NAME_MAX bytes), or "" if it has none.
 * The pool's head is protected memory found through the region table, not
 * through a pointer anyone can store; the copy is bounded and keeps
 * printable ASCII only, whatever the bytes are.
 */
static inline void rw_pool_name(const struct rw_region *r, char *out)
{
	const struct rare_pool *pool = (const struct rare_pool *)r->start;
	size_t i = 0;

	out[0] = 0;
	if (r->kind != RW_REGION_POOL ||
	    r->user_start - r->start < sizeof(struct rare_pool) ||
	    pool->magic != POOL_MAGIC)
		return;
	for (; i < RARE_POOL_NAME_MAX - 1; i++) {
		char c = ((const volatile char *)pool->name)[i];

		if (!c)
			break;
		out[i] = c >= 0x20 && c <= 0x7e ? c : '?';
	}
	out[i] = 0;
}

/* Whether @size bytes at @obj (a multiple of 8) all read zero. */
static inline bool rw_pool_all_zero(const void *obj, size_t size)
{
	const volatile uint64_t *w = obj;

	for (size_t i = 0; i < size / sizeof(*w); i++)
		if (w[i])
			return false;
	return true;
}

/*
 * The fields of @r's pool head that never change after its creation: the
 * ones its region (the table's record) implies. Compared field by field
 * with values computed here, not with an expected head built on the
 * stack, which the store that changed the head rewrites too.
 */
static inline bool rw_pool_head_fixed_ok(const struct rw_region *r)
{
	const struct rare_pool *pool = (const struct rare_pool *)r->start;

	return pool->magic == POOL_MAGIC && pool->objects == r->user_start &&
	       pool->nr_pages ==
		       (r->start + r->len - r->user_start) / rw_page_size;
}

#endif /* RAREWRITE_POOL_LAYOUT_H */
