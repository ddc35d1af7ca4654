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
#include "rawsys.h"
#include "region_find.h"
#include "reglock.h"

/* This backend's ops table (at the end), listed in backends.c. */
extern const struct rw_backend rw_backend_pwrite RW_HIDDEN;

static int pwrite_setup(void)
{
	return 0;
}

static void pwrite_fill(void *dst, int fill, size_t len, int fd, off_t off)
{
	unsigned char buf[4096];
	struct iovec iov[64];
	size_t left = len;

	memset(buf, fill, len < sizeof(buf) ? len : sizeof(buf));
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
			rw_die("rare_write_memset", dst, "pwritev: %s",
			       strerror(errno));
		/* shmem writes do not stop short; if one did, go around. */
		left -= (size_t)done;
		off += done;
	}
}

static void pwrite_copy(void *dst, const char *src, size_t len, int fd,
			off_t off)
{
	size_t left = len;

	while (left) {
		ssize_t done = pwrite(fd, src, left, off);

		if (done <= 0)
			rw_die("rare_write_memcpy", dst, "pwrite: %s",
			       strerror(errno));
		left -= (size_t)done;
		src += done;
		off += done;
	}
}

/*
 * A concurrent reader must see an aligned 2, 4 or 8-byte value old or new,
 * never torn. Two things in the kernel's copy (copy_user_generic) stand in
 * the way:
 *
 * - Without FSRM it copies fewer than 8 bytes one byte at a time
 *   (rep_movs_alternative), so an aligned 2- or 4-byte write goes out as a
 *   pwrite of the aligned 8-byte word that holds it, the other bytes
 *   rewritten with their current contents. That read-merge-write must not
 *   race with other writes to the word: it takes the memfd write lock
 *   exclusively, which every other write holds shared.
 *
 * - With FSRM the copy is one "rep movsb", and that stores a short copy byte
 *   by byte when its source sits at another offset in its 64-byte cache line
 *   than its destination: measured on an AMD EPYC (FSRM, Linux 6.18) with a
 *   reader thread, pwrite of 8 bytes to file offset 8 from a page-aligned
 *   buffer was seen torn (0xff, 0xffff...) in 7 of 10 runs of 1.2 million
 *   writes, and in none of 150 runs (25 at each of six offsets) when source
 *   and destination had the same offset modulo 64 (docs/backends.md,
 *   pwrite). So 8 aligned bytes are one store only from a source at the
 *   destination's offset modulo 64: every write of 8 bytes or less goes
 *   out from a copy of the value in a stack buffer, placed there
 *   (pwrite_small(), and pwrite_write_one() below).
 *   The copy holds only the value, which was in the caller's memory
 *   already; nothing of the destination or the region goes to memory.
 *
 * The destination's offset in its cache line is the file offset's (the
 * page cache page is page aligned, and so is the region's mapping).
 */
#define RW_SMALL_WRITE 8

struct small_buf {
	_Alignas(64) unsigned char b[128];
};

/* Where in @buf a value for file offset @off goes. */
static unsigned char *small_at(struct small_buf *buf, off_t off)
{
	return buf->b + (size_t)off % 64;
}

static bool needs_widening(uintptr_t dst, size_t len)
{
	return (len == 2 || len == 4) && !(dst % len);
}

static void pwrite_widened(uintptr_t dst, const void *src, size_t len, int fill,
			   const struct rw_region *r)
{
	uintptr_t word = dst & ~(uintptr_t)7;
	off_t off = (off_t)(word - r->start);
	struct small_buf buf;
	unsigned char *v = small_at(&buf, off);

	memcpy(v, (const void *)word, 8);
	if (src)
		memcpy(v + (dst - word), src, len);
	else
		memset(v + (dst - word), fill, len);
	pwrite_copy((void *)word, (const char *)v, 8, r->fd, off);
}

/* A copy or fill of 8 bytes or less, from a source at the destination's
 * offset modulo 64 (above). */
static void pwrite_small(void *dst, const void *src, size_t len, int fill,
			 int fd, off_t off)
{
	struct small_buf buf;
	unsigned char *v = small_at(&buf, off);

	if (src)
		memcpy(v, src, len);
	else
		memset(v, fill, len);
	pwrite_copy(dst, (const char *)v, len, fd, off);
}

