/* SPDX-License-Identifier: MIT */
/*
 * thread_self.h - who the calling thread is, with no system call where the
 * CPU allows, for the backends that keep a record per thread (mprotect's
 * windows, pkey's holds).
 *
 * On x86-64 it is the thread's FS base, the thread pointer, read from the
 * register (RDFSBASE): a store cannot change a register, only
 * arch_prctl() or WRFSBASE can, and the threat model runs no code of its
 * own. Where the kernel has not enabled FSGSBASE the same value comes from
 * arch_prctl(ARCH_GET_FS); a store to the C library's copy of the hardware
 * capabilities only picks between the two (or makes RDFSBASE fault).
 * Elsewhere: gettid(), which no store changes either.
 *
 * Two live threads never share a thread pointer, but the C library reuses
 * a dead thread's (its cached stack and control block) for the next one
 * at once, where a tid comes back only after the kernel's pid space
 * wraps. A backend whose records outlive their thread must clear a record
 * that a new thread finds under its own id before it trusts it (pkey's
 * thread start does). A fork child has its parent thread's pointer: the
 * forking thread's record is the child's.
 */
#ifndef RAREWRITE_THREAD_SELF_H
#define RAREWRITE_THREAD_SELF_H

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"

static inline uint64_t rw_thread_self(const char *call)
{
#if defined(__x86_64__)
	uint64_t fs;

	if (getauxval(AT_HWCAP2) & 2 /* HWCAP2_FSGSBASE */) {
		__asm__ volatile("rdfsbase %0" : "=r"(fs));
		return fs;
	}
	if (syscall(SYS_arch_prctl, 0x1003 /* ARCH_GET_FS */, &fs))
		rw_die(call, NULL, "arch_prctl: %s", strerror(errno));
	return fs;
#else
	(void)call;
	return (uint64_t)syscall(SYS_gettid);
#endif
}

#endif /* RAREWRITE_THREAD_SELF_H */
