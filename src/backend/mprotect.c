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
 * records, per thread (thread_self.h: its FS base register on x86-64,
 * else gettid(); no store changes either), how many windows it holds. The
 * library's wrapper, first in every handler (signal.c), closes the interrupted
 * thread's windows on entry and reopens them on exit, so a handler never writes
 * through the window it interrupted (attacks 3, 11c), and a store that faults
 * inside a window is reported like any other. The short stretches that hold the
 * flip lock (a single write, begin, end) are critical sections: a signal that
 * arrives there runs right after (signal.c), so a handler never waits for a
 * lock its own thread holds, and a single write costs its two mprotect() calls.
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
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "rarewrite.h"
#include "internal.h"
#include "critical.h"
#include "rawsys.h"
#include "reglock.h"
#include "thread_self.h"

/* This backend's ops table (at the end), listed in backends.c. */
extern const struct rw_backend rw_backend_mprotect RW_HIDDEN;

#define MAX_THREADS 256
#define MAX_SIGNAL_NEST 6

/* The windows one thread holds, and those its handlers suspended, each
 * with the frame of the handler that suspended it. */
struct thread_windows {
	uint64_t tid; /* this_thread(); 0: free slot */
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
	return (int)rw_backend_word(RW_BACKEND_MPROTECT, CONTROL_FD) - 1;
}

static void control_store(void *dst, const void *src, size_t len)
{
	rw_vault_store(control_fd(), &control, dst, src, len);
}

/* Serialises the flips and the control page: held exclusive, a lock word
 * of reglock.h, so a single write takes it inline (mprotect_write_one). */
static uint32_t flip_lock;

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
		if (rw_backend_is(r->backend, RW_BACKEND_MPROTECT) &&
		    r->protected_)
			flip(writable ? "rare_write_begin" : "rare_write_end",
			     r->start, r->len, writable);
}

/* Who the calling thread is (thread_self.h: its FS base on x86-64). */
static uint64_t this_thread(void)
{
	return rw_thread_self("rare_write_begin");
}

/* The record of @tid, or NULL; flip_lock held (or a stable table). */
static const struct thread_windows *find_record(uint64_t tid)
{
	if (!control.nr_threads)
		return NULL;
	for (unsigned i = 0; i < MAX_THREADS; i++)
		if (control.thr[i].tid == tid)
			return &control.thr[i];
	return NULL;
}

/* A record in one of the first slots goes into the vault with the counts
 * in one pwrite() (the slots before it rewritten with their own contents,
 * flip_lock held); a window's begin and end then cost one each. */
#define ONE_WRITE_SLOTS 4
struct control_head {
	unsigned long counts[2];
	struct thread_windows thr[ONE_WRITE_SLOTS];
};
_Static_assert(offsetof(struct control, thr) ==
			       offsetof(struct control_head, thr) &&
		       sizeof(struct control_head) <= 512,
	       "the head of the control page, written in one pwrite()");

/*
 * The record and the count reach the vault through stack buffers (the
 * head below, vault.c's aligned copy) that another thread can rewrite
 * while pwrite() waits to read them: {1 window, 1 thread} made {2, 1}
 * left the pages writable after the last end (an outside review, 27d, 27e).
 * So after each store the control page, which no store reaches, must say
 * what the call meant: @tid's windows and nesting and the count as the
 * call took them before building its buffers, and the count the sum of
 * every record's windows, the thread count the records in use. A rewrite
 * aborts; what is left is a thread that rewrites the buffer and the
 * values kept apart alike (SECURITY.md).
 */
static void check_record(const char *call, uint64_t tid, uint32_t windows,
			 uint32_t nest, unsigned long open)
{
	const struct thread_windows *now = find_record(tid);
	unsigned long sum = 0, used = 0;

	for (unsigned i = 0; i < MAX_THREADS && used < control.nr_threads; i++)
		if (control.thr[i].tid) {
			used++;
			sum += control.thr[i].windows;
		}
	if ((now ? now->windows : 0) != windows ||
	    (now ? now->nest : 0) != nest || control.open_windows != open ||
	    sum != open || used != control.nr_threads)
		rw_die(call, &control,
		       "the record of open windows changed on its way to its "
		       "vault");
}

/* Replace the record of @rec->tid by @rec (a record without windows or
 * suspended ones is freed), and the count by @open; flip_lock held. */
