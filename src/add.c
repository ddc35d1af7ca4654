// SPDX-License-Identifier: MIT
/*
 * add.c - read-modify-write of a protected integer: `x++` or `x |= F` is a
 * load and a store, and rare_write(x, x + 1) or rare_write(x, x | F) from
 * two threads can lose one update. rare_write_add(), rare_write_or() and
 * rare_write_and() serialise every such update in the process behind one
 * lock (one no store can release, klock.c), so concurrent updates all land;
 * readers see old or new, never a mix.
 */
#include <signal.h>
#include <stdint.h>

#include "rarewrite.h"
#include "internal.h"
#include "klock.h"
#include "rawsys.h"
#include "table.h"
#include "region_find.h"

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

/* Every signal but the two the C library keeps for itself (SIGCANCEL and
 * SIGSETXID, 32 and 33), as pthread_sigmask() would block them. */
static const uint64_t all_signals = ~0ULL & ~(3ULL << 31);

/*
 * *@dst = *@dst @op @operand, under the add lock (klock.c: a mutex or lock
 * word released by a store let two updates race, one lost, attack 26a):
 * the new value. From the check to the write (rw_write_args(), which keeps
 * them in registers up to the system call) the destination and size stay
 * in registers: the region is found inline, signals are blocked and the
 * lock taken without a function call (klock.h: its pipe read inline),
 * since a callee saves registers where another thread rewrites them
 * (scribbler 15b). The new value is passed in memory (@n,
 * this frame): a store there between the load below and the backend's
 * load changes the value added, never where it goes (SECURITY.md).
 */
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
	uint64_t saved;

	if (size != 1 && size != 2 && size != 4 && size != 8)
		rw_die(call, dst, "%zu-byte object: integers only", size);
	if (!rw_region_find((uintptr_t)dst, size))
		rw_region_of(call, dst, size); /* aborts, saying why */
	/* A handler's own update on this thread must not find the lock
	 * held. */
	rw_sys6(SYS_rt_sigprocmask, SIG_BLOCK, (long)&all_signals, (long)&saved,
		sizeof(saved), 0, 0);
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
	rw_sys6(SYS_rt_sigprocmask, SIG_SETMASK, (long)&saved, 0, sizeof(saved),
		0, 0);
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
