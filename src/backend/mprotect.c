// SPDX-License-Identifier: MIT
/*
 * mprotect.c - the CR0.WP toggle of user space: flip pages writable, store,
 * flip them back.
 *
 * A single write opens only the pages it touches. A begin/end window opens
 * every region, as clearing CR0.WP did, and is visible to every thread of the
 * process while it lasts. One mutex serialises the flips. The count of open
 * windows lives in a page of its own that is writable only for the one store
 * that changes it, under the mutex: an arbitrary-write bug can raise it
 * neither at rest nor during a window, so it cannot keep a window from
 * closing (Chromium's ProtectedMemory keeps its count read-only at rest
 * only). Signals are blocked on the writing thread while its window is open.
 *
 * Each region is an anonymous mapping of its own (a section's pages are
 * moved out of the program's file-backed data mapping), cut into pieces
 * that cannot merge with their neighbours: every other piece carries
 * VM_NOHUGEPAGE (harmless: a piece is too small for a huge page anyway).
 * A single write flips whole pieces, so mprotect() never splits a mapping
 * and never merges one back, which is most of its cost inside a larger
 * mapping. A piece is one page, or for regions of more than PIECES_MAX
 * pages the smallest run of pages that keeps them to PIECES_MAX mappings
 * (the process has about 65,000).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>

#include "rarewrite.h"
#include "internal.h"

struct control {
	unsigned long open_windows;
};

static pthread_mutex_t flip_lock = PTHREAD_MUTEX_INITIALIZER;
static struct control *control;

/* Signal mask saved by this thread's outermost window. */
static __thread sigset_t saved_mask;
static __thread unsigned thread_windows;

static void flip(const char *call, uintptr_t start, size_t len, bool writable)
{
	if (mprotect((void *)start, len,
		     writable ? PROT_READ | PROT_WRITE : PROT_READ))
		rw_die(call, (void *)start, "mprotect: %s", strerror(errno));
}

static void flip_all(bool writable)
{
	struct rw_region *r;

	rw_for_each_region(r)
		if (r->backend == &rw_backend_mprotect && r->protected_)
			flip(writable ? "rare_write_begin" : "rare_write_end",
			     r->start, r->len, writable);
}

/* Set the window count; flip_lock held. */
static void set_open_windows(unsigned long n)
{
	flip("rare_write_begin", (uintptr_t)control, rw_page_size, true);
	control->open_windows = n;
	flip("rare_write_end", (uintptr_t)control, rw_page_size, false);
}

static void signals_block(void)
{
	sigset_t all;

	if (thread_windows++)
		return;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &saved_mask);
}

static void signals_restore(void)
{
	if (!--thread_windows)
		pthread_sigmask(SIG_SETMASK, &saved_mask, NULL);
}

