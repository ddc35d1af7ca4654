/* SPDX-License-Identifier: MIT */
/*
 * process_syscall.h - the system calls of the process backend's helper
 * (process_helper.c, process_seccomp.c), made without libc.
 */
#ifndef RAREWRITE_PROCESS_SYSCALL_H
#define RAREWRITE_PROCESS_SYSCALL_H

#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>

/*
 * A system call without libc, for the helper: no errno (it returns -errno),
 * no lazy symbol binding, no cancellation point, nothing the program may
 * have locked when the helper was cloned.
 */
#if defined(__x86_64__)
static inline long sys6(long nr, long a, long b, long c, long d, long e, long f)
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
static inline long sys6(long nr, long a, long b, long c, long d, long e, long f)
{
	long ret = syscall(nr, a, b, c, d, e, f);

	return ret == -1 ? -errno : ret;
}
#endif
#define sys(nr, a, b, c) sys6((nr), (long)(a), (long)(b), (long)(c), 0, 0, 0)

/* AddressSanitizer, as GCC and as clang (which has no macro) say it: its
 * runtime needs a system call and memory of the helper's own. */
#if defined(__SANITIZE_ADDRESS__)
#define PRW_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PRW_ASAN 1
#endif
#endif

#endif /* RAREWRITE_PROCESS_SYSCALL_H */
