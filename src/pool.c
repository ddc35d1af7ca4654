// SPDX-License-Identifier: MIT
/*
 * pool.c - protected dynamic memory.
 *
 * A pool is one protected region: bookkeeping pages first, then object
 * pages. The bookkeeping is protected too, so an arbitrary-write bug cannot
 * bend the allocator into handing out memory twice or somewhere else; the
 * struct rare_pool pointer is the region's first byte and is checked
 * against the region table on every call.
 *
 * Small objects (up to 2 KiB) come from pages holding one power-of-two size
 * class each, with a bitmap of used slots per page: 40 bytes of bookkeeping
 * per 4 KiB page, so a million 32-byte objects cost about 1% over payload.
 * Larger objects take runs of whole pages. Memory is zeroed when freed, so
 * allocation writes nothing but bookkeeping. A pool may carry a name, kept
 * in its protected bookkeeping, that the fault report prints.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "rarewrite.h"
#include "internal.h"
#include "klock.h"
#include "pool_layout.h"

/* Allocation is serialised, every pool behind one lock that no store can
 * release (klock.c, taken inline: klock.h): a mutex word released while
 * held let two allocators hand out one object twice (attack 26b). */
static inline __attribute__((always_inline)) void pool_lock(void)
{
	rw_klock_take(RW_KLOCK_POOL);
}

static inline __attribute__((always_inline)) void pool_unlock(void)
{
	rw_klock_give(RW_KLOCK_POOL);
}

static size_t round_up(size_t x, size_t to)
{
	return (x + to - 1) / to * to;
}

static struct rw_region *pool_region(const char *call,
				     const struct rare_pool *pool)
{
	struct rw_region *r = pool ? rw_region_lookup(pool) : NULL;

	if (!r || r->kind != RW_REGION_POOL || r->start != (uintptr_t)pool ||
	    pool->magic != POOL_MAGIC)
		rw_die(call, pool, "not a live rare_pool");
	return r;
}

struct rare_pool *rare_pool_create(size_t capacity)
{
	return rare_pool_create_with(capacity, NULL);
}

struct rare_pool *rare_pool_create_with(size_t capacity,
					const struct rare_pool_opts *opts)
{
	struct rare_pool head = {.magic = POOL_MAGIC};
	const struct rw_backend *b = NULL;
	size_t meta_len;
	struct rw_region *r;
	struct rw_seg seg;
	int err;

	if (opts && (opts->flags & ~RARE_POOL_SEAL)) {
		errno = EINVAL;
		return NULL;
	}
	err = rw_backend_lookup(opts ? opts->backend : NULL, &b);
	if (err) {
		errno = -err;
		return NULL;
	}
	if (!capacity || capacity > (SIZE_MAX >> 2)) {
		errno = capacity ? ENOMEM : EINVAL;
		return NULL;
	}
	head.nr_pages = round_up(capacity, rw_page_size) / rw_page_size;
	if (head.nr_pages > UINT32_MAX) {
		errno = ENOMEM;
		return NULL;
	}
	meta_len = round_up(sizeof(head) +
				    head.nr_pages * sizeof(struct page_meta),
			    rw_page_size);
	r = rw_region_create(meta_len + head.nr_pages * rw_page_size, meta_len,
			     b, opts && (opts->flags & RARE_POOL_SEAL));
	if (!r)
		return NULL;
	head.objects = r->start + meta_len;
	for (unsigned c = 0; c < NR_CLASSES; c++)
		head.hint[c] = UINT32_MAX;
	seg = (struct rw_seg){.region = r,
			      .dst = (void *)r->start,
			      .src = &head,
			      .len = sizeof(head)};
	rw_write(&seg, 1);
	return (struct rare_pool *)r->start;
}

void rare_pool_destroy(struct rare_pool *pool)
{
	if (!pool)
		return;
	rw_region_destroy(pool_region("rare_pool_destroy", pool));
}

static unsigned size_class(size_t size)
{
	unsigned c = 0;

	while (((size_t)1 << (c + MIN_SHIFT)) < size)
		c++;
	return c;
}

static unsigned slots_of(unsigned c)
{
	return (unsigned)(4096 >> (c + MIN_SHIFT));
}

static void *page_addr(const struct rare_pool *pool, size_t page)
{
	return (void *)(pool->objects + page * rw_page_size);
}