/*
 * Each segment is read out of the caller's memory (its stack, which
 * another thread's store can rewrite) once, into variables whose address
 * is never taken, checked against the table there (rw_seg_holds()) and
 * only those used: the region's descriptor and the offset, length and
 * source that go to the kernel are the ones checked. A copy of the
 * segment on the stack, checked by rw_seg_region() (a call) and read
 * again, let a store in between move the write (27r). They still cross
 * libc's calls (memcpy(), pwrite()) in registers a callee may save on the
 * stack (SECURITY.md). @widen says how the memfd write lock is held: a
 * segment that needs widening under a shared lock changed after the lock
 * was chosen.
 */
static void pwrite_seg(const struct rw_seg *seg, bool widen)
{
	const struct rw_region *r =
		__atomic_load_n(&seg->region, __ATOMIC_RELAXED);
	uintptr_t dst = (uintptr_t)__atomic_load_n(&seg->dst, __ATOMIC_RELAXED);
	const void *src = __atomic_load_n(&seg->src, __ATOMIC_RELAXED);
	size_t len = __atomic_load_n(&seg->len, __ATOMIC_RELAXED);
	int fill = __atomic_load_n(&seg->fill, __ATOMIC_RELAXED);
	off_t off;

	if (!rw_seg_holds(r, &rw_backend_pwrite, dst, len) ||
	    (needs_widening(dst, len) && !widen))
		rw_die("rare_write", (void *)dst,
		       "a validated write changed before it was "
		       "applied (a store into the caller's stack?)");
	off = (off_t)(dst - r->start);
	if (needs_widening(dst, len))
		pwrite_widened(dst, src, len, fill, r);
	else if (len <= RW_SMALL_WRITE)
		pwrite_small((void *)dst, src, len, fill, r->fd, off);
	else if (src)
		pwrite_copy((void *)dst, src, len, r->fd, off);
	else
		pwrite_fill((void *)dst, fill, len, r->fd, off);
}

static void pwrite_write(const struct rw_seg *seg)
{
	bool widen = needs_widening(
		(uintptr_t)__atomic_load_n(&seg->dst, __ATOMIC_RELAXED),
		__atomic_load_n(&seg->len, __ATOMIC_RELAXED));

	rw_memfd_write_lock(widen);
	pwrite_seg(seg, widen);
	rw_memfd_write_unlock();
}

/* The lock first, then the segment from the arguments (internal.h); a
 * fill or a widened write builds it in memory (open, SECURITY.md).
 * Global (hidden) for the x86-64 path below, which jumps here. */
RW_HIDDEN void pwrite_write_built(const char *call, void *dst, const void *src,
				  size_t len, int fill);
void pwrite_write_built(const char *call, void *dst, const void *src,
			size_t len, int fill)
{
	bool widen = (len == 2 || len == 4) && !((uintptr_t)dst % len);
	struct rw_seg s;

	rw_memfd_write_lock(widen);
	rw_seg_make(&rw_backend_pwrite, call, dst, src, len, fill, &s);
	pwrite_seg(&s, widen);
	rw_memfd_write_unlock();
}

/* The lock is released; @err 0: the check failed, else -errno. */
RW_HIDDEN __attribute__((noreturn)) void
pwrite_refused(const char *call, void *dst, size_t len, long err);
void pwrite_refused(const char *call, void *dst, size_t len, long err)
{
	if (!err)
		rw_die(call, dst,
		       "%zu bytes: the region changed during the write", len);
	rw_die(call, dst, "pwrite: %s", strerror((int)-err));
}

#if RW_RAWSYS_INLINE
/*
 * A copy, in assembly: from the core's check to the kernel, region,
 * destination, source and length stay in registers (rawsys.h says why C
 * cannot promise that: GCC spilled the destination around the lock's
 * futex call and checked the reloaded copy). The lock word is taken inline
 * (reglock.h's protocol), the region checked again (rw_region_holds()),
 * pwrite(2) made, the lock released. The pushes keep the caller's
 * registers, not ours. A value of 8 bytes or less is copied into a buffer
 * on the stack at the destination's offset modulo 64 (FSRM, above) after
 * the lock and the check, right before pwrite(2): from there to the
 * kernel's copy a store can still change it (a value in flight, never
 * its destination, SECURITY.md).
 * A fill or a widened 2 or 4-byte write goes to pwrite_write_built().
 */
