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
#include "rawsys.h"
#include "region_find.h"

/* This backend's ops table (at the end), listed in backends.c. */
extern const struct rw_backend rw_backend_shadow RW_HIDDEN;

static int shadow_setup(void)
{
	return 0;
}

#if RW_RAWSYS_INLINE
/*
 * Map a writable alias of the page at @off of @fd, store the @len low
 * bytes of @v at @at in it in one store, unmap it: one asm block, so the
 * alias and the offset cannot be spilled to the stack in between (a
 * zeroed base would leave the alias mapped). 0, or mmap's or munmap's
 * -errno.
 */
static inline __attribute__((always_inline)) long
alias_store(long fd, uintptr_t off, uintptr_t at, uint64_t v, size_t len)
{
	long err;

	__asm__ volatile(
		"xor %%edi, %%edi\n\t"
		"mov %[page], %%esi\n\t"
		"mov %[prot], %%edx\n\t"
		"mov %[shared], %%r10d\n\t"
		"mov %[fd], %%r8\n\t"
		"mov %[off], %%r9\n\t"
		"mov %[nr_mmap], %%eax\n\t"
		"syscall\n\t"
		"cmp $-4095, %%rax\n\t"
		"jae 9f\n\t"
		"mov %%rax, %%rdi\n\t"
		"add %[at], %%rax\n\t"
		"cmp $8, %[len]\n\t"
		"jne 2f\n\t"
		"mov %[v], (%%rax)\n\t"
		"jmp 5f\n"
		"2:\tcmp $4, %[len]\n\t"
		"jne 3f\n\t"
		"movl %k[v], (%%rax)\n\t"
		"jmp 5f\n"
		"3:\tcmp $2, %[len]\n\t"
		"jne 4f\n\t"
		"movw %w[v], (%%rax)\n\t"
		"jmp 5f\n"
		"4:\tmovb %b[v], (%%rax)\n"
		"5:\tmov %[page], %%esi\n\t"
		"mov %[nr_munmap], %%eax\n\t"
		"syscall\n"
		"9:"
		: "=&a"(err)
		: [fd] "r"(fd), [off] "r"(off), [at] "r"(at), [v] "r"(v),
		  [len] "r"(len), [page] "i"(RW_RAWSYS_PAGE),
		  [prot] "i"(PROT_READ | PROT_WRITE), [shared] "i"(MAP_SHARED),
		  [nr_mmap] "i"(SYS_mmap), [nr_munmap] "i"(SYS_munmap)
		: "rdi", "rsi", "rdx", "r10", "r8", "r9", "rcx", "r11",
		  "memory", "cc");
	return err;
}
#else
static long alias_store(long fd, uintptr_t off, uintptr_t at, uint64_t v,
			size_t len)
{
	(void)fd, (void)off, (void)at, (void)v, (void)len;
	return -ENOSYS; /* never called: RW_RAWSYS_INLINE is 0 */
}
#endif

#if RW_RAWSYS_INLINE
/*
 * The copy or fill of any other size: map a writable alias of the pages
 * [@off, @off + @maplen) of @fd, copy @len bytes from @src (NULL: store
 * the low byte of @fill @len times) to @at_off in it, unmap it. One asm
 * block whose arguments all come in registers: @fd, @off and @maplen in
 * those mmap(2) takes them in, the others in registers neither the block
 * nor the kernel changes, so none is read from memory between the
 * caller's check and the store (a record of them on the stack was
 * rewritten there: 27l, 27n); the alias's base and length stay in
 * registers from mmap(2) to munmap(2) (27c). 0, or munmap's or mmap's
 * -errno.
 */