static void set_record(const char *call, const struct thread_windows *rec,
		       unsigned long open)
{
	const uint64_t tid = rec->tid;
	const uint32_t windows = rec->windows, nest = rec->nest;
	const struct thread_windows *slot = find_record(tid);
	bool empty = !windows && !nest;
	unsigned long counts[2] = {open, control.nr_threads};
	const struct thread_windows freed = {.tid = 0};

	if (!slot && !empty) {
		for (unsigned i = 0; i < MAX_THREADS && !slot; i++)
			if (!control.thr[i].tid)
				slot = &control.thr[i];
		if (!slot)
			rw_die(call, NULL,
			       "more than %d threads hold windows at once",
			       MAX_THREADS);
		counts[1]++;
	}
	if (slot && empty)
		counts[1]--;
	if (slot && slot - control.thr < ONE_WRITE_SLOTS) {
		size_t i = (size_t)(slot - control.thr);
		size_t span = (size_t)((const char *)(slot + 1) -
				       (const char *)&control);
		struct control_head head;

		memcpy(&head, &control, span);
		memcpy(head.counts, counts, sizeof(counts));
		head.thr[i] = empty ? freed : *rec;
		control_store(&control, &head, span);
	} else {
		if (slot)
			control_store((void *)slot, empty ? &freed : rec,
				      sizeof(*slot));
		control_store(&control.open_windows, counts, sizeof(counts));
	}
	check_record(call, tid, windows, nest, open);
}

/* This thread's record as a value (zeroes if it has none). */
static struct thread_windows my_record(uint64_t tid)
{
	const struct thread_windows *r = find_record(tid);
	struct thread_windows rec = {.tid = tid};

	if (r)
		rec = *r;
	return rec;
}

static inline __attribute__((always_inline)) void lock(void)
{
	rw_cs_enter();
	rw_reglock_write(&flip_lock);
}

static inline __attribute__((always_inline)) void unlock(void)
{
	rw_reglock_write_unlock(&flip_lock);
	rw_cs_leave();
}