_Static_assert(__builtin_offsetof(struct rw_region, kind) == 0 &&
		       __builtin_offsetof(struct rw_region, protected_) == 4 &&
		       __builtin_offsetof(struct rw_region, start) == 8 &&
		       __builtin_offsetof(struct rw_region, len) == 16 &&
		       __builtin_offsetof(struct rw_region, user_start) == 24 &&
		       __builtin_offsetof(struct rw_region, backend) == 32 &&
		       __builtin_offsetof(struct rw_region, fd) == 40 &&
		       sizeof(enum rw_region_kind) == 4,
	       "the offsets the assembly below uses");
_Static_assert(RW_RL_WRITER == 0x40000000u && RW_RL_WAIT == 0x80000000u &&
		       RW_RL_READERS == 0x3fffffffu && SYS_pwrite64 == 18 &&
		       SYS_futex == 202 && FUTEX_WAIT_PRIVATE == 0x80 &&
		       FUTEX_WAKE_PRIVATE == 0x81,
	       "the constants the assembly below uses");
RW_HIDDEN void pwrite_write_one(const struct rw_region *r, const char *call,
				void *dst, const void *src, size_t len,
				int fill);
/* rdi r, rsi call, rdx dst, rcx src, r8 len, r9 fill; then rbx r, rbp call,
 * r12 destination, r13 source, r14 bytes left; 192 bytes of stack hold a
 * 64-byte aligned struct small_buf. */
_Static_assert(RW_SMALL_WRITE == 8 && sizeof(struct small_buf) == 128 &&
		       63 + sizeof(struct small_buf) <= 192,
	       "the small write buffer the assembly below uses");
