// SPDX-License-Identifier: MIT
/*
 * pwrite.c - the kernel writes through its own mapping.
 *
 * Protected memory is a memfd mapped read-only; a write is pwrite(2) at the
 * region's offset, so the kernel copies into the page cache page that the
 * view maps. No writable mapping of protected memory ever exists in the
 * process. (Writing through /proc/self/mem instead would tear 8-byte values
 * for concurrent readers; pwrite into shmem was measured never to.)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "rarewrite.h"
#include "internal.h"
#include "memfd_region.h"

/* This backend's ops table (at the end), listed in backends.c. */
extern const struct rw_backend rw_backend_pwrite RW_HIDDEN;

static int pwrite_setup(void)
{
	return 0;
}

static void pwrite_fill(const struct rw_seg *s, int fd, off_t off)
{
	unsigned char buf[4096];
	struct iovec iov[64];
	size_t left = s->len;

	memset(buf, s->fill, s->len < sizeof(buf) ? s->len : sizeof(buf));
	while (left) {
		int n = 0;
		size_t chunk = 0;

		/* One call covers up to 256 KiB with one buffer repeated. */
		for (; n < 64 && chunk < left; n++) {
			size_t l = left - chunk < sizeof(buf) ? left - chunk
							      : sizeof(buf);

			iov[n] = (struct iovec){buf, l};
			chunk += l;
		}
		ssize_t done = pwritev(fd, iov, n, off);

		if (done <= 0)
			rw_die("rare_write_memset", s->dst, "pwritev: %s",
			       strerror(errno));
		/* shmem writes do not stop short; if one did, go around. */
		left -= (size_t)done;
		off += done;
	}
}

static void pwrite_copy(const struct rw_seg *s, int fd, off_t off)
{
	const char *src = s->src;
	size_t left = s->len;

	while (left) {
		ssize_t done = pwrite(fd, src, left, off);

		if (done <= 0)
			rw_die("rare_write_memcpy", s->dst, "pwrite: %s",
			       strerror(errno));
		left -= (size_t)done;
		src += done;
		off += done;
	}
}

/*
 * The kernel copies fewer than 8 bytes one byte at a time (x86-64
 * rep_movs_alternative), so a concurrent reader could see an aligned 2- or
 * 4-byte value half written; 8 aligned bytes are one store. So such a write
 * goes out as a pwrite of the aligned 8-byte word that holds it, the other
 * bytes rewritten with their current contents. That read-merge-write must
 * not race with other writes to the word: it takes the memfd write lock
 * exclusively, which every other write holds shared.
 */

static bool needs_widening(const struct rw_seg *s)
{
	return (s->len == 2 || s->len == 4) && !((uintptr_t)s->dst % s->len);
}

static void pwrite_widened(const struct rw_seg *s, const struct rw_region *r)
{
	uintptr_t word = (uintptr_t)s->dst & ~(uintptr_t)7;
	unsigned char v[8];
	struct rw_seg w = {.dst = (void *)word, .src = v, .len = 8};

	memcpy(v, (const void *)word, 8);
	if (s->src)
		memcpy(v + ((uintptr_t)s->dst - word), s->src, s->len);
	else
		memset(v + ((uintptr_t)s->dst - word), s->fill, s->len);
	pwrite_copy(&w, r->fd, (off_t)(word - r->start));
}

/*
 * Each segment is copied out of the caller's memory (its stack, which
 * another thread's store can rewrite), the copy validated against the
 * table (rw_seg_region()) and only the copy used: the region's descriptor
 * and the offset, length and source that go to the kernel are the ones
 * checked, and the region is looked up once. @widen says how the memfd
 * write lock is held: a segment that needs widening under a shared lock
 * changed after the lock was chosen.
 */
static void pwrite_seg(const struct rw_seg *seg, bool widen)
{
	const struct rw_seg s = *seg;
	const struct rw_region *r = rw_seg_region(&s);
	off_t off = (off_t)((uintptr_t)s.dst - r->start);

	if (needs_widening(&s) && !widen)
		rw_die("rare_write", s.dst,
		       "a validated write changed before it was "
		       "applied (a store into the caller's stack?)");
	if (needs_widening(&s))
		pwrite_widened(&s, r);
	else if (s.src)
		pwrite_copy(&s, r->fd, off);
	else
		pwrite_fill(&s, r->fd, off);
}

static void pwrite_write(const struct rw_seg *segs, unsigned n)
{
	bool widen = false;

	for (unsigned i = 0; i < n; i++)
		widen |= needs_widening(&segs[i]);
	rw_memfd_write_lock(widen);
	for (unsigned i = 0; i < n; i++)
		pwrite_seg(&segs[i], widen);
	rw_memfd_write_unlock();
}

/* The lock first, then the segment from the arguments (internal.h). */
static void pwrite_write_one(const char *call, void *dst, const void *src,
			     size_t len, int fill)
{
	bool widen = (len == 2 || len == 4) && !((uintptr_t)dst % len);
	struct rw_seg s;

	rw_memfd_write_lock(widen);
	rw_seg_make(&rw_backend_pwrite, call, dst, src, len, fill, &s);
	pwrite_seg(&s, widen);
	rw_memfd_write_unlock();
}

/* map hands out a private staging copy; unmap commits it in one pwrite. */
static void *pwrite_map(struct rw_region *r, void *addr, size_t len)
{
	(void)r;
	return rw_staging_copy(addr, len);
}

static void pwrite_unmap(struct rw_region *r, void *view, void *addr,
			 size_t len)
{
	struct rw_seg seg = {.region = r, .dst = addr, .src = view, .len = len};

	pwrite_write(&seg, 1);
	free(view);
}

const struct rw_backend rw_backend_pwrite = {
	.name = "pwrite",
	.caps = 0,
	.dontfork_views = true,
	.setup = pwrite_setup,
	.adopt = rw_memfd_adopt,
	.create = rw_memfd_create,
	.destroy = rw_memfd_destroy,
	.write = pwrite_write,
	.write_one = pwrite_write_one,
	.map = pwrite_map,
	.unmap = pwrite_unmap,
	.fork_prepare = rw_memfd_fork_prepare,
	.fork_parent = rw_memfd_fork_parent,
	.fork_child = rw_memfd_fork_child,
};
