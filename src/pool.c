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
#include "rawsys.h"
#include "table.h"

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

static __attribute__((noreturn, noinline)) void
pool_refused(const char *call, const struct rare_pool *pool)
{
	rw_die(call, pool, "not a live rare_pool");
}

/*
 * The table's region of @pool, or abort naming @call. Inline, no function
 * call: rare_free() keeps the object it was given in a register up to its
 * first write, where a callee would save it on the stack for another
 * thread to rewrite (then a free of another live object).
 */
static inline __attribute__((always_inline)) struct rw_region *
pool_region(const char *call, const struct rare_pool *pool)
{
	unsigned nr = __atomic_load_n(&rw_table.nr_regions, __ATOMIC_ACQUIRE);

	for (struct rw_region *r = rw_table.regions; r < rw_table.regions + nr;
	     r++)
		if (__atomic_load_n(&r->kind, __ATOMIC_ACQUIRE) ==
			    RW_REGION_POOL &&
		    r->start == (uintptr_t)pool && pool->magic == POOL_MAGIC)
			return r;
	pool_refused(call, pool);
}

struct rare_pool *rare_pool_create(size_t capacity)
{
	return rare_pool_create_with(capacity, NULL);
}

struct rare_pool *rare_pool_create_with(size_t capacity,
					const struct rare_pool_opts *opts)
{
	/* Not rw_page_size: getpagesize() is a call, and @opts would cross it
	 * in a register its callee may save on the stack (27m). */
	const size_t page = RW_RAWSYS_PAGE;
	size_t meta_len, nr_pages;
	struct rw_region *r;

	if (opts && (opts->flags & ~RARE_POOL_SEAL)) {
		errno = EINVAL;
		return NULL;
	}
	if (!capacity || capacity > (SIZE_MAX >> 2)) {
		errno = capacity ? ENOMEM : EINVAL;
		return NULL;
	}
	nr_pages = (capacity + page - 1) / page;
	if (nr_pages > UINT32_MAX) {
		errno = ENOMEM;
		return NULL;
	}
	meta_len = (sizeof(struct rare_pool) +
		    nr_pages * sizeof(struct page_meta) + page - 1) /
		   page * page;
	/* The backend's name, the lengths and the seal go to the core in
	 * registers, with no call since they came in: it puts them into the
	 * table before its first call (27m), and writes the head
	 * (pool_head_write() there). */
	r = rw_region_create(meta_len + nr_pages * page, meta_len,
			     opts ? opts->backend : NULL,
			     opts && (opts->flags & RARE_POOL_SEAL));
	return r ? (struct rare_pool *)r->start : NULL;
}

void rare_pool_destroy(struct rare_pool *pool)
{
	if (!pool)
		return;
	/* Found by the core under its lock, not here: a slot found before
	 * the wait crossed it (27o). */
	rw_region_destroy(pool);
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

	rw_write(&seg);
}

/*
 * Why a bookkeeping write can be trusted. The record a write puts in is
 * built in this frame, and the backend reads it (and the segment that says
 * where it goes) only after its locks and system calls: a store into the
 * stack in between changes what goes in (a new slot's bit cleared: one
 * object handed out twice) or where (rw_seg_region() accepts any place in
 * the pool's region). So the record is computed from the protected one
 * under the pool lock, and after the write the protected record is read
 * back and must be exactly the one this call meant (@want, kept apart from
 * the copy the write reads), each slot counted once (its count the number
 * of bits set) and the call's own slot used (alloc) or free (free);
 * anything else aborts before the object is handed out or the call
 * returns. Under the pool lock no other call writes the bookkeeping (a
 * pipe no store releases, klock.c), so what is read back is this call's
 * write. What remains: a store that rewrites both copies of the record and
 * the slot number (a callee-saved register its callee saved on the stack)
 * the same way at once (SECURITY.md).
 */