__asm__(".text\n"
	".globl pwrite_write_one\n"
	".hidden pwrite_write_one\n"
	".type pwrite_write_one, @function\n"
	"pwrite_write_one:\n"
	"	endbr64\n"
	"	test %rcx, %rcx\n"
	"	jz 80f\n"
	"	cmp $2, %r8\n"
	"	je 1f\n"
	"	cmp $4, %r8\n"
	"	jne 2f\n"
	"1:	lea -1(%r8), %rax\n"
	"	test %rdx, %rax\n"
	"	jz 80f\n"
	"2:	push %rbx\n"
	"	push %rbp\n"
	"	push %r12\n"
	"	push %r13\n"
	"	push %r14\n"
	"	mov %rdi, %rbx\n"
	"	mov %rsi, %rbp\n"
	"	mov %rdx, %r12\n"
	"	mov %rcx, %r13\n"
	"	mov %r8, %r14\n"
	"	sub $192, %rsp\n"
	/* the lock, shared */
	"10:	mov rw_memfd_lock(%rip), %eax\n"
	"	test $0x40000000, %eax\n"
	"	jnz 11f\n"
	"	lea 1(%rax), %edx\n"
	"	lock cmpxchg %edx, rw_memfd_lock(%rip)\n"
	"	jne 10b\n"
	"	jmp 20f\n"
	"11:	mov %eax, %edx\n"
	"	or $0x80000000, %edx\n"
	"	cmp %eax, %edx\n"
	"	je 12f\n"
	"	lock cmpxchg %edx, rw_memfd_lock(%rip)\n"
	"	jne 10b\n"
	"12:	lea rw_memfd_lock(%rip), %rdi\n"
	"	mov $0x80, %esi\n"
	"	xor %r10d, %r10d\n"
	"	mov $202, %eax\n"
	"	syscall\n"
	"	jmp 10b\n"
	/* the region, again */
	"20:	cmpl $0, (%rbx)\n"
	"	je 90f\n"
	"	lea rw_backend_pwrite(%rip), %rax\n"
	"	cmp %rax, 32(%rbx)\n"
	"	jne 90f\n"
	"	cmpb $0, 4(%rbx)\n"
	"	je 90f\n"
	"	cmp 24(%rbx), %r12\n"
	"	jb 90f\n"
	"	mov %r12, %rax\n"
	"	sub 8(%rbx), %rax\n"
	"	jb 90f\n"
	"	mov 16(%rbx), %rdx\n"
	"	cmp %rdx, %rax\n"
	"	jae 90f\n"
	"	sub %rax, %rdx\n"
	"	cmp %r14, %rdx\n"
	"	jb 90f\n"
	/* 8 bytes or less: the value to the buffer, at dst % 64, only now
	 * (a list link's value, from the table, waited there through the
	 * lock: the fresh review of 2e71f48) */
	"	cmp $8, %r14\n"
	"	ja 30f\n"
	"	lea 63(%rsp), %rdi\n"
	"	and $-64, %rdi\n"
	"	mov %r12, %rax\n"
	"	and $63, %eax\n"
	"	add %rax, %rdi\n"
	"	xor %ecx, %ecx\n"
	"3:	cmp %r14, %rcx\n"
	"	jae 4f\n"
	"	movzbl (%r13,%rcx), %eax\n"
	"	mov %al, (%rdi,%rcx)\n"
	"	inc %rcx\n"
	"	jmp 3b\n"
	"4:	mov %rdi, %r13\n"
	/* pwrite(r->fd, src, left, dst - r->start) until done */
	"30:	test %r14, %r14\n"
	"	jz 40f\n"
	"	movslq 40(%rbx), %rdi\n"
	"	mov %r13, %rsi\n"
	"	mov %r14, %rdx\n"
	"	mov %r12, %r10\n"
	"	sub 8(%rbx), %r10\n"
	"	mov $18, %eax\n"
	"	syscall\n"
	"	test %rax, %rax\n"
	"	jle 91f\n"
	"	add %rax, %r13\n"
	"	add %rax, %r12\n"
	"	sub %rax, %r14\n"
	"	jmp 30b\n"
	"40:	call 70f\n"
	"	add $192, %rsp\n"
	"	pop %r14\n"
	"	pop %r13\n"
	"	pop %r12\n"
	"	pop %rbp\n"
	"	pop %rbx\n"
	"	ret\n"
	/* the unlock, shared; clobbers rax, rcx, rdx, rsi, rdi, r11 */
	"70:	mov rw_memfd_lock(%rip), %eax\n"
	"72:	test $0x3fffffff, %eax\n"
	"	jz 71f\n" /* no reader counted: released by a store */
	"	lea -1(%rax), %edx\n"
	"	lock cmpxchg %edx, rw_memfd_lock(%rip)\n"
	"	jne 72b\n"
	"	test $0x3fffffff, %edx\n"
	"	jnz 71f\n"
	"	test %edx, %edx\n"
	"	jns 71f\n"
	"	lock btrl $31, rw_memfd_lock(%rip)\n"
	"	jnc 71f\n"
	"	lea rw_memfd_lock(%rip), %rdi\n"
	"	mov $0x81, %esi\n"
	"	mov $0x7fffffff, %edx\n"
	"	mov $202, %eax\n"
	"	syscall\n"
	"71:	ret\n"
	/* pwrite_write_built(call, dst, src, len, fill) */
	"80:	mov %rsi, %rdi\n"
	"	mov %rdx, %rsi\n"
	"	mov %rcx, %rdx\n"
	"	mov %r8, %rcx\n"
	"	mov %r9d, %r8d\n"
	"	jmp pwrite_write_built\n"
	/* pwrite_refused(call, dst, len, err): 0 or -errno (0 bytes: -EIO) */
	"90:	xor %ecx, %ecx\n"
	"	jmp 92f\n"
	"91:	mov %rax, %rcx\n"
	"	test %rcx, %rcx\n"
	"	jnz 92f\n"
	"	mov $-5, %rcx\n"
	"92:	push %rcx\n"
	"	push %rcx\n"
	"	call 70b\n"
	"	pop %rcx\n"
	"	pop %rcx\n"
	"	mov %rbp, %rdi\n"
	"	mov %r12, %rsi\n"
	"	mov %r14, %rdx\n"
	"	call pwrite_refused\n"
	"	ud2\n"
	".size pwrite_write_one, .-pwrite_write_one\n");
#else
static void pwrite_write_one(const struct rw_region *r, const char *call,
			     void *dst, const void *src, size_t len, int fill)
{
	(void)r; /* found again under the lock */
	pwrite_write_built(call, dst, src, len, fill);
}
#endif

/* map hands out a private staging copy; unmap commits it in one pwrite. */
static void *pwrite_map(struct rw_region *r, void *addr, size_t len)
{
	(void)r;
	return rw_staging_copy(addr, len);
}

/* The commit is a single write, on its path that keeps region, target,
 * view and length in registers to the system call: a segment built on the
 * stack here was read again after the lock, and a store there sent the
 * copy into another pool (15e). */
static void pwrite_unmap(struct rw_region *r, void *view, void *addr,
			 size_t len)
{
	pwrite_write_one(r, "rare_write_unmap", addr, view, len, 0);
	free(rw_unmapping_view());
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
