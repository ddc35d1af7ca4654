/* SPDX-License-Identifier: MIT */
/*
 * region_find.h - the region lookup of the write paths, inline: they keep
 * their arguments in registers up to the backend (rawsys.h). Apart from
 * table.h so that only its users depend on the table's object (region.o),
 * not every file that includes table.h (tests/check-deps.sh).
 */
#ifndef RAREWRITE_REGION_FIND_H
#define RAREWRITE_REGION_FIND_H

#include "table.h"

/* The live region that holds [a, a + len) where callers may write, or
 * NULL; inline, no function call: the write path keeps its arguments in
 * registers up to the backend (rawsys.h). */
static inline __attribute__((always_inline)) const struct rw_region *
rw_region_find(uintptr_t a, size_t len)
{
	unsigned nr = __atomic_load_n(&rw_table.nr_regions, __ATOMIC_ACQUIRE);
	const struct rw_region *r;

	for (r = rw_table.regions; r < rw_table.regions + nr; r++)
		if (__atomic_load_n(&r->kind, __ATOMIC_ACQUIRE) !=
			    RW_REGION_FREE &&
		    a >= r->start && a - r->start < r->len)
			return a >= r->user_start &&
					       len <= r->start + r->len - a
				       ? r
				       : NULL;
	return NULL;
}

/*
 * Whether @r, a segment's region (read from the caller's memory, as the
 * segment), is a live record of the table on backend @b that holds
 * [@a, @a + @len): rw_seg_region()'s check, inline, for the backends
 * that apply the segment from registers right after it. Bookkeeping
 * below user_start is included: a pool's records are written as
 * segments.
 */
static inline __attribute__((always_inline)) bool
rw_seg_holds(const struct rw_region *r, const struct rw_backend *b, uintptr_t a,
	     size_t len)
{
	uintptr_t at = (uintptr_t)r - (uintptr_t)rw_table.regions;

	return at < sizeof(rw_table.regions) && !(at % sizeof(*r)) &&
	       __atomic_load_n(&r->kind, __ATOMIC_ACQUIRE) != RW_REGION_FREE &&
	       r->backend == b && r->protected_ && a >= r->start &&
	       a - r->start < r->len && len <= r->start + r->len - a;
}

#endif /* RAREWRITE_REGION_FIND_H */
