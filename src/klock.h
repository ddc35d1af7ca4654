/* SPDX-License-Identifier: MIT */
/*
 * klock.h - the locks of klock.c (a pipe holding one byte: no store
 * releases one) taken and given inline: read(2) and write(2) of the byte
 * made with rawsys.h's inline system call, the descriptors loaded from
 * the table (the vault, read-only). So a write path that keeps its values
 * in registers from its check to the system call (rare_write_add(), 15b)
 * takes it without a function call. Calls are left for before the first
 * seal (a mutex: nothing is protected yet, klock.c) and for the abort.
 */
#ifndef RAREWRITE_KLOCK_H
#define RAREWRITE_KLOCK_H

#include "internal.h"
#include "rawsys.h"
#include "table.h"

/* Before the first seal (the table's descriptors still -1). */
RW_HIDDEN void rw_klock_take_before_seal(enum rw_klock k);
RW_HIDDEN void rw_klock_give_before_seal(enum rw_klock k);
/* A read or write of the pipe failed with @err (-errno, 0: end of file). */
RW_HIDDEN __attribute__((noreturn, cold)) void rw_klock_broken(enum rw_klock k,
							       long err);

static inline __attribute__((always_inline)) void rw_klock_take(enum rw_klock k)
{
	int fd = __atomic_load_n(&rw_table.klocks[k][0], __ATOMIC_ACQUIRE);
	char byte;
	long n;

	if (fd < 0) {
		rw_klock_take_before_seal(k);
		return;
	}
	while ((n = rw_sys(SYS_read, fd, &byte, 1)) != 1)
		if (n != -EINTR)
			rw_klock_broken(k, n);
}

static inline __attribute__((always_inline)) void rw_klock_give(enum rw_klock k)
{
	int fd = __atomic_load_n(&rw_table.klocks[k][1], __ATOMIC_ACQUIRE);
	long n;

	if (fd < 0) {
		rw_klock_give_before_seal(k);
		return;
	}
	while ((n = rw_sys(SYS_write, fd, "", 1)) != 1)
		if (n != -EINTR)
			rw_klock_broken(k, n);
}

#endif /* RAREWRITE_KLOCK_H */
