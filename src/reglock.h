/* SPDX-License-Identifier: MIT */
/*
 * reglock.h - a reader/writer lock taken without a function call, for the
 * write paths that keep their validated values in registers (rawsys.h):
 * pthread_rwlock_rdlock() saves the caller's registers in its frame, and
 * a store there while it runs changes the destination the caller checked.
 *
 * One 32-bit word: the number of readers, RW_RL_WRITER while a writer
 * holds it, RW_RL_WAIT when someone sleeps on it (futex), so an unlock
 * makes a system call only when somebody waits. Readers are preferred (a
 * reader may take it again while it holds it, as a shadow map's holder
 * writes). A forged word may serialise for good or let a writer and
 * readers in together, as a forged pthread lock (tests/inventory.txt).
 */
#ifndef RAREWRITE_REGLOCK_H
#define RAREWRITE_REGLOCK_H

#include <linux/futex.h>
#include <stdbool.h>
#include <stdint.h>

#include "rawsys.h"

#define RW_RL_WRITER 0x40000000u
#define RW_RL_WAIT 0x80000000u
#define RW_RL_READERS 0x3fffffffu

static inline __attribute__((always_inline)) void reglock_sleep(uint32_t *word,
								uint32_t seen)
{
	uint32_t want = seen | RW_RL_WAIT;

	if (seen == want ||
	    __atomic_compare_exchange_n(word, &seen, want, false,
					__ATOMIC_RELAXED, __ATOMIC_RELAXED))
		rw_sys6(SYS_futex, (long)word, FUTEX_WAIT_PRIVATE, want, 0, 0,
			0);
}

static inline __attribute__((always_inline)) void reglock_wake(uint32_t *word)
{
	rw_sys6(SYS_futex, (long)word, FUTEX_WAKE_PRIVATE, 0x7fffffff, 0, 0, 0);
}

static inline __attribute__((always_inline)) void
rw_reglock_read(uint32_t *word)
{
	for (;;) {
		uint32_t v = __atomic_load_n(word, __ATOMIC_RELAXED);

		if (v & RW_RL_WRITER)
			reglock_sleep(word, v);
		else if (__atomic_compare_exchange_n(word, &v, v + 1, false,
						     __ATOMIC_ACQUIRE,
						     __ATOMIC_RELAXED))
			return;
	}
}

/* A word that counts no reader was released by a store: nothing to
 * release (a count wrapped below zero would keep everyone out). */
static inline __attribute__((always_inline)) void
rw_reglock_read_unlock(uint32_t *word)
{
	uint32_t v = __atomic_load_n(word, __ATOMIC_RELAXED);

	do
		if (!(v & RW_RL_READERS))
			return;
	while (!__atomic_compare_exchange_n(
		word, &v, v - 1, false, __ATOMIC_RELEASE, __ATOMIC_RELAXED));
	v--;
	if (!(v & RW_RL_READERS) && (v & RW_RL_WAIT) &&
	    (__atomic_fetch_and(word, ~RW_RL_WAIT, __ATOMIC_RELAXED) &
	     RW_RL_WAIT))
		reglock_wake(word);
}

static inline __attribute__((always_inline)) void
rw_reglock_write(uint32_t *word)
{
	for (;;) {
		uint32_t v = __atomic_load_n(word, __ATOMIC_RELAXED);

		if (v & (RW_RL_READERS | RW_RL_WRITER))
			reglock_sleep(word, v);
		else if (__atomic_compare_exchange_n(word, &v, v | RW_RL_WRITER,
						     false, __ATOMIC_ACQUIRE,
						     __ATOMIC_RELAXED))
			return;
	}
}

static inline __attribute__((always_inline)) void
rw_reglock_write_unlock(uint32_t *word)
{
	if (__atomic_fetch_and(word, ~(RW_RL_WRITER | RW_RL_WAIT),
			       __ATOMIC_RELEASE) &
	    RW_RL_WAIT)
		reglock_wake(word);
}

#endif /* RAREWRITE_REGLOCK_H */
