// SPDX-License-Identifier: MIT
/*
 * shadow.c - Gleixner's writable shadow alias, the kmap_atomic() of user
 * space.
 *
 * Protected memory is a memfd mapped read-only. A write maps a writable
 * alias of just the touched pages at an address the kernel chooses, stores
 * through it and unmaps it. The alias is visible to every thread while it
 * exists; its address is not known in advance, but /proc/self/maps shows it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "rarewrite.h"
#include "internal.h"
#include "memfd_region.h"

/* This backend's ops table (at the end), listed in backends.c. */
extern const struct rw_backend rw_backend_shadow RW_HIDDEN;

static int shadow_setup(void)
{
	return 0;
}

struct alias {
	char *base; /* the mapping */
	size_t len;
	char *at; /* the alias of the requested address */
};

static struct alias alias_map(const char *call, const struct rw_region *r,
			      void *addr, size_t len)
{
	uintptr_t first = (uintptr_t)addr & ~(rw_page_size - 1);
	uintptr_t last = ((uintptr_t)addr + len + rw_page_size - 1) &
			 ~(rw_page_size - 1);
	struct alias a = {.len = last - first};

	a.base = mmap(NULL, a.len, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd,
		      (off_t)(first - r->start));
	if (a.base == MAP_FAILED)
		rw_die(call, addr, "cannot map a writable alias: %s",
		       strerror(errno));
	a.at = a.base + ((uintptr_t)addr - first);
	return a;
}

/*
 * Each segment is copied out of the caller's memory (its stack, which
 * another thread's store can rewrite) and only the validated copy is used:
 * the store through the alias has the length the alias was mapped for.
 */
static void shadow_write(const struct rw_seg *segs, unsigned n)
{
	rw_memfd_write_lock(false);
	for (unsigned i = 0; i < n; i++) {
		const struct rw_seg s = segs[i];
		struct alias a = alias_map("rare_write_memcpy",
					   rw_seg_region(&s), s.dst, s.len);

		rw_seg_store(&s, a.at);
		munmap(a.base, a.len);
	}
	rw_memfd_write_unlock();
}

/* The lock first, then the segment from the arguments (internal.h). */
static void shadow_write_one(const char *call, void *dst, const void *src,
			     size_t len, int fill)
{
	struct rw_seg s;
	struct alias a;

	rw_memfd_write_lock(false);
	rw_seg_make(&rw_backend_shadow, call, dst, src, len, fill, &s);
	a = alias_map(call, s.region, s.dst, s.len);
	rw_seg_store(&s, a.at);
	munmap(a.base, a.len);
	rw_memfd_write_unlock();
}

/* The alias itself is the view. The core holds fork() off until unmap
 * (fork_waits_for_views), so no fork copies the region half-written and
 * no child inherits the alias. */
static void *shadow_map(struct rw_region *r, void *addr, size_t len)
{
	return alias_map("rare_write_map", r, addr, len).at;
}

static void shadow_unmap(struct rw_region *r, void *view, void *addr,
			 size_t len)
{
	uintptr_t base = (uintptr_t)view & ~(rw_page_size - 1);
	uintptr_t end = ((uintptr_t)view + len + rw_page_size - 1) &
			~(rw_page_size - 1);

	(void)r;
	(void)addr;
	munmap((void *)base, end - base);
}

const struct rw_backend rw_backend_shadow = {
	.name = "shadow",
	.caps = 0,
	.dontfork_views = true,
	.fork_waits_for_views = true,
	.setup = shadow_setup,
	.adopt = rw_memfd_adopt,
	.create = rw_memfd_create,
	.destroy = rw_memfd_destroy,
	.write = shadow_write,
	.write_one = shadow_write_one,
	.map = shadow_map,
	.unmap = shadow_unmap,
	.fork_prepare = rw_memfd_fork_prepare,
	.fork_parent = rw_memfd_fork_parent,
	.fork_child = rw_memfd_fork_child,
};