static int mprotect_setup(void)
{
	void *p = mmap(NULL, rw_page_size, PROT_READ,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return -errno;
	control = p;
	return 0;
}

#define PIECES_MAX 1024

/* Cut @r into unmergeable pieces; r->priv is the piece size. */
static void cut(struct rw_region *r)
{
	size_t pages = r->len / rw_page_size;
	size_t piece = (pages + PIECES_MAX - 1) / PIECES_MAX * rw_page_size;

	r->priv = piece;
	for (size_t off = piece; off < r->len; off += 2 * piece) {
		size_t len = r->len - off < piece ? r->len - off : piece;

		/* Without THP support this fails: the pieces then merge,
		 * and flips only cost more. */
		if (madvise((void *)(r->start + off), len, MADV_NOHUGEPAGE))
			break;
	}
}

/* The section's contents move to an anonymous mapping of their own, put in
 * place in one mremap() (readers never fault). */
static int mprotect_adopt(struct rw_region *r)
{
	void *p = mmap(NULL, r->len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int err;

	if (p == MAP_FAILED)
		return -errno;
	memcpy(p, (void *)r->start, r->len);
	if (mprotect(p, r->len, PROT_READ) ||
	    mremap(p, r->len, r->len, MREMAP_MAYMOVE | MREMAP_FIXED,
		   (void *)r->start) == MAP_FAILED) {
		err = -errno;
		munmap(p, r->len);
		return err;
	}
	cut(r);
	return 0;
}

static int mprotect_create(struct rw_region *r)
{
	void *p = mmap(NULL, r->len, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1,
		       0);

	if (p == MAP_FAILED)
		return -errno;
	r->start = (uintptr_t)p;
	cut(r);
	return 0;
}

static void mprotect_destroy(struct rw_region *r)
{
	munmap((void *)r->start, r->len);
}

/* The whole pieces that hold the segment. */
static void page_span(const struct rw_seg *s, uintptr_t *start, size_t *len)
{
	const struct rw_region *r = s->region;
	size_t piece = r->priv ? r->priv : rw_page_size;
	uintptr_t first = ((uintptr_t)s->dst - r->start) / piece * piece;
	uintptr_t last = ((uintptr_t)s->dst - r->start + s->len + piece - 1) /
			 piece * piece;

	if (last > r->len)
		last = r->len;
	*start = r->start + first;
	*len = last - first;
}

static void mprotect_write(const struct rw_seg *segs, unsigned n)
{
	signals_block();
	pthread_mutex_lock(&flip_lock);
	if (control->open_windows) {
		/* Another thread's window has every region open already. */
		for (unsigned i = 0; i < n; i++)
			rw_seg_store(&segs[i], segs[i].dst);
	} else {
		for (unsigned i = 0; i < n; i++) {
			uintptr_t start;
			size_t len;

			page_span(&segs[i], &start, &len);
			flip("rare_write_memcpy", start, len, true);
		}
		for (unsigned i = 0; i < n; i++)
			rw_seg_store(&segs[i], segs[i].dst);
		for (unsigned i = 0; i < n; i++) {
			uintptr_t start;
			size_t len;

			page_span(&segs[i], &start, &len);
			flip("rare_write_memcpy", start, len, false);
		}
	}
	pthread_mutex_unlock(&flip_lock);
	signals_restore();
}

static void mprotect_begin(void)
{
	signals_block();
	pthread_mutex_lock(&flip_lock);
	if (!control->open_windows)
		flip_all(true);
	set_open_windows(control->open_windows + 1);
	pthread_mutex_unlock(&flip_lock);
}

static void mprotect_end(void)
{
	pthread_mutex_lock(&flip_lock);
	set_open_windows(control->open_windows - 1);
	if (!control->open_windows)
		flip_all(false);
	pthread_mutex_unlock(&flip_lock);
	signals_restore();
}

/* A map is a window: the view is the protected address itself. */
static void *mprotect_map(struct rw_region *r, void *addr, size_t len)
{
	(void)r;
	(void)len;
	mprotect_begin();
	return addr;
}

static void mprotect_unmap(struct rw_region *r, void *view, void *addr,
			   size_t len)
{
	(void)r;
	(void)view;
	(void)addr;
	(void)len;
	mprotect_end();
}

static void mprotect_fork_prepare(void)
{
	pthread_mutex_lock(&flip_lock);
}

static void mprotect_fork_parent(void)
{
	pthread_mutex_unlock(&flip_lock);
}

/* Windows of threads that did not survive the fork are closed. */
static void mprotect_fork_child(void)
{
	if (control->open_windows != thread_windows) {
		set_open_windows(thread_windows);
		if (!thread_windows)
			flip_all(false);
	}
	pthread_mutex_init(&flip_lock, NULL);
}

const struct rw_backend rw_backend_mprotect = {
	.name = "mprotect",
	.caps = RARE_WRITE_CAP_BEGIN_END,
	.setup = mprotect_setup,
	.adopt = mprotect_adopt,
	.create = mprotect_create,
	.destroy = mprotect_destroy,
	.write = mprotect_write,
	.begin = mprotect_begin,
	.end = mprotect_end,
	.map = mprotect_map,
	.unmap = mprotect_unmap,
	.fork_prepare = mprotect_fork_prepare,
	.fork_parent = mprotect_fork_parent,
	.fork_child = mprotect_fork_child,
};