static void meta_verify(const char *call, const struct rare_pool *pool,
			size_t p, const struct page_meta *want, unsigned slot,
			bool used)
{
	const volatile struct page_meta *got = &pool->meta[p];
	unsigned bits = 0;
	bool ok = got->state == want->state && got->nr_used == want->nr_used &&
		  got->run == want->run;

	for (unsigned i = 0; i < SLOT_WORDS; i++) {
		uint64_t w = got->used_slots[i];

		ok &= w == want->used_slots[i];
		bits += (unsigned)__builtin_popcountll(w);
	}
	ok &= bits == got->nr_used && slot < 64 * SLOT_WORDS &&
	      !(got->used_slots[slot / 64] & (1ULL << (slot % 64))) == !used;
	if (!ok)
		rw_die(call, (const void *)&pool->meta[p],
		       "the pool's bookkeeping is not what this call wrote (a "
		       "store into the caller's stack?)");
}

/* Zeroes, for the freed objects that are not zero already (none written,
 * none to redirect). Read-only (.rodata): the source no store changes. */
static const unsigned char zero_page[4096] __attribute__((aligned(64)));

/*
 * Zero the object at @obj of @size bytes being freed. Not a segment in
 * this frame: the public write path, whose backends take the destination
 * and length in registers and check them against the table after their
 * locks (write_one), so the write goes to @obj and its @size bytes; read
 * back afterwards, the object must be zero.
 */
static void zero_object(const char *call, void *obj, size_t size)
{
	if (rw_pool_all_zero(obj, size))
		return;
	rw_write_args(call, obj, size <= sizeof(zero_page) ? zero_page : NULL,
		      size, 0);
	if (!rw_pool_all_zero(obj, size))
		rw_die(call, obj,
		       "the freed object was not zeroed (a store into the "
		       "caller's stack?)");
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
	/* The write's segment waits on the stack for the backend, which
	 * checks only that it lies in the pool's region: moved to a live
	 * object, the name went over it (27j). So an unchanged name is not
	 * written, and a changed one must read back. */
	if (memcmp(pool->name, copy, sizeof(copy))) {
		meta_write(r, pool->name, copy, sizeof(copy));
		/* The rest of the head too: a segment made longer went
		 * over the fields after the name. */
		if (memcmp(pool->name, copy, sizeof(copy)) ||
		    !rw_pool_head_fixed_ok(r)) {
			pool_unlock();
			rw_die("rare_pool_set_name", pool,
			       "the name was not written to the pool's head (a "
			       "store into the caller's stack?)");
		}
	}
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
	if (pool->bump != p + 1)
		rw_die("rare_alloc", &pool->bump,
		       "the pool's bookkeeping is not what this call wrote (a "
		       "store into the caller's stack?)");
found:
	hint = (uint32_t)p;
	meta_write(r, &pool->hint[c], &hint, sizeof(hint));
	return p;
}