static inline __attribute__((always_inline)) long
alias_bulk(long fd, uintptr_t off, size_t maplen, uintptr_t at_off,
	   const void *src, size_t len, uint64_t fill)
{
	register long r8 __asm__("r8") = fd;
	register uintptr_t r9 __asm__("r9") = off;
	register size_t rsi __asm__("rsi") = maplen;
	long err;

	__asm__ volatile("xor %%edi, %%edi\n\t"
			 "mov %[prot], %%edx\n\t"
			 "mov %[shared], %%r10d\n\t"
			 "mov %[nr_mmap], %%eax\n\t"
			 "syscall\n\t"
			 "cmp $-4095, %%rax\n\t"
			 "jae 9f\n\t"
			 "mov %%rax, %%r8\n\t" /* the alias */
			 "mov %%rsi, %%r9\n\t" /* its length */
			 "lea (%%rax,%[at]), %%rdi\n\t"
			 "mov %[len], %%rcx\n\t"
			 "test %[src], %[src]\n\t"
			 "jz 1f\n\t"
			 "mov %[src], %%rsi\n\t"
			 "rep movsb\n\t"
			 "jmp 2f\n"
			 "1:\tmov %[fill], %%rax\n\t"
			 "rep stosb\n"
			 "2:\tmov %%r8, %%rdi\n\t"
			 "mov %%r9, %%rsi\n\t"
			 "mov %[nr_munmap], %%eax\n\t"
			 "syscall\n"
			 "9:"
			 : "=&a"(err), "+r"(r8), "+r"(r9), "+S"(rsi)
			 : [at] "r"(at_off), [src] "r"(src), [len] "r"(len),
			   [fill] "r"(fill), [prot] "i"(PROT_READ | PROT_WRITE),
			   [shared] "i"(MAP_SHARED), [nr_mmap] "i"(SYS_mmap),
			   [nr_munmap] "i"(SYS_munmap)
			 : "rdi", "rdx", "r10", "rcx", "r11", "memory", "cc");
	return err;
}
#else
/* Elsewhere: the same in C; the alias's base and length may cross the
 * copy in memory (SECURITY.md), so at least munmap's failure aborts.
 * Every write comes here, aligned 1, 2, 4 and 8-byte ones too: they are
 * single stores (rw_store(); memcpy() and memset() may split them). */
static long alias_bulk(long fd, uintptr_t off, size_t maplen, uintptr_t at_off,
		       const void *src, size_t len, uint64_t fill)
{
	char *base = mmap(NULL, maplen, PROT_READ | PROT_WRITE, MAP_SHARED,
			  (int)fd, (off_t)off);

	if (base == MAP_FAILED)
		return -errno;
	if (src)
		rw_store(base + at_off, src, len);
	else
		rw_fill(base + at_off, (int)(unsigned char)fill, len);
	return munmap(base, maplen) ? -errno : 0;
}
#endif

static __attribute__((noreturn, noinline)) void
shadow_refused(const char *call, void *dst, size_t len, long err)
{
	if (!err)
		rw_die(call, dst,
		       "%zu bytes: the region changed during the write", len);
	rw_die(call, dst, "cannot map or unmap a writable alias: %s",
	       strerror((int)-err));
}

/*
 * Apply segment @s (a private copy, validated: its region @r is the
 * table's) through an alias: an aligned 1, 2, 4 or 8-byte copy or fill in
 * one store (alias_store(): readers never see it torn), anything else with
 * alias_bulk(). Not a fill through alias_bulk(): its rep stosb stores a
 * short fill byte by byte (FSRM, as rep movsb in vault.c; on a 2-vCPU AMD
 * EPYC a reader saw most of its loads of a 4-byte rep stosb torn), and
 * readers saw aligned 4 and 8-byte rare_write_memset()s torn.
 * Neither lets the alias's base or length cross a call in memory, and both
 * say when munmap(2) failed: then the alias may still be mapped writable,
 * and the process dies rather than go on with it.
 */
static void shadow_store(const char *call, const struct rw_region *r, void *dst,
			 const void *src, size_t len, int fill)
{
	uintptr_t a = (uintptr_t)dst;
	uintptr_t first = a & ~(RW_RAWSYS_PAGE - 1);
	uintptr_t last = (a + len + RW_RAWSYS_PAGE - 1) & ~(RW_RAWSYS_PAGE - 1);
	/* The byte in each of the low @len bytes (rep stosb: the low one). */
	uint64_t v = 0x0101010101010101ULL * (unsigned char)fill;
	long err;

	if (RW_RAWSYS_INLINE && rw_is_unit(a, len)) {
		if (src)
			v = rw_load_unit(src, len);
		err = alias_store(r->fd, first - r->start, a - first, v, len);
	} else {
		err = alias_bulk(r->fd, first - r->start, last - first,
				 a - first, src, len, v);
	}
	if (err)
		shadow_refused(call, dst, len, err);
}

