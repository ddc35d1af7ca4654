// SPDX-License-Identifier: MIT
/*
 * mprotect.c - the CR0.WP toggle of user space: flip pages writable, store,
 * flip them back.
 *
 * A single write opens only the pages it touches. A begin/end window opens
 * every region, as clearing CR0.WP did, and is visible to every thread of the
 * process while it lasts. One lock serialises the flips. The counts of open
 * windows live in pages of their own, a vault (vault.c: a memfd mapped
 * read-only, written only with pwrite() under the lock): no store of any
 * thread can raise them, at rest or during a window, so it cannot keep a window
 * from closing (Chromium's ProtectedMemory keeps its count read-only at rest
 * only); and a begin or an end writes its thread's new count from a table of
 * constants, not through a buffer that a store could rewrite on its way
 * (scribbler 15f, below). The page is a static object reached RIP-relative: no
 * pointer to it lives in writable memory, where a store could point end() at a
 * fake page whose count never reaches zero (attack 12a).
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
#include "table.h"
#include "thread_self.h"

/* This backend's ops table (at the end), listed in backends.c. */
extern const struct rw_backend rw_backend_mprotect RW_HIDDEN;

#define MAX_THREADS 256
#define MAX_SIGNAL_NEST 6

/* What one handler suspended: the windows its thread held when it came,
 * and its frame. A level is in use while its frame is not 0 (a ucontext
 * never is); a thread's levels in use are [0, n). */
struct level {
	uint32_t windows;
	uint32_t unused;
	uint64_t frame;
};

/* Who holds a slot, and what its handlers suspended. */
struct thread_rec {
	uint64_t tid; /* this_thread(); 0: never used */
	struct level suspended[MAX_SIGNAL_NEST];
};

/*
 * The windows of every thread: a vault (vault.c), a memfd mapped read-only
 * over these pages and written only with pwrite(), so no store of any
 * thread reaches it, not even while a window is open (attack 7d). Its
 * descriptor is a word of the core's table.
 *
 * A slot, once a thread has it, stays the thread's after its last end
 * (until a new thread needs it back: a slot without windows or suspended
 * levels is free to take), so a begin or an end changes one word: its
 * count in @windows. There is no separate total: "a window is open" is
 * the OR of @windows over [0, @slots), read under flip_lock; and a
 * nesting depth is the number of levels in use. One word per change is
 * what lets every change be a pwrite() from a constant (small[], below).
 */
static struct control {
	uint32_t windows[MAX_THREADS]; /* per slot: its thread's windows */
	uint32_t slots; /* slots [0, slots) were used: every scan's end */
	uint32_t unused;
	struct thread_rec thr[MAX_THREADS];
} __attribute__((aligned(4096))) control;

/*
 * The sources of those pwrite()s: every value a count takes (a thread's
 * windows, the slots in use), and the zeroes of free levels, in .rodata.
 * A count used to reach its vault through buffers on the stack (a record
 * copied from the vault, changed, built into a head, copied again in
 * vault.c) that another thread could rewrite while pwrite() waited to
 * read them; the check after it compared with values "kept apart" that
 * could be spilled across the same calls (15f, SECURITY.md). Now the new
 * count is the vault's old one plus or minus one, computed in a register,
 * and pwrite() copies &small[count]: no store reaches its source, and
 * the offset, length and count stay in registers from the vault's read to
 * the syscall and to the read-back compare (no function call in between,
 * rawsys.h's inline syscall). MAX_COUNT bounds a thread's windows: a
 * window and a map each are one, and the core keeps at most RW_MAX_MAPS
 * maps, so 2047 leaves room for RW_MAX_MAPS and a window per handler.
 */
#define MAX_COUNT 2047
#define C1(n) (n)
#define C2(n) C1(n), C1((n) + 1)
#define C4(n) C2(n), C2((n) + 2)
#define C8(n) C4(n), C4((n) + 4)
#define C16(n) C8(n), C8((n) + 8)
#define C32(n) C16(n), C16((n) + 16)
#define C64(n) C32(n), C32((n) + 32)
#define C128(n) C64(n), C64((n) + 64)
#define C256(n) C128(n), C128((n) + 128)
#define C512(n) C256(n), C256((n) + 256)
#define C1024(n) C512(n), C512((n) + 512)
#define C2048(n) C1024(n), C1024((n) + 1024)
static const uint32_t small[MAX_COUNT + 1] = {C2048(0u)};
static const struct level no_levels[MAX_SIGNAL_NEST] = {{0, 0, 0}};
_Static_assert(MAX_THREADS <= MAX_COUNT && RW_MAX_MAPS + 64 <= MAX_COUNT,
	       "small[] holds every count");

