// SPDX-License-Identifier: MIT
/*
 * rare_write_or() and rare_write_and(): flag words. `flags |= F` written as
 * rare_write(flags, flags | F) reads, then writes: a concurrent writer's
 * bit set in between is lost when the stale value lands. Threads that each
 * set and clear their own bit of one shared word, and check it after every
 * update, catch that at once; with the helpers no bit is ever lost.
 *
 * Built with -DTEST_RMW_IDIOM, the threads use the read-then-write idiom
 * instead (the case then fails on every backend: a demonstration that the
 * test sees lost bits, not part of the suite).
 */
#include <pthread.h>
#include <stdint.h>

#include "harness.h"
#include "testutil.h"

static uint8_t flags8 __wr_rare;
static uint16_t flags16 __wr_rare;
static int32_t flags32 __wr_rare;
static uint64_t flags64 __wr_rare;
static unsigned long shared_flags __wr_rare;
static unsigned long plain_flags;

TEST(flags_or_and_every_size, EXPECT_PASS)
{
	init();
	CHECK(rare_write_or(flags8, 0x81) == 0x81);
	CHECK(rare_write_or(flags8, 0x0100 | 0x02) == 0x83); /* truncated */
	CHECK(rare_write_and(flags8, ~0x80) == 0x03);
	CHECK(flags8 == 0x03);
	CHECK(rare_write_or(flags16, 0x8001) == 0x8001);
	CHECK(rare_write_and(flags16, 0x8000) == 0x8000);
	CHECK(rare_write_or(flags32, INT32_MIN) == INT32_MIN);
	CHECK(rare_write_or(flags32, 5) == (INT32_MIN | 5));
	CHECK(rare_write_and(flags32, ~4) == (INT32_MIN | 1));
	CHECK(rare_write_or(flags64, 1ULL << 63) == 1ULL << 63);
	CHECK(rare_write_or(flags64, 1ULL << 40) == (1ULL << 63 | 1ULL << 40));
	/* ~ of a 64-bit mask keeps the other bits, as x &= ~F would. */
	CHECK(rare_write_and(flags64, ~(1ULL << 63)) == 1ULL << 40);
	CHECK(flags64 == 1ULL << 40);
	/* Mixed with rare_write_add() on the same word. */
	CHECK(rare_write_add(flags64, 1) == (1ULL << 40 | 1));
	CHECK(rare_write_and(flags64, 1) == 1);
}

#define FLAG_THREADS 8
#define FLAG_ROUNDS 4000

#ifdef TEST_RMW_IDIOM
#define SET_BIT(bit) rare_write(shared_flags, shared_flags | (bit))
#define CLEAR_BIT(bit) rare_write(shared_flags, shared_flags & ~(bit))
#else
#define SET_BIT(bit) rare_write_or(shared_flags, (bit))
#define CLEAR_BIT(bit) rare_write_and(shared_flags, ~(bit))
#endif

static volatile int flags_go;

/* Thread @arg owns one bit: only it sets or clears that bit, so after its
 * own set the bit must read 1, after its own clear 0. Returns the number of
 * times it found its bit wrong (another thread's stale write landed). */
static void *own_bit(void *arg)
{
	unsigned long bit = 1UL << (uintptr_t)arg;
	uintptr_t lost = 0;

	while (!flags_go)
		;
	for (int i = 0; i < FLAG_ROUNDS; i++) {
		SET_BIT(bit);
		if (!(__atomic_load_n(&shared_flags, __ATOMIC_RELAXED) & bit))
			lost++;
		CLEAR_BIT(bit);
		if (__atomic_load_n(&shared_flags, __ATOMIC_RELAXED) & bit)
			lost++;
	}
	return (void *)lost;
}

TEST(flags_concurrent_bits_never_lost, EXPECT_PASS)
{
	pthread_t t[FLAG_THREADS];
	uintptr_t lost = 0;

	init();
	/* A bit no thread touches must survive every update. */
	rare_write(shared_flags, 1UL << 40);
	for (uintptr_t i = 0; i < FLAG_THREADS; i++)
		CHECK(!pthread_create(&t[i], NULL, own_bit, (void *)i));
	flags_go = 1;
	for (int i = 0; i < FLAG_THREADS; i++) {
		void *ret;

		CHECK(!pthread_join(t[i], &ret));
		lost += (uintptr_t)ret;
	}
	if (lost || shared_flags != 1UL << 40)
		fprintf(stderr, "%lu bit updates lost, word %#lx\n",
			(unsigned long)lost, shared_flags);
	CHECK(!lost);
	CHECK(shared_flags == 1UL << 40);
}

static void or_outside(void *unused)
{
	(void)unused;
	init();
	rare_write_or(plain_flags, 1);
}

static void and_outside(void *unused)
{
	(void)unused;
	init();
	rare_write_and(plain_flags, 1);
}

TEST(flags_outside_protected_memory_abort, EXPECT_PASS)
{
	expect_abort(or_outside, NULL, "rare_write_or", &plain_flags);
	expect_abort(and_outside, NULL, "rare_write_and", &plain_flags);
}
