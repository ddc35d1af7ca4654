// SPDX-License-Identifier: MIT
/*
 * mprotect.c - the CR0.WP toggle of user space: flip pages writable, store,
 * flip them back.
 *
 * A single write opens only the pages it touches. A begin/end window opens
 * every region, as clearing CR0.WP did, and is visible to every thread of the
 * process while it lasts. One mutex serialises the flips. The count of open
 * windows lives in pages of their own, a vault (vault.c: a memfd mapped
 * read-only, written only with pwrite() under the mutex): no store of any
 * thread can raise it, at rest or during a window, so it cannot keep a window
 * from closing (Chromium's ProtectedMemory keeps its count read-only at rest
 * only). The page is a static object reached RIP-relative: no pointer to it
 * lives in writable memory, where a store could point end() at a fake page
 * whose count never reaches zero (attack 12a).
 *
 * Signals are not blocked. A window belongs to a thread: the same page
 * records, per thread id (gettid(), which no store changes), how many
 * windows the thread holds. The library's wrapper, first in every handler
 * (signal.c), closes the interrupted thread's windows on entry and reopens
 * them on exit, so a handler never writes through the window it
 * interrupted (attacks 3, 11c), and a store that faults inside a window is
 * reported like any other. The short stretches that hold the flip lock (a
 * single write, begin, end) are critical sections: a signal that arrives
 * there runs right after (signal.c), so a handler never waits for a lock
 * its own thread holds, and a single write costs its two mprotect() calls.
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
#include <sys/syscall.h>
#include <unistd.h>

#include "rarewrite.h"
#include "internal.h"
#include "critical.h"

/* This backend's ops table (at the end), listed in backends.c. */
extern const struct rw_backend rw_backend_mprotect RW_HIDDEN;

#define MAX_THREADS 256
#define MAX_SIGNAL_NEST 6

/* The windows one thread holds, and those its handlers suspended, each
 * with the frame of the handler that suspended it. */
struct thread_windows {
	int32_t tid; /* 0: free slot */
	uint32_t windows;
	uint32_t nest; /* handlers running on it that suspended some */
	struct {
		uint32_t windows;
		uintptr_t frame;
	} suspended[MAX_SIGNAL_NEST];
};

/* The windows of every thread: a vault (vault.c), a memfd mapped read-only
 * over these pages and written only with pwrite() by set_record(), so no
 * store of any thread reaches it, not even while a window is open (attack
 * 7d, the scribbler 15f). Its descriptor is a word of the core's table. */
static struct control {
	unsigned long open_windows; /* sum of the windows of every thread */
	unsigned long nr_threads;   /* slots in use */
	struct thread_windows thr[MAX_THREADS];
} __attribute__((aligned(4096))) control;

enum { CONTROL_FD }; /* rw_backend_word(): the vault's descriptor + 1 */

static int control_fd(void)
{
	return (int)rw_backend_word(&rw_backend_mprotect, CONTROL_FD) - 1;
}

static void control_store(void *dst, const void *src, size_t len)
{
	rw_vault_store(control_fd(), &control, dst, src, len);
}

static pthread_mutex_t flip_lock = PTHREAD_MUTEX_INITIALIZER;

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

static int32_t this_tid(void)
{
	return (int32_t)syscall(SYS_gettid);
}

/* The record of @tid, or NULL; flip_lock held (or a stable table). */
static const struct thread_windows *find_record(int32_t tid)
{
	if (!control.nr_threads)
		return NULL;
	for (unsigned i = 0; i < MAX_THREADS; i++)
		if (control.thr[i].tid == tid)
			return &control.thr[i];
	return NULL;
}

/* Replace the record of @rec->tid by @rec (a record without windows or
 * suspended ones is freed), and the count by @open; flip_lock held. */