/* Where the write cannot stay in registers (RW_RAWSYS_INLINE 0): the lock
 * first, then the segment from the arguments (internal.h). */
static __attribute__((noinline)) void shadow_write_built(const char *call,
							 void *dst,
							 const void *src,
							 size_t len, int fill)
{
	struct rw_seg s;

	rw_memfd_write_lock(false);
	rw_seg_make(&rw_backend_shadow, call, dst, src, len, fill, &s);
	/* The call's own arguments, not the segment on the stack (27i: its
	 * length rewritten ran a copy over into the next object); the
	 * region is checked against them again, inline, right before. */
	if (!rw_region_holds(s.region, &rw_backend_shadow, (uintptr_t)dst, len))
		shadow_refused(call, dst, len, 0);
	shadow_store(call, s.region, dst, src, len, fill);
	rw_memfd_write_unlock();
}

/*
 * Every write, from the core's check to the store through the alias with
 * region, destination, length and value or source in registers (rawsys.h:
 * the lock, the check, mmap(2) and munmap(2) inline), so no callee saves
 * them where another thread can rewrite them (15a). @unit (a constant: two
 * copies, so that no flag that picks the store waits in memory): an
 * aligned 1, 2, 4 or 8-byte copy or fill in one store, its value loaded
 * before the lock (alias_store()); else one rep movsb or stosb
 * (alias_bulk()), and the unit copy has no source to keep. A write that
 * called a function for the lock and built its segment and the alias's
 * record on the stack went wherever a store there moved it: realloc's
 * copy over another object of the pool (27l), a new pool's head over the
 * section (27n).
 */
static inline __attribute__((always_inline)) void
write_inline(const struct rw_region *r, const char *call, uintptr_t a,
	     const void *src, size_t len, int fill, bool unit, bool seg)
{
	/* A fill's byte in every byte: alias_store() stores the low @len
	 * bytes, rep stosb the low one. */
	uint64_t v = 0x0101010101010101ULL * (unsigned char)fill;
	uintptr_t first, last;
	long err;

	if (unit && src)
		v = rw_load_unit(src, len);
	rw_in_register(r);
	rw_in_register(a);
	rw_in_register(v);
	rw_in_register(len);
	if (!unit)
		rw_in_register(src);
	rw_reglock_read(&rw_memfd_lock);
	if (seg ? !rw_seg_holds(r, &rw_backend_shadow, a, len)
		: !rw_region_holds(r, &rw_backend_shadow, a, len)) {
		rw_reglock_read_unlock(&rw_memfd_lock);
		shadow_refused(call, (void *)a, len, 0);
	}
	first = a & ~(RW_RAWSYS_PAGE - 1);
	last = (a + len + RW_RAWSYS_PAGE - 1) & ~(RW_RAWSYS_PAGE - 1);
	if (unit)
		err = alias_store(r->fd, first - r->start, a - first, v, len);
	else
		err = alias_bulk(r->fd, first - r->start, last - first,
				 a - first, src, len, v);
	rw_reglock_read_unlock(&rw_memfd_lock);
	if (err)
		shadow_refused(call, (void *)a, len, err);
}

/* Its two copies, each a function of its own: in one, the compiler kept
 * the unit copy's destination on the stack through the lock (a register
 * went to the futex call's number). */
static __attribute__((noinline)) void write_unit(const struct rw_region *r,
						 const char *call, uintptr_t a,
						 const void *src, size_t len,
						 int fill)
{
	write_inline(r, call, a, src, len, fill, true, false);
}

static __attribute__((noinline)) void write_bulk(const struct rw_region *r,
						 const char *call, uintptr_t a,
						 const void *src, size_t len,
						 int fill)
{
	write_inline(r, call, a, src, len, fill, false, false);
}

/* The same for a segment of backend->write(): its region came from the
 * caller's memory, so the check is rw_seg_holds(). */
