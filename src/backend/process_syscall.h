/* SPDX-License-Identifier: MIT */
/*
 * process_syscall.h - what the process backend's helper (process_helper.c,
 * process_seccomp.c) needs to make its system calls without libc.
 */
#ifndef RAREWRITE_PROCESS_SYSCALL_H
#define RAREWRITE_PROCESS_SYSCALL_H

/*
 * The helper's system calls are rawsys.h's rw_sys()/rw_sys6(): no errno
 * (they return -errno), no lazy symbol binding, no cancellation point,
 * nothing the program may have locked when the helper was cloned. Outside
 * x86-64 they are libc's syscall(), which takes no lock either.
 */
#include "rawsys.h"

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