static void set_record(const struct thread_windows *rec, unsigned long open)
{
	const struct thread_windows *slot = find_record(rec->tid);
	bool empty = !rec->windows && !rec->nest;
	unsigned long counts[2] = {open, control.nr_threads};

	if (!slot && !empty) {
		for (unsigned i = 0; i < MAX_THREADS && !slot; i++)
			if (!control.thr[i].tid)
				slot = &control.thr[i];
		if (!slot)
			rw_die("rare_write_begin", NULL,
			       "more than %d threads hold windows at once",
			       MAX_THREADS);
		counts[1]++;
	}
	if (slot && empty) {
		control_store((void *)slot, &(struct thread_windows){.tid = 0},
			      sizeof(*slot));
		counts[1]--;
	} else if (slot) {
		control_store((void *)slot, rec, sizeof(*slot));
	}
	control_store(&control.open_windows, counts, sizeof(counts));
}

/* This thread's record as a value (zeroes if it has none). */
static struct thread_windows my_record(int32_t tid)
{
	const struct thread_windows *r = find_record(tid);
	struct thread_windows rec = {.tid = tid};

	if (r)
		rec = *r;
	return rec;
}

static void lock(void)
{
	rw_cs_enter();
	pthread_mutex_lock(&flip_lock);
}

static void unlock(void)
{
	pthread_mutex_unlock(&flip_lock);
	rw_cs_leave();
}

