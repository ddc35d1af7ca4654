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
 * @maplen bytes long at @off of @fd, copy @len bytes from @src (NULL: fill
 * with byte @fill) to @at_off in it, unmap it. One asm block: the alias's
 * base and length never leave registers from mmap(2) to munmap(2), where a
 * C version reloaded them from its frame after the copy (a base rewritten
 * there left the writable alias mapped for good). The arguments come in a
 * record the block reads before mmap(2), the last blocking point before
 * they are used. 0, or munmap's or mmap's -errno.
 */
struct alias_job {
	long fd;
	uintptr_t off;	  /* page offset in the memfd */
	size_t maplen;	  /* whole pages */
	uintptr_t at_off; /* the destination in the alias */
	const void *src;
	size_t len;
	long fill;
};
_Static_assert(sizeof(struct alias_job) == 56 && SYS_mmap == 9 &&
		       SYS_munmap == 11 && PROT_READ + PROT_WRITE == 3 &&
		       MAP_SHARED == 1,
	       "the offsets and constants the assembly below uses");

static inline __attribute__((always_inline)) long
alias_bulk(const struct alias_job *job)
{
	long ret = (long)job;

	__asm__ volatile("mov 0(%%rax), %%r8\n\t"
			 "mov 8(%%rax), %%r9\n\t"
			 "mov 16(%%rax), %%r12\n\t"
			 "mov 24(%%rax), %%r13\n\t"
			 "mov 32(%%rax), %%r14\n\t"
			 "mov 40(%%rax), %%r15\n\t"
			 "mov 48(%%rax), %%rbx\n\t"
			 "xor %%edi, %%edi\n\t"
			 "mov %%r12, %%rsi\n\t"
			 "mov $3, %%edx\n\t"
			 "mov $1, %%r10d\n\t"
			 "mov $9, %%eax\n\t"
			 "syscall\n\t"
			 "cmp $-4095, %%rax\n\t"
			 "jae 9f\n\t"
			 "mov %%rax, %%r8\n\t"
			 "lea (%%rax,%%r13), %%rdi\n\t"
			 "mov %%r15, %%rcx\n\t"
			 "test %%r14, %%r14\n\t"
			 "jz 1f\n\t"
			 "mov %%r14, %%rsi\n\t"
			 "rep movsb\n\t"
			 "jmp 2f\n"
			 "1:\tmov %%ebx, %%eax\n\t"
			 "rep stosb\n"
			 "2:\tmov %%r8, %%rdi\n\t"
			 "mov %%r12, %%rsi\n\t"
			 "mov $11, %%eax\n\t"
			 "syscall\n"
			 "9:"
			 : "+a"(ret)
			 :
			 : "rbx", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10",
			   "r11", "r12", "r13", "r14", "r15", "memory", "cc");
	return ret;
}
#else
struct alias_job {
	long fd;
	uintptr_t off;
	size_t maplen;
	uintptr_t at_off;
	const void *src;
	size_t len;
	long fill;
};

/* Elsewhere: the same in C; the alias's base and length may cross the
 * copy in memory (SECURITY.md), so at least munmap's failure aborts.
 * Every write comes here, aligned 1, 2, 4 and 8-byte ones too: they are
 * single stores (rw_store(); memcpy() and memset() may split them). */
static long alias_bulk(const struct alias_job *job)
{
	char *base = mmap(NULL, job->maplen, PROT_READ | PROT_WRITE, MAP_SHARED,
			  (int)job->fd, (off_t)job->off);

	if (base == MAP_FAILED)
		return -errno;
	if (job->src)
		rw_store(base + job->at_off, job->src, job->len);
	else
		rw_fill(base + job->at_off, (int)job->fill, job->len);
	return munmap(base, job->maplen) ? -errno : 0;
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
	uintptr_t first = a & ~(rw_page_size - 1);
	uintptr_t last = (a + len + rw_page_size - 1) & ~(rw_page_size - 1);
	long err;

	if (RW_RAWSYS_INLINE && rw_is_unit(a, len)) {
		uint64_t v = 0;

		if (src)
			memcpy(&v, src, len);
		else /* the byte in each of the low @len bytes */
			v = 0x0101010101010101ULL * (unsigned char)fill;
		err = alias_store(r->fd, first - r->start, a - first, v, len);
	} else {
		const struct alias_job job = {.fd = r->fd,
					      .off = first - r->start,
					      .maplen = last - first,
					      .at_off = a - first,
					      .src = src,
					      .len = len,
					      .fill = (unsigned char)fill};

		err = alias_bulk(&job);
	}
	if (err)
		shadow_refused(call, dst, len, err);
}

static void shadow_store_seg(const char *call, const struct rw_region *r,
			     const struct rw_seg *s)
{
	shadow_store(call, r, s->dst, s->src, s->len, s->fill);
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

		shadow_store_seg("rare_write_memcpy", rw_seg_region(&s), &s);
	}
	rw_memfd_write_unlock();
}

/* The lock first, then the segment from the arguments (internal.h). */
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
 * An aligned 1, 2, 4 or 8-byte copy, the value loaded before the alias is
 * mapped: from the core's check to the store through the alias, region,
 * destination, value and alias stay in registers (rawsys.h: the lock,
 * the check, mmap(2) and munmap(2) inline), so no callee saves them where
 * another thread can rewrite them (15a). Other writes build a segment.
 */
static void shadow_write_one(const struct rw_region *r, const char *call,
			     void *dst, const void *src, size_t len, int fill)
{
	uintptr_t a = (uintptr_t)dst, first;
	uint64_t v;
	long err;

	if (!RW_RAWSYS_INLINE || !src || !rw_is_unit(a, len)) {
		shadow_write_built(call, dst, src, len, fill);
		return;
	}
	v = rw_load_unit(src, len);
	rw_in_register(r);
	rw_in_register(a);
	rw_in_register(v);
	rw_in_register(len);
	rw_reglock_read(&rw_memfd_lock);
	if (!rw_region_holds(r, &rw_backend_shadow, a, len)) {
		rw_reglock_read_unlock(&rw_memfd_lock);
		shadow_refused(call, dst, len, 0);
	}
	first = a & ~(RW_RAWSYS_PAGE - 1);
	err = alias_store(r->fd, first - r->start, a - first, v, len);
	rw_reglock_read_unlock(&rw_memfd_lock);
	if (err)
		shadow_refused(call, dst, len, err);
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