static void *alloc_small(struct rw_region *r, struct rare_pool *pool,
			 unsigned c)
{
	size_t p = page_for_class(r, pool, c);
	struct page_meta want, m;
	unsigned slot;

	if (p == SIZE_MAX)
		return NULL;
	want = pool->meta[p];
	if (want.state == PAGE_FREE)
		want.state = (uint16_t)(c + 1);
	for (slot = 0; slot < slots_of(c); slot++)
		if (!(want.used_slots[slot / 64] & (1ULL << (slot % 64))))
			break;
	if (slot == slots_of(c))
		rw_die("rare_alloc", &pool->meta[p],
		       "the pool's bookkeeping counts a free slot in a full "
		       "page");
	want.used_slots[slot / 64] |= 1ULL << (slot % 64);
	want.nr_used++;
	m = want; /* what the write reads; @want is what it must have put */
	meta_write(r, &pool->meta[p], &m, sizeof(m));
	meta_verify("rare_alloc", pool, p, &want, slot, true);
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
	const struct page_meta want_tail = {.state = PAGE_LARGE_TAIL};
	struct page_meta want_head;

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
		if (pool->bump != p + n)
			rw_die("rare_alloc", &pool->bump,
			       "the pool's bookkeeping is not what this call "
			       "wrote (a store into the caller's stack?)");
	}
	head.run = (uint32_t)n;
	want_head = head;
	for (size_t i = 1; i < n; i++) {
		meta_write(r, &pool->meta[p + i], &tail, sizeof(tail));
		meta_verify("rare_alloc", pool, p + i, &want_tail, 0, false);
	}
	meta_write(r, &pool->meta[p], &head, sizeof(head));
	meta_verify("rare_alloc", pool, p, &want_head, 0, false);
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
	struct page_meta want, m;
	/* Not rw_page_size: getpagesize() is a call (see pool_region()). */
	const size_t page = RW_RAWSYS_PAGE;
	uintptr_t off;
	size_t p;

	if (!obj)
		return;
	r = pool_region("rare_free", pool);
	off = (uintptr_t)obj - pool->objects;
	p = off / page;
	if ((uintptr_t)obj < pool->objects || p >= pool->bump)
		rw_die("rare_free", obj, "not allocated from pool %p",
		       (void *)pool);
	pool_lock();
	want = pool->meta[p];
	if (want.state >= 1 && want.state <= NR_CLASSES) {
		unsigned c = want.state - 1u;
		size_t slot = (off % page) >> (c + MIN_SHIFT);
		uint64_t bit = 1ULL << (slot % 64);

		if (off % ((size_t)1 << (c + MIN_SHIFT)) ||
		    !(want.used_slots[slot / 64] & bit)) {
			pool_unlock();
			rw_die("rare_free", obj,
			       "double free or not an object start");
		}
		want.used_slots[slot / 64] &= ~bit;
		want.nr_used--;
		if (!want.nr_used)
			want.state = PAGE_FREE; /* any class may reuse it */
		zero_object("rare_free", obj, (size_t)1 << (c + MIN_SHIFT));
		m = want; /* what the write reads; @want is what it must put */
		meta_write(r, &pool->meta[p], &m, sizeof(m));
		meta_verify("rare_free", pool, p, &want, (unsigned)slot, false);
	} else if (want.state == PAGE_LARGE_HEAD && !(off % page)) {
		size_t n = want.run;
		struct rw_seg seg = {.region = r,
				     .dst = &pool->meta[p],
				     .len = n * sizeof(m)};

		if (!n || n > pool->bump - p) {
			pool_unlock();
			rw_die("rare_free", obj,
			       "the pool's bookkeeping gives a run past its "
			       "pages");
		}
		zero_object("rare_free", obj, n * page);
		rw_write(&seg);
		memset(&want, 0, sizeof(want));
		for (size_t i = 0; i < n; i++)
			meta_verify("rare_free", pool, p + i, &want, 0, false);
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
	size_t old;
	void *n;

	if (!obj)
		return rare_alloc(pool, size);
	pool_region("rare_realloc", pool);
	old = object_size("rare_realloc", pool, obj);
	if (!size) {
		errno = EINVAL;
		return NULL;
	}
	/* Both writes through the public write path (write_one: the
	 * arguments in registers to the store), not a segment on the stack
	 * that a backend reads after its locks (27l: the copy moved to
	 * another live object of the pool). */
	if (size <= old) {
		/* Shrinking in place: the bytes given up read as zero, as
		 * they would in a fresh object grown back later. */
		if (old > size)
			rw_write_args("rare_realloc", (char *)obj + size, NULL,
				      old - size, 0);
		return obj;
	}
	n = rare_alloc(pool, size);
	if (!n)
		return NULL; /* errno ENOMEM; @obj is untouched */
	/* @old crossed rare_alloc()'s lock wait in a register its callees
	 * saved on the stack: the length copied is taken from the pool's
	 * bookkeeping again, and never more than the new object holds (a
	 * longer copy ran over into the objects after it). */
	old = object_size("rare_realloc", pool, obj);
	if (old > object_size("rare_realloc", pool, n))
		rw_die("rare_realloc", obj,
		       "the old object is larger than the new one (a store "
		       "into the caller's stack?)");
	rw_write_args("rare_realloc", n, obj, old, 0);
	rare_free(pool, obj);
	return n;
}
