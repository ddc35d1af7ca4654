// SPDX-License-Identifier: MIT
/*
 * process_seccomp.c - the process backend's helper may make only the system
 * calls its loop needs. Anything else (an execve, an open, a ptrace, a
 * kill) kills the helper with SIGSYS, and the program's next write reports
 * that. The helper holds the only writable mapping of protected memory;
 * should a bug in it ever be exploited, the exploit gets no more than the
 * helper's own loop could do. Its keeper, which holds the helper's end of
 * the socket to report how the helper ended, may only wait, send that one
 * reply and leave.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/futex.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "process_seccomp.h"
#include "process_syscall.h"

#ifndef SECCOMP_RET_KILL_PROCESS
#define SECCOMP_RET_KILL_PROCESS 0x80000000U
#endif

#define NR_OFF offsetof(struct seccomp_data, nr)
#define ARCH_OFF offsetof(struct seccomp_data, arch)
#define ARG_LO(i) (offsetof(struct seccomp_data, args) + 8 * (i))

#define ALLOW(nr)                                                              \
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1),                       \
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)

/* x86-64 only; the x32 ABI's numbers have bit 30 set. Leaves the number
 * of the system call in the accumulator. */
#define NATIVE_CALLS_ONLY                                                      \
	BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARCH_OFF),                          \
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),  \
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),           \
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, NR_OFF),                    \
		BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000, 0, 1),         \
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS)

/* Confine the calling process to the @n instructions of @insns, for good. */
static int install(const struct sock_filter *insns, size_t n)
{
	const struct sock_fprog prog = {
		.len = (unsigned short)n,
		.filter = (struct sock_filter *)insns,
	};
	long err = rw_sys6(SYS_prctl, PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0, 0);

	if (err)
		return (int)err;
	/* A kernel without seccomp (or valgrind, which does not emulate it):
	 * the helper serves unconfined, as before the filter existed; any
	 * other refusal stops it. Direct system calls: the helper may no
	 * longer bind a lazy symbol (process_helper.c). */
	err = rw_sys(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog);
	return err == -ENOSYS ? 0 : (int)err;
}

int prw_helper_seccomp(void)
{
	static const struct sock_filter insns[] = {
		NATIVE_CALLS_ONLY,
		/* mmap: never executable (a region). */
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_mmap, 0, 4),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(2)),
		BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, PROT_EXEC, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		/* futex: only to wake the program at its answer page. */
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_futex, 0, 4),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(1)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, FUTEX_WAKE_BITSET, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		/* The loop: receive a request, map or drop what it carries,
		 * check the memfd's seals and size (the ready message goes by
		 * sendto()). */
		ALLOW(SYS_recvmsg),
		ALLOW(SYS_sendto),
		ALLOW(SYS_munmap),
		ALLOW(SYS_close),
		ALLOW(SYS_fcntl),
		ALLOW(SYS_fstat),
		/* Where it runs (a hint in every reply). */
		ALLOW(SYS_getcpu),
#ifdef PRW_ASAN
		/* AddressSanitizer asks before every noreturn call. */
		ALLOW(SYS_sigaltstack),
#endif
		/* A stop by a debugger with CAP_SYS_PTRACE, and leaving. */
		ALLOW(SYS_restart_syscall),
		ALLOW(SYS_exit),
		ALLOW(SYS_exit_group),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
	};
	return install(insns, sizeof(insns) / sizeof(insns[0]));
}

int prw_keeper_seccomp(void)
{
	static const struct sock_filter insns[] = {
		NATIVE_CALLS_ONLY,
		/* Wait for the helper, say how it ended, leave. */
		ALLOW(SYS_waitid),
		ALLOW(SYS_sendto),
#ifdef PRW_ASAN
		ALLOW(SYS_sigaltstack),
#endif
		ALLOW(SYS_restart_syscall),
		ALLOW(SYS_exit),
		ALLOW(SYS_exit_group),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
	};
	return install(insns, sizeof(insns) / sizeof(insns[0]));
}