/* Write the bookkeeping of @pool: @n copies of struct fields. */
static void meta_write(struct rw_region *r, void *dst, const void *src,
		       size_t len)
{
	struct rw_seg seg = {.region = r, .dst = dst, .src = src, .len = len};

	rw_write(&seg, 1);
}

int rare_pool_set_name(struct rare_pool *pool, const char *name)
{
	struct rw_region *r = pool_region("rare_pool_set_name", pool);
	char copy[RARE_POOL_NAME_MAX] = {0};
	size_t len = 0;

	if (name) {
		/* Bounded: never read past the longest name allowed. */
		while (len < sizeof(copy) && name[len])
			len++;
		if (len == sizeof(copy))
			return -ENAMETOOLONG;
		for (size_t i = 0; i < len; i++)
			if (name[i] < 0x20 || name[i] > 0x7e)
				return -EINVAL;
		memcpy(copy, name, len);
	}
	pool_lock();
	meta_write(r, pool->name, copy, sizeof(copy));
	pool_unlock();
	return 0;
}

/* A page of the class with a free slot, or a fresh one; SIZE_MAX if none. */
static size_t page_for_class(struct rw_region *r, struct rare_pool *pool,
			     unsigned c)
{
	size_t p = pool->hint[c];
	uint32_t hint;

	if (p < pool->bump && pool->meta[p].state == c + 1 &&
	    pool->meta[p].nr_used < slots_of(c))
		return p;
	for (p = 0; p < pool->bump; p++)
		if (pool->meta[p].state == c + 1 &&
		    pool->meta[p].nr_used < slots_of(c))
			goto found;
	for (p = 0; p < pool->bump; p++)
		if (pool->meta[p].state == PAGE_FREE)
			goto found;
	if (pool->bump == pool->nr_pages)
		return SIZE_MAX;
	p = pool->bump;
	meta_write(r, &pool->bump, &(size_t){p + 1}, sizeof(pool->bump));
found:
	hint = (uint32_t)p;
	meta_write(r, &pool->hint[c], &hint, sizeof(hint));
	return p;
}

static void *alloc_small(struct rw_region *r, struct rare_pool *pool,
			 unsigned c)
{
	size_t p = page_for_class(r, pool, c);
	struct page_meta m;
	unsigned slot;

	if (p == SIZE_MAX)
		return NULL;
	m = pool->meta[p];
	if (m.state == PAGE_FREE)
		m.state = (uint16_t)(c + 1);
	for (slot = 0; slot < slots_of(c); slot++)
		if (!(m.used_slots[slot / 64] & (1ULL << (slot % 64))))
			break;
	m.used_slots[slot / 64] |= 1ULL << (slot % 64);
	m.nr_used++;
	meta_write(r, &pool->meta[p], &m, sizeof(m));
	return (char *)page_addr(pool, p) + ((size_t)slot << (c + MIN_SHIFT));
}

static void *alloc_large(struct rw_region *r, struct rare_pool *pool,
			 size_t size)
{
	/* Not round_up(): sizes near SIZE_MAX would wrap to 0 pages. */
	size_t n = size / rw_page_size + (size % rw_page_size != 0);
	size_t p, run = 0;
	struct page_meta head = {.state = PAGE_LARGE_HEAD};
	struct page_meta tail = {.state = PAGE_LARGE_TAIL};

	if (n > pool->nr_pages)
		return NULL;
	/* First fit among freed pages, else from the untouched end. */
	for (p = 0; p < pool->bump && run < n; p++)
		run = pool->meta[p].state == PAGE_FREE ? run + 1 : 0;
	if (run == n) {
		p -= n;
	} else {
		p = pool->bump - run;
		if (pool->nr_pages - p < n)
			return NULL;
		meta_write(r, &pool->bump, &(size_t){p + n},
			   sizeof(pool->bump));
	}
	head.run = (uint32_t)n;
	for (size_t i = 1; i < n; i++)
		meta_write(r, &pool->meta[p + i], &tail, sizeof(tail));
	meta_write(r, &pool->meta[p], &head, sizeof(head));
	return page_addr(pool, p);
}

void *rare_alloc(struct rare_pool *pool, size_t size)
{
	struct rw_region *r = pool_region("rare_alloc", pool);
	void *obj;

	if (!size) {
		errno = EINVAL;
		return NULL;
	}
	pool_lock();
	if (size <= ((size_t)1 << (MIN_SHIFT + NR_CLASSES - 1)))
		obj = alloc_small(r, pool, size_class(size));
	else
		obj = alloc_large(r, pool, size);
	pool_unlock();
	if (!obj)
		errno = ENOMEM;
	return obj;
}

