// SPDX-License-Identifier: MIT
/*
 * add.c - read-modify-write of a protected integer: `x++` is a load and a
 * store, and rare_write(x, x + 1) from two threads can lose one increment.
 * rare_write_add() serialises every such update in the process behind one
 * lock, so concurrent adds all land; readers see old or new, never a mix.
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>

#include "rarewrite.h"
#include "internal.h"

static pthread_mutex_t add_lock = PTHREAD_MUTEX_INITIALIZER;

unsigned long long rare_write_add_(void *dst, size_t size,
				   unsigned long long delta)
{
	unsigned long long v = 0;
	union {
		uint8_t u8;
		uint16_t u16;
		uint32_t u32;
		uint64_t u64;
	} n;
	sigset_t all, saved;

	if (size != 1 && size != 2 && size != 4 && size != 8)
		rw_die("rare_write_add", dst, "%zu-byte object: integers only",
		       size);
	rw_region_of("rare_write_add", dst, size);
	/* A handler's own add on this thread must not find the lock held. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &saved);
	pthread_mutex_lock(&add_lock);
	switch (size) {
	case 1:
		v = *(const volatile uint8_t *)dst + delta;
		n.u8 = (uint8_t)v;
		break;
	case 2:
		v = *(const volatile uint16_t *)dst + delta;
		n.u16 = (uint16_t)v;
		break;
	case 4:
		v = *(const volatile uint32_t *)dst + delta;
		n.u32 = (uint32_t)v;
		break;
	default:
		v = *(const volatile uint64_t *)dst + delta;
		n.u64 = v;
	}
	rw_write_args("rare_write_add", dst, &n, size, 0);
	pthread_mutex_unlock(&add_lock);
	pthread_sigmask(SIG_SETMASK, &saved, NULL);
	return v;
}