/* The control pages go into their vault; registry lock held. */
static int mprotect_setup(void)
{
	int fd, err = rw_vault_create(&control, sizeof(control), &fd);

	if (!err)
		rw_backend_word_set(&rw_backend_mprotect, CONTROL_FD,
				    (uint64_t)fd + 1);
	return err;
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
	const struct rw_region *r = rw_seg_region(s);
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
	lock();
	if (control.open_windows) {
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
	unlock();
}

/* The lock first, then the segment from the arguments (internal.h). */
static void mprotect_write_one(const char *call, void *dst, const void *src,
			       size_t len, int fill)
{
	struct rw_seg s;
	uintptr_t start;
	size_t span;

	lock();
	rw_seg_make(&rw_backend_mprotect, call, dst, src, len, fill, &s);
	if (control.open_windows) {
		rw_seg_store(&s, dst);
	} else {
		page_span(&s, &start, &span);
		flip(call, start, span, true);
		rw_seg_store(&s, dst);
		flip(call, start, span, false);
	}
	unlock();
}

/* Add @delta windows to the calling thread, flipping every region when
 * the first opens or the last closes. */
static void windows_add(const char *call, int delta)
{
	int32_t tid = this_tid();
	struct thread_windows rec;
	unsigned long open;

	lock();
	rec = my_record(tid);
	if (delta < 0 && !rec.windows && rec.nest &&
	    rec.suspended[rec.nest - 1].windows) {
		/* A handler suspended the window and was left by a jump
		 * (siglongjmp): its pages are closed; this end forgets it. */
		rec.nest--;
		rec.suspended[rec.nest].windows--;
		if (rec.suspended[rec.nest].windows)
			rec.nest++;
		else
			rec.suspended[rec.nest].frame = 0;
		set_record(&rec, control.open_windows);
		unlock();
		return;
	}
	if (delta < 0 && !rec.windows) {
		unlock();
		rw_die(call, NULL, "no open window on this thread");
	}
	rec.windows += (uint32_t)delta;
	open = control.open_windows + (unsigned long)(long)delta;
	if (!control.open_windows && open)
		flip_all(true);
	set_record(&rec, open);
	if (!open)
		flip_all(false);
	unlock();
}

static void mprotect_begin(void)
{
	windows_add("rare_write_begin", 1);
}

static void mprotect_end(void)
{
	windows_add("rare_write_end", -1);
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

/*
 * A handler holds none of the windows it interrupted: they are closed on
 * entry (for every thread, when they were the last open) and reopened on
 * exit. Who holds what is read from the control page under the thread's
 * id, never from memory a store can reach. The signal is not inside a
 * critical section of this thread (signal.c runs it after), so the lock
 * is free or held by another thread.
 */
static void mprotect_signal_enter(void *uc)
{
	int32_t tid;
	struct thread_windows rec;
	unsigned long open;

	(void)uc;
	if (!__atomic_load_n(&control.nr_threads, __ATOMIC_RELAXED))
		return;
	tid = this_tid();
	lock();
	rec = my_record(tid);
	if (!find_record(tid)) {
		unlock();
		return;
	}
	if (rec.nest == MAX_SIGNAL_NEST)
		rw_die("signal", NULL, "handlers nested more than %d deep",
		       MAX_SIGNAL_NEST);
	rec.suspended[rec.nest].windows = rec.windows;
	rec.suspended[rec.nest++].frame = (uintptr_t)uc;
	open = control.open_windows - rec.windows;
	rec.windows = 0;
	set_record(&rec, open);
	if (!open)
		flip_all(false);
	unlock();
}

static void mprotect_signal_exit(void *uc)
{
	int32_t tid;
	struct thread_windows rec;
	unsigned long open;
	uint32_t back = 0;
	unsigned i;

	if (!__atomic_load_n(&control.nr_threads, __ATOMIC_RELAXED))
		return;
	tid = this_tid();
	lock();
	rec = my_record(tid);
	for (i = rec.nest; i > 0; i--)
		if (rec.suspended[i - 1].frame == (uintptr_t)uc)
			break;
	if (!find_record(tid) || !i) {
		unlock();
		return;
	}
	/* Levels above ours belong to handlers left by a jump: their
	 * windows stay closed. */
	back = rec.suspended[i - 1].windows;
	memset(&rec.suspended[i - 1], 0,
	       (rec.nest - (i - 1)) * sizeof(rec.suspended[0]));
	rec.nest = i - 1;
	rec.windows += back;
	open = control.open_windows + back;
	if (!control.open_windows && open)
		flip_all(true);
	set_record(&rec, open);
	unlock();
}

/* A bad source pointer faulted inside a write, which holds the lock and
 * has its pages open: close them (every region, unless a window needs
 * them) and let the lock go; the write never resumes. */
static void mprotect_cs_fault(void)
{
	if (!control.open_windows)
		flip_all(false);
	pthread_mutex_unlock(&flip_lock);
}

static void mprotect_fork_prepare(void)
{
	pthread_mutex_lock(&flip_lock);
}

static void mprotect_fork_parent(void)
{
	pthread_mutex_unlock(&flip_lock);
}

/* Windows of threads that did not survive the fork are closed; the
 * forking thread keeps its own under its new id. */
static void mprotect_fork_child(void)
{
	/* The forking thread, from the core's table: a copy in .bss, set
	 * here in prepare, could be pointed at a thread that holds a window
	 * while the parent forks (attack 14f). */
	struct thread_windows rec = my_record(rw_fork_tid());
	int fd = rw_vault_fork_copy(control_fd(), &control, sizeof(control));

	/* The parent's vault is shared: a copy of our own, writable only
	 * here, before any other thread exists. */
	if (fd < 0)
		rw_die("fork", &control, "child cannot copy its windows: %s",
		       strerror(-fd));
	rw_backend_word_set(&rw_backend_mprotect, CONTROL_FD, (uint64_t)fd + 1);
	memset(&control, 0, sizeof(control));
	if (rw_vault_fork_done(&control, sizeof(control)))
		rw_die("fork", &control, "child cannot protect its windows");
	if (rec.windows || rec.nest) {
		unsigned long open = rec.windows;

		rec.tid = this_tid();
		set_record(&rec, open);
	}
	if (!control.open_windows)
		flip_all(false);
	pthread_mutex_init(&flip_lock, NULL);
}

const struct rw_backend rw_backend_mprotect = {
	.name = "mprotect",
	.flips_pages = true,
	.caps = RARE_WRITE_CAP_BEGIN_END,
	.setup = mprotect_setup,
	.adopt = mprotect_adopt,
	.create = mprotect_create,
	.destroy = mprotect_destroy,
	.write = mprotect_write,
	.write_one = mprotect_write_one,
	.begin = mprotect_begin,
	.end = mprotect_end,
	.map = mprotect_map,
	.unmap = mprotect_unmap,
	.fork_prepare = mprotect_fork_prepare,
	.fork_parent = mprotect_fork_parent,
	.fork_child = mprotect_fork_child,
	.signal_enter = mprotect_signal_enter,
	.signal_exit = mprotect_signal_exit,
	.cs_fault = mprotect_cs_fault,
};
