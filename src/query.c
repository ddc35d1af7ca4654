// SPDX-License-Identifier: MIT
/*
 * query.c - ask before writing: code handed a pointer that may or may not
 * point into protected memory (a caller's struct linked into a protected
 * list) chooses between rare_write() and a plain store.
 */
#include <stdint.h>

#include "rarewrite.h"
#include "internal.h"

int rare_write_is_protected(const void *addr, size_t len)
{
	const struct rw_region *r = rw_region_lookup(addr);
	uintptr_t a = (uintptr_t)addr;

	/* Never 1 for memory a plain store can still change: a section or
	 * pool that is not protected yet (before init) answers 0. */
	if (!r || a < r->user_start ||
	    !__atomic_load_n(&r->protected_, __ATOMIC_ACQUIRE))
		return 0;
	return (len ? len : 1) <= r->start + r->len - a;
}

/* The version this library was built as (VERSION, through the header). */
unsigned rare_write_version(void)
{
	return RAREWRITE_VERSION_NUMBER(RAREWRITE_VERSION_MAJOR,
					RAREWRITE_VERSION_MINOR,
					RAREWRITE_VERSION_PATCH);
}
