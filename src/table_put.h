/* SPDX-License-Identifier: MIT */
/*
 * table_put.h - a request of the core's table put from registers, for the
 * calls that put what they will use into the table before anything else
 * (core.c's maps, list.c): an inline system call and a compare, no
 * function call that could save the caller's registers on the stack.
 */
#ifndef RAREWRITE_TABLE_PUT_H
#define RAREWRITE_TABLE_PUT_H

#include "rawsys.h"
#include "table.h"

/*
 * Which call put a request (the map's, a list operation's): its stack
 * pointer, the same at every point of that call's body and another in
 * every other thread (stacks are disjoint) or frame, and a register no
 * store reaches (never saved to memory: calls give it back by
 * arithmetic). No system call.
 */
static inline __attribute__((always_inline)) uint64_t rw_request_caller(void)
{
#if defined(__x86_64__)
	uint64_t sp;

	__asm__ volatile("mov %%rsp, %0" : "=r"(sp));
	return sp;
#else
	return (uint64_t)(uintptr_t)__builtin_frame_address(0);
#endif
}

/*
 * The address of @obj, computed where it is used: a constant address the
 * compiler kept in a callee-saved register across a call is saved on the
 * stack by the callee and taken back from there (a fresh review of
 * fbb0cbc: a list link's source, rewritten, was written and only the
 * read-back caught it). Elsewhere than x86-64 (the C fallback of
 * rawsys.h) the address passes through an opaque asm.
 */
#if defined(__x86_64__)
#define RW_FRESH_ADDR(obj)                                                     \
	({                                                                     \
		__typeof__(&(obj)) p_;                                         \
		__asm__ volatile("lea %1, %0" : "=r"(p_) : "m"(obj));          \
		p_;                                                            \
	})
#else
#define RW_FRESH_ADDR(obj)                                                     \
	({                                                                     \
		__typeof__(&(obj)) p_ = &(obj);                                \
		__asm__ volatile("" : "+r"(p_));                               \
		p_;                                                            \
	})
#endif

/*
 * Put the four words @w0-@w3 at @at, @off bytes into the vault whose memfd
 * is @fd, from the registers they are in, and compare after: true when
 * the vault now holds them. pwrite(2) is made inline, from a copy the asm
 * pushes below the red zone, so no function call saves what the caller
 * holds; a store into that copy before the kernel reads it is caught by
 * the compare. x86-64 only (rawsys.h).
 */
#if RW_RAWSYS_INLINE
static inline __attribute__((always_inline)) bool
rw_vault_put4(int fd, long off, uint64_t *at, uint64_t w0, uint64_t w1,
	      uint64_t w2, uint64_t w3)
{
	long bad;

	/* @fd in a register (a memory operand let clang reload it from
	 * its stack: a fresh review of d9a7d4d), moved first all the same. */
	__asm__ volatile("mov %[fd], %%edi\n\t"
			 "sub $128, %%rsp\n\t" /* the red zone */
			 "push %[w3]\n\t"
			 "push %[w2]\n\t"
			 "push %[w1]\n\t"
			 "push %[w0]\n\t"
			 "mov %%rsp, %%rsi\n\t"
			 "mov $32, %%edx\n\t"
			 "mov %[off], %%r10\n\t"
			 "mov %[nr], %%eax\n\t"
			 "syscall\n\t"
			 "add $160, %%rsp\n\t"
			 "cmp $32, %%rax\n\t"
			 "jne 1f\n\t"
			 "xor %%eax, %%eax\n\t"
			 "cmp %[w0], (%[at])\n\t"
			 "jne 1f\n\t"
			 "cmp %[w1], 8(%[at])\n\t"
			 "jne 1f\n\t"
			 "cmp %[w2], 16(%[at])\n\t"
			 "jne 1f\n\t"
			 "cmp %[w3], 24(%[at])\n\t"
			 "je 2f\n"
			 "1:\tmov $1, %%eax\n"
			 "2:"
			 : "=&a"(bad)
			 : [fd] "r"(fd), [at] "r"(at), [off] "r"(off),
			   [w0] "r"(w0), [w1] "r"(w1), [w2] "r"(w2),
			   [w3] "r"(w3), [nr] "i"(SYS_pwrite64)
			 : "rdi", "rsi", "rdx", "r10", "rcx", "r11", "memory",
			   "cc");
	return !bad;
}
#endif

/*
 * rw_vault_put4() into the core table, for a request of the table. Before
 * the seal, or in the fork child, the table is plain memory; elsewhere
 * (no inline system calls: rawsys.h) the words pass through a buffer.
 */
static inline __attribute__((always_inline)) bool
rw_table_put4(uint64_t *at, uint64_t w0, uint64_t w1, uint64_t w2, uint64_t w3)
{
#if RW_RAWSYS_INLINE
	if (rw_table.vault_fd >= 0 && !rw_table_open_in_child)
		return rw_vault_put4(rw_table.vault_fd,
				     (long)((char *)at - (char *)&rw_table), at,
				     w0, w1, w2, w3);
#endif
	const uint64_t words[4] = {w0, w1, w2, w3};

	rw_table_store(at, words, sizeof(words));
	return at[0] == w0 && at[1] == w1 && at[2] == w2 && at[3] == w3;
}

#endif /* RAREWRITE_TABLE_PUT_H */
