/* SPDX-License-Identifier: MIT */
/* process_helper.h - starting the process backend's helper. */
#ifndef RAREWRITE_PROCESS_HELPER_H
#define RAREWRITE_PROCESS_HELPER_H

#include <errno.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include "internal.h"
#include "process_ring.h"

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

/* AddressSanitizer, as GCC and as clang (which has no macro) say it. */
#if defined(__SANITIZE_ADDRESS__)
#define PRW_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PRW_ASAN 1
#endif
#endif

/* The names of the helper and of its keeper in /proc/<pid>/comm. */
#define PRW_HELPER_COMM "rarewrite-hlp"
#define PRW_KEEPER_COMM "rarewrite-kpr"

/*
 * Start the helper, serving the requests that come on @sock (the
 * helper's end of the socketpair; the caller closes its copy), as no child
 * of ours: 0 or -errno. Once ready the helper sends a struct prw_ready on
 * @sock (its pid); when it ends its keeper sends a struct prw_reply with
 * seq PRW_SEQ_FATE (process_ring.h).
 */
RW_HIDDEN int prw_helper_spawn(int sock);

/* In the helper, last before serving: allow only the system calls of its
 * loop from now on (others kill it with SIGSYS). 0 or -errno. */
RW_HIDDEN int prw_helper_seccomp(void);

/* In the keeper, once the helper is cloned: allow only waiting for it,
 * one reply and leaving. 0 or -errno. */
RW_HIDDEN int prw_keeper_seccomp(void);

#endif /* RAREWRITE_PROCESS_HELPER_H */