/* The control pages go into their vault; registry lock held. */
static int mprotect_setup(void)
{
	int fd, err = rw_vault_create(&control, sizeof(control), &fd);

	if (!err)
		rw_backend_word_set(RW_BACKEND_MPROTECT, CONTROL_FD,
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

/*
 * The pieces are computed once, before they open, and the same ones are
 * closed: the segments are the caller's, on its stack, and a segment moved
 * between the flips to another piece of a live region closed that piece
 * and left the opened one writable at rest (an outside review, 27g: a
 * pool's bookkeeping page after rare_free(), a list head's page). A
 * segment that no longer lies in the pieces opened for it aborts the write
 * before its store.
 */
#define MAX_WRITE_SEGS 4 /* the list helpers write four links at once */
static void mprotect_write(const struct rw_seg *segs, unsigned n)
{
	struct {
		uintptr_t start;
		size_t len;
	} span[MAX_WRITE_SEGS];

	if (n > MAX_WRITE_SEGS)
		rw_die("rare_write_memcpy", NULL, "%u segments in one write",
		       n);
	lock();
	if (control.open_windows) {
		/* Another thread's window has every region open already. */
		for (unsigned i = 0; i < n; i++)
			rw_seg_store(&segs[i], segs[i].dst);
		unlock();
		return;
	}
	for (unsigned i = 0; i < n; i++) {
		page_span(&segs[i], &span[i].start, &span[i].len);
		flip("rare_write_memcpy", span[i].start, span[i].len, true);
	}
	for (unsigned i = 0; i < n; i++) {
		uintptr_t start;
		size_t len;

		page_span(&segs[i], &start, &len);
		if (start < span[i].start ||
		    start + len > span[i].start + span[i].len)
			rw_die("rare_write_memcpy", segs[i].dst,
			       "the write's segment moved while its pages "
			       "opened");
		rw_seg_store(&segs[i], segs[i].dst);
	}
	for (unsigned i = 0; i < n; i++)
		flip("rare_write_memcpy", span[i].start, span[i].len, false);
	unlock();
}

/*
 * The store of a built write: the call's own arguments, not the segment,
 * which waits on the stack through mprotect(2) (27i: its length made 16
 * for a 3-byte copy ran over into the next protected object); a segment
 * that no longer says what the arguments say aborts.
 */
static void built_store(const char *call, const struct rw_seg *s, void *dst,
			const void *src, size_t len, int fill)
{
	if (s->dst != dst || s->src != src || s->len != len ||
	    (!src && s->fill != fill))
		rw_die(call, dst,
		       "the write's segment changed while its pages opened");
	if (src)
		rw_store(dst, src, len);
	else
		rw_fill(dst, fill, len);
}

/* The lock first, then the segment from the arguments (internal.h). */
static __attribute__((noinline)) void mprotect_write_built(const char *call,
							   void *dst,
							   const void *src,
							   size_t len, int fill)
{
	struct rw_seg s;
	uintptr_t start;
	size_t span;

	lock();
	rw_seg_make(&rw_backend_mprotect, call, dst, src, len, fill, &s);
	if (control.open_windows) {
		built_store(call, &s, dst, src, len, fill);
	} else {
		page_span(&s, &start, &span);
		flip(call, start, span, true);
		built_store(call, &s, dst, src, len, fill);
		flip(call, start, span, false);
	}
	unlock();
}

#if RW_RAWSYS_INLINE
/*
 * Open [first, first + span) (unless @flip is false: a window has every
 * region open), store the @len low bytes of @v at @a in one store, close
 * it again: one asm block, so the span and the destination cannot be
 * spilled to the stack between the two flips. 0 or -errno.
 */
static inline __attribute__((always_inline)) long
flip_store(uintptr_t first, size_t span, uintptr_t a, uint64_t v, size_t len,
	   long flip)
{
	long err;

	__asm__ volatile("xor %%eax, %%eax\n\t"
			 "test %[flip], %[flip]\n\t"
			 "jz 1f\n\t"
			 "mov %[first], %%rdi\n\t"
			 "mov %[span], %%rsi\n\t"
			 "mov %[rw], %%edx\n\t"
			 "mov %[nr], %%eax\n\t"
			 "syscall\n\t"
			 "test %%rax, %%rax\n\t"
			 "jnz 9f\n"
			 "1:\tcmp $8, %[len]\n\t"
			 "jne 2f\n\t"
			 "mov %[v], (%[a])\n\t"
			 "jmp 5f\n"
			 "2:\tcmp $4, %[len]\n\t"
			 "jne 3f\n\t"
			 "movl %k[v], (%[a])\n\t"
			 "jmp 5f\n"
			 "3:\tcmp $2, %[len]\n\t"
			 "jne 4f\n\t"
			 "movw %w[v], (%[a])\n\t"
			 "jmp 5f\n"
			 "4:\tmovb %b[v], (%[a])\n"
			 "5:\ttest %[flip], %[flip]\n\t"
			 "jz 9f\n\t"
			 "mov %[first], %%rdi\n\t"
			 "mov %[span], %%rsi\n\t"
			 "mov %[ro], %%edx\n\t"
			 "mov %[nr], %%eax\n\t"
			 "syscall\n"
			 "9:"
			 : "=&a"(err)
			 : [flip] "r"(flip), [first] "r"(first),
			   [span] "r"(span), [a] "r"(a), [v] "r"(v),
			   [len] "r"(len), [nr] "i"(SYS_mprotect),
			   [rw] "i"(PROT_READ | PROT_WRITE), [ro] "i"(PROT_READ)
			 : "rdi", "rsi", "rdx", "rcx", "r11", "memory", "cc");
	return err;
}
/*
 * The same for a copy or fill of any other size (rep movsb, rep stosb):
 * a free's zeroing, a list node, a 16-byte record. The destination, the
 * source and the span stay in registers from the check to the second
 * flip; in a segment on the stack they were rewritten through mprotect(2)
 * (27b: a free zeroed another live object). No unit is promised whole to
 * a concurrent reader here, as with memcpy(). 0 or -errno.
 */
static inline __attribute__((always_inline)) long
flip_copy(uintptr_t first, size_t span, void *dst, const void *src, size_t len,
	  uint64_t fill, long flip)
{
	long err;

	__asm__ volatile(
		"xor %%eax, %%eax\n\t"
		"test %[flip], %[flip]\n\t"
		"jz 1f\n\t"
		"mov %[first], %%rdi\n\t"
		"mov %[span], %%rsi\n\t"
		"mov %[rw], %%edx\n\t"
		"mov %[nr], %%eax\n\t"
		"syscall\n\t"
		"test %%rax, %%rax\n\t"
		"jnz 9f\n"
		"1:\tmov %[dst], %%rdi\n\t"
		"mov %[len], %%rcx\n\t"
		"test %[src], %[src]\n\t"
		"jz 2f\n\t"
		"mov %[src], %%rsi\n\t"
		"rep movsb\n\t"
		"jmp 3f\n"
		"2:\tmov %[fill], %%rax\n\t"
		"rep stosb\n"
		"3:\txor %%eax, %%eax\n\t"
		"test %[flip], %[flip]\n\t"
		"jz 9f\n\t"
		"mov %[first], %%rdi\n\t"
		"mov %[span], %%rsi\n\t"
		"mov %[ro], %%edx\n\t"
		"mov %[nr], %%eax\n\t"
		"syscall\n"
		"9:"
		: "=&a"(err)
		: [flip] "r"(flip), [first] "r"(first), [span] "r"(span),
		  [dst] "r"(dst), [src] "r"(src), [len] "r"(len),
		  [fill] "r"(fill), [nr] "i"(SYS_mprotect),
		  [rw] "i"(PROT_READ | PROT_WRITE), [ro] "i"(PROT_READ)
		: "rdi", "rsi", "rdx", "rcx", "r11", "memory", "cc");
	return err;
}
#else
static long flip_store(uintptr_t first, size_t span, uintptr_t a, uint64_t v,
		       size_t len, long flip)
{
	(void)first, (void)span, (void)a, (void)v, (void)len, (void)flip;
	return -ENOSYS; /* never called: RW_RAWSYS_INLINE is 0 */
}

static long flip_copy(uintptr_t first, size_t span, void *dst, const void *src,
		      size_t len, uint64_t fill, long flip)
{
	(void)first, (void)span, (void)dst, (void)src, (void)len, (void)fill,
		(void)flip;
	return -ENOSYS; /* never called: RW_RAWSYS_INLINE is 0 */
}
#endif

static __attribute__((noreturn, noinline)) void
mprotect_refused(const char *call, void *dst, size_t len, long err)
{
	if (!err)
		rw_die(call, dst,
		       "%zu bytes: the region changed during the write", len);
	rw_die(call, dst, "mprotect: %s", strerror((int)-err));
}

/* A source that overlaps the destination: memmove()'s job, a rep movsb
 * forward copy would read what it already wrote. */
static bool overlaps(const void *dst, const void *src, size_t len)
{
	uintptr_t d = (uintptr_t)dst, s = (uintptr_t)src;

	return src && s < d + len && d < s + len;
}

/*
 * A write from the core's check to the store with region, destination,
 * source and the flipped span in registers (rawsys.h: the lock, the check
 * and both mprotect(2) calls inline), so no callee saves them where
 * another thread can rewrite them between the flips (15a, 27b). An
 * aligned 1, 2, 4 or 8-byte copy or fill is one store, its value loaded
 * before the pages open; any other size is one rep movsb or stosb. Only
 * an overlapping copy builds a segment.
 */
static void mprotect_write_one(const struct rw_region *r, const char *call,
			       void *dst, const void *src, size_t len, int fill)
{
	uintptr_t a = (uintptr_t)dst, first, last, piece;
	/* A fill's byte in every byte: rep stosb stores the low one. */
	uint64_t v = 0x0101010101010101ULL * (unsigned char)fill;
	long err, flip;

	if (!RW_RAWSYS_INLINE || overlaps(dst, src, len)) {
		mprotect_write_built(call, dst, src, len, fill);
		return;
	}
	if (rw_is_unit(a, len) && src)
		v = rw_load_unit(src, len);
	rw_in_register(r);
	rw_in_register(a);
	rw_in_register(src);
	rw_in_register(v);
	rw_in_register(len);
	lock();
	if (!rw_region_holds(r, &rw_backend_mprotect, a, len)) {
		unlock();
		mprotect_refused(call, (void *)a, len, 0);
	}
	piece = r->priv ? r->priv : RW_RAWSYS_PAGE;
	first = (a - r->start) / piece * piece;
	last = (a - r->start + len + piece - 1) / piece * piece;
	if (last > r->len)
		last = r->len;
	flip = !__atomic_load_n(&control.open_windows, __ATOMIC_RELAXED);
	/* Which store, from the registers again: a flag the compiler keeps
	 * on the stack through the lock's wait is the attacker's to flip. */
	rw_in_register(a);
	rw_in_register(len);
	if (rw_is_unit(a, len))
		err = flip_store(r->start + first, last - first, a, v, len,
				 flip);
	else
		err = flip_copy(r->start + first, last - first, (void *)a, src,
				len, v, flip);
	unlock();
	if (err)
		mprotect_refused(call, (void *)a, len, err);
}

/* Add @delta windows to the calling thread, flipping every region when
 * the first opens or the last closes. */
static void windows_add(const char *call, int delta)
{
	uint64_t tid = this_thread();
	struct thread_windows rec;
	unsigned long open;
	uint32_t want;

	lock();
	rec = my_record(tid);
	/* Kept apart from @rec, which waits on the stack through the flips. */
	want = rec.windows + (uint32_t)delta;
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
		set_record(call, &rec, control.open_windows);
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
	set_record(call, &rec, open);
	if (my_record(tid).windows != want)
		rw_die(call, &control,
		       "the record of open windows changed on its way to its "
		       "vault");
	/* The vault's count, not @open: it was on the stack meanwhile. */
	if (!control.open_windows)
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
	uint64_t tid;
	struct thread_windows rec;
	unsigned long open;

	(void)uc;
	if (!__atomic_load_n(&control.nr_threads, __ATOMIC_RELAXED))
		return;
	tid = this_thread();
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
	set_record("signal", &rec, open);
	if (!control.open_windows)
		flip_all(false);
	unlock();
}

static void mprotect_signal_exit(void *uc)
{
	uint64_t tid;
	struct thread_windows rec;
	unsigned long open;
	uint32_t back = 0;
	unsigned i;

	if (!__atomic_load_n(&control.nr_threads, __ATOMIC_RELAXED))
		return;
	tid = this_thread();
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
	set_record("signal", &rec, open);
	unlock();
}

/* A bad source pointer faulted inside a write, which holds the lock and
 * has its pages open: close them (every region, unless a window needs
 * them) and let the lock go; the write never resumes. */
static void mprotect_cs_fault(void)
{
	if (!control.open_windows)
		flip_all(false);
	rw_reglock_write_unlock(&flip_lock);
}

static void mprotect_fork_prepare(void)
{
	rw_reglock_write(&flip_lock);
}

static void mprotect_fork_parent(void)
{
	rw_reglock_write_unlock(&flip_lock);
}

/* Windows of threads that did not survive the fork are closed; the
 * forking thread keeps its own under its new id. */
static void mprotect_fork_child(void)
{
	/* The forking thread: from its register (x86-64: the child's thread
	 * pointer is the forking thread's), or the core's table; a copy in
	 * .bss, set here in prepare, could be pointed at a thread that holds
	 * a window while the parent forks (attack 14f). */
#if defined(__x86_64__)
	struct thread_windows rec = my_record(this_thread());
#else
	struct thread_windows rec = my_record((uint64_t)rw_fork_tid());
#endif
	int fd = rw_vault_fork_copy(control_fd(), &control, sizeof(control));

	/* The parent's vault is shared: a copy of our own, writable only
	 * here, before any other thread exists. */
	if (fd < 0)
		rw_die("fork", &control, "child cannot copy its windows: %s",
		       strerror(-fd));
	rw_backend_word_set(RW_BACKEND_MPROTECT, CONTROL_FD, (uint64_t)fd + 1);
	memset(&control, 0, sizeof(control));
	if (rw_vault_fork_done(&control, sizeof(control)))
		rw_die("fork", &control, "child cannot protect its windows");
	if (rec.windows || rec.nest) {
		unsigned long open = rec.windows;

		rec.tid = this_thread();
		set_record("fork", &rec, open);
	}
	if (!control.open_windows)
		flip_all(false);
	__atomic_store_n(&flip_lock, 0, __ATOMIC_RELAXED);
}

const struct rw_backend rw_backend_mprotect = {
	.name = "mprotect",
	.flips_pages = true,
	.map_in_place = true,
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