enum { CONTROL_FD }; /* rw_backend_word(): the vault's descriptor + 1 */

static inline __attribute__((always_inline)) int control_fd(void)
{
	return (int)rw_backend_word(RW_BACKEND_MPROTECT, CONTROL_FD) - 1;
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

/* The slots to scan; flip_lock held (or a hint without it). */
static inline __attribute__((always_inline)) unsigned slots_used(void)
{
	uint32_t n = __atomic_load_n(&control.slots, __ATOMIC_RELAXED);

	return n < MAX_THREADS ? n : MAX_THREADS;
}

/* The slot of @tid, or MAX_THREADS; flip_lock held (or a stable table). */
static inline __attribute__((always_inline)) unsigned find_slot(uint64_t tid)
{
	unsigned n = slots_used();

	for (unsigned i = 0; i < n; i++)
		if (control.thr[i].tid == tid)
			return i;
	return MAX_THREADS;
}

/* Whether any thread ever had a slot, without the lock (a handler's quick
 * exit): slot 0 is the first taken, and its id never goes back to 0 (but
 * in a fork child, single-threaded). Not @slots: a 4-byte pwrite() is
 * copied a byte at a time, and 255 going to 256 reads 0 half-way. */
static inline __attribute__((always_inline)) bool some_slot(void)
{
	return __atomic_load_n(&control.thr[0].tid, __ATOMIC_RELAXED) != 0;
}

/* Whether any thread holds a window; flip_lock held. Inline, no call: the
 * single write runs it between its check and its flips. */
static inline __attribute__((always_inline)) bool windows_open(void)
{
	unsigned n = slots_used();
	uint32_t any = 0;

	for (unsigned i = 0; i < n; i++)
		any |= control.windows[i];
	return any != 0;
}

/* The levels in use of @slot. */
static inline __attribute__((always_inline)) unsigned levels(unsigned slot)
{
	unsigned n = 0;

	while (n < MAX_SIGNAL_NEST && control.thr[slot].suspended[n].frame)
		n++;
	return n;
}

/* pwrite(2) of [@src, @src + @len) over @dst in the vault, inline
 * (rawsys.h): file, source, length and offset go to the kernel from
 * registers. The bytes written or -errno. */
static inline __attribute__((always_inline)) long
vault_put(int fd, const void *dst, const void *src, size_t len)
{
	return rw_sys6(SYS_pwrite64, fd, (long)src, (long)len,
		       (long)((const char *)dst - (const char *)&control), 0,
		       0);
}

static __attribute__((noreturn, noinline, cold)) void changed(const char *call,
							      long n)
{
	if (n < 0)
		rw_die(call, &control,
		       "cannot write the record of open windows: %s",
		       strerror((int)-n));
	rw_die(call, &control,
	       "the record of open windows changed on its way to its vault");
}

#define OUT_OF_SMALL 0x1000L /* count_put(): not a pwrite() result */

/*
 * Set the count at @field (a slot's windows, a level's, the slots in use)
 * to *@a + *@b + @d, where @a and @b point into the vault or at small[0]
 * (a zero of .rodata): pwrite() from small[sum] in .rodata, then the vault
 * must hold the sum. Reading the vault, adding, bounding the sum to
 * small[], the pwrite() and the read-back are one asm block, so the new
 * count is in a register from the read to the compare whatever the
 * compiler does around it: in C, GCC 12 spilled a count to the stack
 * between its computation and the syscall in the signal exit (a store
 * there then went to the vault and passed the read-back, which reloaded
 * the same slot). The pointers come from the caller, computed from the
 * vault with no function call since. One pwrite().
 */
static inline __attribute__((always_inline)) void
count_put(const char *call, int fd, const uint32_t *field, const uint32_t *a,
	  const uint32_t *b, long d)
{
	long err;

#if RW_RAWSYS_INLINE
	register long off __asm__("r10") =
		(long)((const char *)field - (const char *)&control);
	uint64_t v;
	const void *src;

	__asm__ volatile(
		"mov (%[a]), %k[v]\n\t"
		"add (%[b]), %k[v]\n\t"
		"add %k[d], %k[v]\n\t"
		"mov %[range], %%eax\n\t"
		"cmp %[max], %k[v]\n\t"
		"ja 9f\n\t"
		"lea (%[small], %q[v], 4), %%rsi\n\t"
		"mov %[nr], %%eax\n\t"
		"syscall\n\t"
		"cmp %[len], %%rax\n\t"
		"jne 9f\n\t"
		"mov %[len], %%eax\n\t"
		"cmp (%[field]), %k[v]\n\t"
		"jne 9f\n\t"
		"xor %%eax, %%eax\n"
		"9:"
		: "=&a"(err), [v] "=&r"(v), "=&S"(src)
		: [a] "r"(a), [b] "r"(b), [d] "r"(d), [small] "r"(small),
		  [field] "r"(field), "D"((long)fd), "d"((long)sizeof(*field)),
		  "r"(off), [nr] "i"(SYS_pwrite64), [max] "i"(MAX_COUNT),
		  [len] "i"(sizeof(*field)), [range] "i"(OUT_OF_SMALL)
		: "rcx", "r11", "memory", "cc");
	(void)src;
#else
	/* Elsewhere in C: what the compiler keeps in registers (rawsys.h). */
	uint32_t v = *a + *b + (uint32_t)d;

	err = OUT_OF_SMALL;
	if (v <= MAX_COUNT) {
		err = vault_put(fd, field, &small[v], sizeof(*field));
		if (err == (long)sizeof(*field))
			err = __atomic_load_n(field, __ATOMIC_RELAXED) == v
				      ? 0
				      : (long)sizeof(*field);
	}
#endif
	if (err == OUT_OF_SMALL)
		rw_die(call, NULL, "more than %d windows on one thread",
		       MAX_COUNT);
	if (err)
		changed(call, err);
}

/*
 * Give the calling thread @tid a slot (it has none); flip_lock held. Its
 * id cannot come from .rodata: it goes through @buf on the stack, which
 * another thread can rewrite while pwrite() waits, to another thread's
 * id say. So the vault must then hold @tid, which stayed in a register
 * (an argument, no call since), else abort before any count moves: a
 * rewrite either aborts or writes the id meant. The slot taken holds no
 * window and no level (never used, or idle: its thread ended its last
 * window, or died), so nothing else of it changes; a new slot past
 * @slots raises @slots from small[] after its id is in place. The caller
 * then finds the slot again, from the vault. Once per thread: two
 * pwrite()s, or three with a new slot.
 */
static __attribute__((noinline)) void new_slot(const char *call, int fd,
					       uint64_t tid)
{
	unsigned n = slots_used(), i;
	uint64_t buf = tid;
	long w;

	for (i = 0; i < n; i++)
		if (!control.windows[i] && !control.thr[i].suspended[0].frame)
			break;
	if (i == MAX_THREADS)
		rw_die(call, NULL, "more than %d threads hold windows at once",
		       MAX_THREADS);
	w = vault_put(fd, &control.thr[i].tid, &buf, sizeof(buf));
	if (w != (long)sizeof(buf) ||
	    __atomic_load_n(&control.thr[i].tid, __ATOMIC_RELAXED) != tid)
		changed(call, w);
	if (i == n)
		count_put(call, fd, &control.slots, &control.slots, small, 1);
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

/* The start goes into the core's table from the register mmap(2)
 * returned it in (27t: a start in memory was rewritten to the program's
 * data, which every write to the pool then made writable); cut()'s advice
 * takes the table's, and its piece size only bounds flips inside the
 * region. */
static int mprotect_create(struct rw_region *r)
{
	long p = rw_sys6(SYS_mmap, 0, (long)rw_pool_made(RW_POOL_LEN),
			 PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p < 0 && p > -4096)
		return (int)p;
	rw_pool_made_put(RW_POOL_START, (uint64_t)p);
	r->start = (uintptr_t)rw_pool_made(RW_POOL_START);
	r->len = (size_t)rw_pool_made(RW_POOL_LEN);
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
 * A segment (a pool's bookkeeping, a write before init). Its pieces are
 * computed once, before they open, and the same ones are closed: the
 * segment is the caller's, on its stack, and a segment moved between the
 * flips to another piece of a live region closed that piece and left the
 * opened one writable at rest (an outside review, 27g: a pool's
 * bookkeeping page after rare_free(), a list head's page). A segment that
 * no longer lies in the pieces opened for it aborts the write before its
 * store. One segment per call: no cursor crosses the flips (27z).
 */
static void mprotect_write(const struct rw_seg *seg)
{
	uintptr_t opened, start;
	size_t opened_len, len;

	lock();
	if (windows_open()) {
		/* Another thread's window has every region open already. */
		rw_seg_store(seg, seg->dst);
		unlock();
		return;
	}
	page_span(seg, &opened, &opened_len);
	flip("rare_write_memcpy", opened, opened_len, true);
	page_span(seg, &start, &len);
	if (start < opened || start + len > opened + opened_len)
		rw_die("rare_write_memcpy", seg->dst,
		       "the write's segment moved while its pages opened");
	rw_seg_store(seg, seg->dst);
	flip("rare_write_memcpy", opened, opened_len, false);
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
	if (windows_open()) {
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
	flip = !windows_open();
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

/*
 * An end with no window of its own: a handler suspended windows and was
 * left by a jump (siglongjmp), its pages are closed, and this end forgets
 * one of the top level's windows (the level, with its last). False if
 * there is none. flip_lock held; @slot in a register since the caller
 * found it, and one pwrite() from .rodata.
 */
static __attribute__((noinline)) bool forget(const char *call, int fd,
					     unsigned slot)
{
	unsigned n = levels(slot);
	const struct level *top;
	long w;

	if (!n || !control.thr[slot].suspended[n - 1].windows)
		return false;
	top = &control.thr[slot].suspended[n - 1];
	if (top->windows > 1) {
		count_put(call, fd, &top->windows, &top->windows, small, -1);
		return true;
	}
	w = vault_put(fd, top, &no_levels[0], sizeof(*top));
	if (w != (long)sizeof(*top) || top->windows || top->frame)
		changed(call, w);
	return true;
}

/*
 * Add @delta (a constant: begin and end are each their own copy) windows
 * to the calling thread, flipping every region when the first opens or
 * the last closes. The slot and the descriptor are found inline, with no
 * call since this_thread() (the last call, made before either exists),
 * and count_put() reads, adds, writes and reads back the count in one asm
 * block. Whether the pages open is @was_open, a flag computed before the
 * pwrite(): were it spilled and rewritten, a begin opens pages that are
 * open already (flips only) or leaves them closed (its stores fault and
 * are reported), neither a write outside a window. Whether they close is
 * read from the vault after the pwrite(). A begin or an end
 * costs one pwrite(), plus one mprotect() per region when it opens the
 * first window or closes the last; a thread's first window two or three
 * more (new_slot()).
 */
static inline __attribute__((always_inline)) void windows_add(const char *call,
							      int delta)
{
	unsigned slot;
	uint32_t old;
	bool was_open;
	int fd;

	lock();
	for (;;) {
		uint64_t tid = this_thread();

		fd = control_fd();
		slot = find_slot(tid);
		if (slot < MAX_THREADS)
			break;
		if (delta < 0) {
			unlock();
			rw_die(call, NULL, "no open window on this thread");
		}
		new_slot(call, fd, tid);
	}
	old = control.windows[slot];
	if (delta < 0 && !old) {
		if (!forget(call, fd, slot)) {
			unlock();
			rw_die(call, NULL, "no open window on this thread");
		}
		unlock();
		return;
	}
	was_open = windows_open();
	count_put(call, fd, &control.windows[slot], &control.windows[slot],
		  small, delta);
	/* Both decided before any call: the close from the vault as it is
	 * now. */
	if (delta > 0 && !was_open)
		flip_all(true);
	else if (delta < 0 && !windows_open())
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
 * A signal entry's two pwrite()s: push the level {*@count, @uc} at @lvl,
 * then set *@count to 0. The frame cannot come from .rodata: it goes
 * through @buf on the stack, and the vault must then hold @uc and the
 * count it still holds: a rewrite aborts before the count moves. A
 * function of its own, whose four arguments are about all it holds, so
 * they stay in registers: inline in the handler's path, GCC 12 spilled
 * the level's address across the first pwrite() and read it back for the
 * check, where a store could point the check at another level.
 */
static __attribute__((noinline)) void
level_push(int fd, const uint32_t *count, const struct level *lvl, uintptr_t uc)
{
	struct level buf = {.windows = *count, .frame = uc};
	long r = vault_put(fd, lvl, &buf, sizeof(buf));

	if (r != (long)sizeof(buf) || lvl->windows != *count ||
	    lvl->frame != uc)
		changed("signal", r);
	count_put("signal", fd, count, small, small, 0);
}

/*
 * A signal exit's: *@count plus the windows of the level at @lvl (both
 * read in count_put()'s asm), then the @n levels from @lvl up popped with
 * zeroes from .rodata, read back. Its own function for the same reason:
 * inline, GCC 12 spilled the zeroes' offset and length across the first
 * pwrite().
 */
static __attribute__((noinline)) void
level_pop(int fd, const uint32_t *count, const struct level *lvl, size_t n)
{
	long r;

	count_put("signal", fd, count, count, &lvl->windows, 0);
	r = vault_put(fd, lvl, no_levels, n * sizeof(*lvl));
	if (r != (long)(n * sizeof(*lvl)))
		changed("signal", r);
	for (size_t k = 0; k < n; k++)
		if (lvl[k].frame || lvl[k].windows)
			changed("signal", r);
}

/*
 * A handler holds none of the windows it interrupted: they are closed on
 * entry (for every thread, when they were the last open) and reopened on
 * exit. Who holds what is read from the control page under the thread's
 * id, never from memory a store can reach. The signal is not inside a
 * critical section of this thread (signal.c runs it after), so the lock
 * is free or held by another thread. A thread without windows or levels
 * is left alone, as it has no slot. Entry pushes a level {the windows,
 * the handler's frame} and zeroes the count; exit gives the level's
 * windows back and pops it with those above it (handlers left by a
 * jump: their windows stay closed). Two pwrite()s each, one per change
 * (one each before, for a thread in the first four slots). Whether the
 * pages close or open is read from the vault after them: opening them
 * when another thread's window has them open already only costs the
 * flips.
 */
/* The slot of the handler's thread, flip_lock taken; MAX_THREADS, the
 * lock not held, if it has none (or no frame came). */
static inline __attribute__((always_inline)) unsigned
signal_slot(const void *uc)
{
	unsigned slot;

	if (!some_slot() || !uc)
		return MAX_THREADS;
	lock();
	slot = find_slot(this_thread());
	if (slot == MAX_THREADS)
		unlock();
	return slot;
}

static void mprotect_signal_enter(void *uc)
{
	unsigned slot, n;
	int fd;

	slot = signal_slot(uc);
	if (slot == MAX_THREADS)
		return;
	fd = control_fd();
	n = levels(slot);
	if (!control.windows[slot] && !n) {
		unlock();
		return;
	}
	if (n == MAX_SIGNAL_NEST)
		rw_die("signal", NULL, "handlers nested more than %d deep",
		       MAX_SIGNAL_NEST);
	level_push(fd, &control.windows[slot], &control.thr[slot].suspended[n],
		   (uintptr_t)uc);
	if (!windows_open())
		flip_all(false);
	unlock();
}

static void mprotect_signal_exit(void *uc)
{
	unsigned slot, n, i;
	int fd;

	slot = signal_slot(uc);
	if (slot == MAX_THREADS)
		return;
	fd = control_fd();
	n = levels(slot);
	for (i = n; i > 0; i--)
		if (control.thr[slot].suspended[i - 1].frame == (uintptr_t)uc)
			break;
	if (!i) {
		unlock();
		return;
	}
	level_pop(fd, &control.windows[slot],
		  &control.thr[slot].suspended[i - 1], n - (i - 1));
	if (windows_open())
		flip_all(true);
	unlock();
}

/* A bad source pointer faulted inside a write, which holds the lock and
 * has its pages open: close them (every region, unless a window needs
 * them) and let the lock go; the write never resumes. */
static void mprotect_cs_fault(void)
{
	if (!windows_open())
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
	unsigned slot = find_slot(this_thread());
#else
	unsigned slot = find_slot((uint64_t)rw_fork_tid());
#endif
	struct thread_rec rec = {.tid = 0};
	uint32_t windows = 0;
	int fd;

	if (slot < MAX_THREADS) {
		rec = control.thr[slot];
		windows = control.windows[slot];
	}
	fd = rw_vault_fork_copy(control_fd(), &control, sizeof(control));
	/* The parent's vault is shared: a copy of our own, writable only
	 * here, before any other thread exists (no store but ours). */
	if (fd < 0)
		rw_die("fork", &control, "child cannot copy its windows: %s",
		       strerror(-fd));
	rw_backend_word_set(RW_BACKEND_MPROTECT, CONTROL_FD, (uint64_t)fd + 1);
	memset(&control, 0, sizeof(control));
	if (windows || rec.suspended[0].frame) {
		rec.tid = this_thread();
		control.thr[0] = rec;
		control.windows[0] = windows;
		control.slots = 1;
	}
	if (rw_vault_fork_done(&control, sizeof(control)))
		rw_die("fork", &control, "child cannot protect its windows");
	if (!windows_open())
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