static __attribute__((noinline)) void write_seg_unit(const struct rw_region *r,
						     uintptr_t a,
						     const void *src,
						     size_t len, int fill)
{
	write_inline(r, "rare_write_memcpy", a, src, len, fill, true, true);
}

static __attribute__((noinline)) void write_seg_bulk(const struct rw_region *r,
						     uintptr_t a,
						     const void *src,
						     size_t len, int fill)
{
	write_inline(r, "rare_write_memcpy", a, src, len, fill, false, true);
}

/*
 * A segment (a pool's bookkeeping, a write before init): read out of the
 * caller's memory (its stack, which another thread's store can rewrite)
 * into registers once, and on to the write path of single writes, which
 * checks it under the lock and stores it with every value still in
 * registers. A copy on the stack, checked by rw_seg_region() and read
 * again for the store, let a store in between move the write anywhere in
 * the region's memfd, its bookkeeping included (27r); a loop over an
 * array kept its cursor and end where write_seg_unit() saved them across
 * mmap(2), and a store there ran a forged segment (27y, 27z).
 */
static void shadow_write(const struct rw_seg *s)
{
	const struct rw_region *r =
		__atomic_load_n(&s->region, __ATOMIC_RELAXED);
	uintptr_t a = (uintptr_t)__atomic_load_n(&s->dst, __ATOMIC_RELAXED);
	const void *src = __atomic_load_n(&s->src, __ATOMIC_RELAXED);
	size_t len = __atomic_load_n(&s->len, __ATOMIC_RELAXED);
	int fill = __atomic_load_n(&s->fill, __ATOMIC_RELAXED);

	if (!RW_RAWSYS_INLINE) {
		/* Elsewhere: a checked copy (SECURITY.md). */
		const struct rw_seg c = *s;

		rw_memfd_write_lock(false);
		shadow_store("rare_write_memcpy", rw_seg_region(&c), c.dst,
			     c.src, c.len, c.fill);
		rw_memfd_write_unlock();
	} else if (rw_is_unit(a, len)) {
		write_seg_unit(r, a, src, len, fill);
	} else {
		write_seg_bulk(r, a, src, len, fill);
	}
}

/* Tail calls: the arguments go on in the registers they came in. */
static void shadow_write_one(const struct rw_region *r, const char *call,
			     void *dst, const void *src, size_t len, int fill)
{
	if (!RW_RAWSYS_INLINE)
		shadow_write_built(call, dst, src, len, fill);
	else if (rw_is_unit((uintptr_t)dst, len))
		write_unit(r, call, (uintptr_t)dst, src, len, fill);
	else
		write_bulk(r, call, (uintptr_t)dst, src, len, fill);
}

/*
 * The alias itself is the view. The core holds fork() off until unmap
 * (fork_waits_for_views), so no fork copies the region half-written and
 * no child inherits the alias. Its mmap(2) names r->fd, so it is made as
 * a write's: under the memfd write lock, the region checked again there,
 * inline: a destroy closed the descriptor between the core's lookup and
 * the mmap(2), and the view mapped the next file of that number (27q).
 */
static void *shadow_map(struct rw_region *r, void *addr, size_t len)
{
	uintptr_t a = (uintptr_t)addr;
	uintptr_t first = a & ~(RW_RAWSYS_PAGE - 1);
	uintptr_t last = (a + len + RW_RAWSYS_PAGE - 1) & ~(RW_RAWSYS_PAGE - 1);
	long base;

	rw_reglock_read(&rw_memfd_lock);
	if (!rw_region_holds(r, &rw_backend_shadow, a, len)) {
		rw_reglock_read_unlock(&rw_memfd_lock);
		shadow_refused("rare_write_map", addr, len, 0);
	}
	base = rw_sys6(SYS_mmap, 0, (long)(last - first),
		       PROT_READ | PROT_WRITE, MAP_SHARED, r->fd,
		       (long)(first - r->start));
	rw_reglock_read_unlock(&rw_memfd_lock);
	/* Returned from the register it came in: a record of the alias
	 * returned through memory let a store hand the core another view to
	 * record, and unmap to release (27s). */
	if ((unsigned long)base >= -4095UL)
		shadow_refused("rare_write_map", addr, len, base);
	return (void *)(base + (a - first));
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