void rare_free(struct rare_pool *pool, void *obj)
{
	struct rw_region *r;
	struct page_meta m;
	uintptr_t off;
	size_t p;

	if (!obj)
		return;
	r = pool_region("rare_free", pool);
	off = (uintptr_t)obj - pool->objects;
	p = off / rw_page_size;
	if ((uintptr_t)obj < pool->objects || p >= pool->bump)
		rw_die("rare_free", obj, "not allocated from pool %p",
		       (void *)pool);
	pool_lock();
	m = pool->meta[p];
	if (m.state >= 1 && m.state <= NR_CLASSES) {
		unsigned c = m.state - 1u;
		size_t slot = (off % rw_page_size) >> (c + MIN_SHIFT);
		uint64_t bit = 1ULL << (slot % 64);
		struct rw_seg segs[2];

		if (off % ((size_t)1 << (c + MIN_SHIFT)) ||
		    !(m.used_slots[slot / 64] & bit)) {
			pool_unlock();
			rw_die("rare_free", obj,
			       "double free or not an object start");
		}
		m.used_slots[slot / 64] &= ~bit;
		m.nr_used--;
		if (!m.nr_used)
			m.state = PAGE_FREE; /* any class may reuse it */
		segs[0] = (struct rw_seg){.region = r,
					  .dst = obj,
					  .len = (size_t)1 << (c + MIN_SHIFT)};
		segs[1] = (struct rw_seg){.region = r,
					  .dst = &pool->meta[p],
					  .src = &m,
					  .len = sizeof(m)};
		rw_write(segs, 2);
	} else if (m.state == PAGE_LARGE_HEAD && !(off % rw_page_size)) {
		size_t n = m.run;
		struct rw_seg segs[2] = {
			{.region = r, .dst = obj, .len = n * rw_page_size},
			{.region = r,
			 .dst = &pool->meta[p],
			 .len = n * sizeof(m)},
		};

		rw_write(segs, 2);
	} else {
		pool_unlock();
		rw_die("rare_free", obj, "double free or not an object start");
	}
	pool_unlock();
}

/* The size of the object at @obj in @pool, or abort naming @call. */
static size_t object_size(const char *call, struct rare_pool *pool, void *obj)
{
	uintptr_t off = (uintptr_t)obj - pool->objects;
	size_t p = off / rw_page_size, size = 0;
	struct page_meta m;

	if ((uintptr_t)obj < pool->objects || p >= pool->bump)
		rw_die(call, obj, "not allocated from pool %p", (void *)pool);
	pool_lock();
	m = pool->meta[p];
	pool_unlock();
	if (m.state >= 1 && m.state <= NR_CLASSES) {
		unsigned c = m.state - 1u;
		size_t slot = (off % rw_page_size) >> (c + MIN_SHIFT);

		if (!(off % ((size_t)1 << (c + MIN_SHIFT))) &&
		    (m.used_slots[slot / 64] & (1ULL << (slot % 64))))
			size = (size_t)1 << (c + MIN_SHIFT);
	} else if (m.state == PAGE_LARGE_HEAD && !(off % rw_page_size)) {
		size = m.run * rw_page_size;
	}
	if (!size)
		rw_die(call, obj, "freed or not an object start");
	return size;
}

void *rare_realloc(struct rare_pool *pool, void *obj, size_t size)
{
	struct rw_region *r;
	struct rw_seg seg;
	size_t old;
	void *n;

	if (!obj)
		return rare_alloc(pool, size);
	r = pool_region("rare_realloc", pool);
	old = object_size("rare_realloc", pool, obj);
	if (!size) {
		errno = EINVAL;
		return NULL;
	}
	if (size <= old) {
		/* Shrinking in place: the bytes given up read as zero, as
		 * they would in a fresh object grown back later. */
		seg = (struct rw_seg){.region = r,
				      .dst = (char *)obj + size,
				      .len = old - size};
		if (seg.len)
			rw_write(&seg, 1);
		return obj;
	}
	n = rare_alloc(pool, size);
	if (!n)
		return NULL; /* errno ENOMEM; @obj is untouched */
	seg = (struct rw_seg){.region = r, .dst = n, .src = obj, .len = old};
	rw_write(&seg, 1);
	rare_free(pool, obj);
	return n;
}
