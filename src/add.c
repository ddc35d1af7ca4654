// SPDX-License-Identifier: MIT
/*
 * add.c - read-modify-write of a protected integer: `x++` or `x |= F` is a
 * load and a store, and rare_write(x, x + 1) or rare_write(x, x | F) from
 * two threads can lose one update. rare_write_add(), rare_write_or() and
 * rare_write_and() serialise every such update in the process behind one
 * lock (one no store can release, klock.c), so concurrent updates all land;
 * readers see old or new, never a mix.
 */
#include <pthread.h> /* pthread_sigmask */
#include <signal.h>
#include <stdint.h>

#include "rarewrite.h"
#include "internal.h"

enum rmw_op { RMW_ADD, RMW_OR, RMW_AND };

static unsigned long long apply(enum rmw_op op, unsigned long long v,
				unsigned long long operand)
{
	switch (op) {
	case RMW_OR:
		return v | operand;
	case RMW_AND:
		return v & operand;
	default:
		return v + operand;
	}
}

/* *@dst = *@dst @op @operand, under the add lock (klock.c: a mutex word
 * released by a store would let two updates race, one lost): the new
 * value. */
static unsigned long long rmw(const char *call, void *dst, size_t size,
			      enum rmw_op op, unsigned long long operand)
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
		rw_die(call, dst, "%zu-byte object: integers only", size);
	rw_region_of(call, dst, size);
	/* A handler's own update on this thread must not find the lock
	 * held. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &saved);
	rw_klock_take(RW_KLOCK_ADD);
	switch (size) {
	case 1:
		v = apply(op, *(const volatile uint8_t *)dst, operand);
		n.u8 = (uint8_t)v;
		break;
	case 2:
		v = apply(op, *(const volatile uint16_t *)dst, operand);
		n.u16 = (uint16_t)v;
		break;
	case 4:
		v = apply(op, *(const volatile uint32_t *)dst, operand);
		n.u32 = (uint32_t)v;
		break;
	default:
		v = apply(op, *(const volatile uint64_t *)dst, operand);
		n.u64 = v;
	}
	rw_write_args(call, dst, &n, size, 0);
	rw_klock_give(RW_KLOCK_ADD);
	pthread_sigmask(SIG_SETMASK, &saved, NULL);
	return v;
}

unsigned long long rare_write_add_(void *dst, size_t size,
				   unsigned long long delta)
{
	return rmw("rare_write_add", dst, size, RMW_ADD, delta);
}

unsigned long long rare_write_or_(void *dst, size_t size,
				  unsigned long long bits)
{
	return rmw("rare_write_or", dst, size, RMW_OR, bits);
}

unsigned long long rare_write_and_(void *dst, size_t size,
				   unsigned long long mask)
{
	return rmw("rare_write_and", dst, size, RMW_AND, mask);
}
