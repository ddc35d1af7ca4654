/* SPDX-License-Identifier: MIT */
/*
 * rawsys.h - a system call made inline, for the paths that carry a
 * validated destination from its check to the kernel (scribbler 15a).
 *
 * A call to any function, libc's syscall() or pwrite() included, lets the
 * callee save the caller's registers on the stack, where another thread
 * can rewrite them before they come back: a checked destination returns
 * as another region's. The syscall instruction keeps every register but
 * rax, rcx and r11, so a path made of inline code and these calls keeps
 * its values in registers from the check to the kernel. Returns -errno.
 * Elsewhere than x86-64 it is libc's syscall(), and that path stays open
 * (SECURITY.md).
 */
#ifndef RAREWRITE_RAWSYS_H
#define RAREWRITE_RAWSYS_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define RW_RAWSYS_INLINE 1
/* The page size, known without calling getpagesize(). */
#define RW_RAWSYS_PAGE 4096UL
static inline __attribute__((always_inline)) long
rw_sys6(long nr, long a, long b, long c, long d, long e, long f)
{
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;
	long ret;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8),
			   "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
}
#else
#define RW_RAWSYS_INLINE 0
#define RW_RAWSYS_PAGE ((unsigned long)getpagesize())
static inline long rw_sys6(long nr, long a, long b, long c, long d, long e,
			   long f)
{
	long ret = syscall(nr, a, b, c, d, e, f);

	return ret == -1 ? -errno : ret;
}
#endif
/* Tell the compiler @v is a new value in a register: a copy it kept on the
 * stack for a slower path is not used for it afterwards. */
#define rw_in_register(v) __asm__("" : "+r"(v))
#define rw_sys(nr, a, b, c)                                                    \
	rw_sys6((nr), (long)(a), (long)(b), (long)(c), 0, 0, 0)

/* Whether [@a, @a + @len) is one aligned 1, 2, 4 or 8-byte unit: what a
 * single store writes whole for concurrent readers. */
static inline __attribute__((always_inline)) int rw_is_unit(uintptr_t a,
							    size_t len)
{
	/* A mask, not a%len: the division costs more than the store. */
	return (len == 1 || len == 2 || len == 4 || len == 8) &&
	       !(a & (len - 1));
}

/* The aligned 1, 2, 4 or 8-byte unit at @src, in one load: the value a
 * single-store write path takes into a register before it opens. */
static inline __attribute__((always_inline)) uint64_t
rw_load_unit(const void *src, size_t len)
{
	switch (len) {
	case 1:
		return *(const volatile uint8_t *)src;
	case 2:
		return *(const volatile uint16_t *)src;
	case 4:
		return *(const volatile uint32_t *)src;
	default:
		return *(const volatile uint64_t *)src;
	}
}

#endif /* RAREWRITE_RAWSYS_H */
