// SPDX-License-Identifier: MIT
/*
 * Torn reads: an aligned 2/4/8-byte write is seen by a concurrent reader as
 * the old or the new value, never a mix. A reader thread spins on the value
 * while the writer alternates between all-zero and all-one patterns.
 */
#include <pthread.h>
#include <sched.h>
#include <stdint.h>

#include "harness.h"
#include "testutil.h"

/*
 * Writes go on until the reader saw both values and MIN_WRITES are done or
 * MAX_SECONDS have passed. On a loaded machine the reader may not run for
 * a while: the writer then goes on until it has seen both (so the check
 * below is never vacuous), up to GIVE_UP_SECONDS.
 */
#define MAX_SECONDS 0.6
#define GIVE_UP_SECONDS 30.0
#define MIN_WRITES 50000
/*
 * A torn copy from a source at another offset modulo 64 shows in bursts
 * (measured on a 2-vCPU AMD EPYC with FSRM, before the fix: one burst in
 * about 0.6 s of writes on average, so 2 s of writes missed it in about 1
 * run in 10).
 */
#define MEMCPY_WRITES 2000000
#define MEMCPY_SECONDS 2.0

/* The value sits in the last 8 bytes of a page. */
static unsigned char page[4096] __wr_rare __attribute__((aligned(4096)));

/*
 * Sources at the start of a page, for a destination that is not at the same
 * offset modulo 64: the kernel's copy of a pwrite (rep movsb on a CPU with
 * FSRM) stores such a copy byte by byte (docs/backends.md, pwrite).
 */
static const uint64_t zeros[512] __attribute__((aligned(4096)));
static const uint64_t all_ones[512] __attribute__((aligned(4096))) = {~0ULL};

enum how { BY_RARE_WRITE, BY_MEMSET, BY_MEMCPY, BY_MAP, BY_ADD };

struct torn {
	void *at;
	unsigned size;
	enum how how;
	volatile bool done, started;
	uint64_t seen_a, seen_b, torn, torn_value;
};

static uint64_t load(const void *at, unsigned size)
{
	switch (size) {
	case 8:
		return __atomic_load_n((const uint64_t *)at, __ATOMIC_RELAXED);
	case 4:
		return __atomic_load_n((const uint32_t *)at, __ATOMIC_RELAXED);
	default:
		return __atomic_load_n((const uint16_t *)at, __ATOMIC_RELAXED);
	}
}

static uint64_t ones(unsigned size)
{
	return size == 8 ? ~0ULL : (1ULL << (8 * size)) - 1;
}

static void *reader(void *arg)
{
	struct torn *t = arg;
	uint64_t b = ones(t->size);

	t->started = true;
	while (!t->done) {
		uint64_t v = load(t->at, t->size);

		if (v == 0)
			__atomic_store_n(&t->seen_a, t->seen_a + 1,
					 __ATOMIC_RELAXED);
		else if (v == b)
			__atomic_store_n(&t->seen_b, t->seen_b + 1,
					 __ATOMIC_RELAXED);
		else if (!t->torn++)
			t->torn_value = v;
	}
	return NULL;
}

static void write_pattern(struct torn *t, bool set)
{
	uint64_t v = set ? ~0ULL : 0, d;
	struct rare_write_mapping m;

	switch (t->how) {
	case BY_RARE_WRITE:
		if (t->size == 8)
			rare_write(*(uint64_t *)t->at, v);
		else if (t->size == 4)
			rare_write(*(uint32_t *)t->at, (uint32_t)v);
		else
			rare_write(*(uint16_t *)t->at, (uint16_t)v);
		break;
	case BY_MEMSET:
		rare_write_memset(t->at, set ? 0xff : 0, t->size);
		break;
	case BY_MEMCPY:
		rare_write_memcpy(t->at, set ? all_ones : zeros, t->size);
		break;
	case BY_MAP:
		m = rare_write_map(t->at, t->size);
		/* one store through the view */
		if (t->size == 8)
			__atomic_store_n((uint64_t *)m.addr, v,
					 __ATOMIC_RELAXED);
		else if (t->size == 4)
			__atomic_store_n((uint32_t *)m.addr, (uint32_t)v,
					 __ATOMIC_RELAXED);
		else
			__atomic_store_n((uint16_t *)m.addr, (uint16_t)v,
					 __ATOMIC_RELAXED);
		rare_write_unmap(m);
		break;
	case BY_ADD:
		/* the difference to the pattern (this thread alone writes) */
		d = v - load(t->at, t->size);
		if (t->size == 8)
			rare_write_add(*(uint64_t *)t->at, d);
		else if (t->size == 4)
			rare_write_add(*(uint32_t *)t->at, (uint32_t)d);
		else
			rare_write_add(*(uint16_t *)t->at, (uint16_t)d);
		break;
	}
}

static void run_torn_for(void *at, unsigned size, enum how how, long min_writes,
			 double seconds)
{
	struct torn t = {.at = at, .size = size, .how = how};
	double start;
	pthread_t r;
	long n;

	CHECK((uintptr_t)at % size == 0);
	CHECK(pthread_create(&r, NULL, reader, &t) == 0);
	while (!t.started)
		sched_yield();
	start = now_seconds();
	for (n = 0;; n++) {
		bool both;

		write_pattern(&t, n & 1);
		both = __atomic_load_n(&t.seen_a, __ATOMIC_RELAXED) &&
		       __atomic_load_n(&t.seen_b, __ATOMIC_RELAXED);
		if (n >= min_writes && both)
			break;
		if (!(n & 255)) {
			double spent = now_seconds() - start;

			if ((spent > seconds && both) ||
			    spent > GIVE_UP_SECONDS)
				break;
		}
	}
	t.done = true;
	pthread_join(r, NULL);
	if (t.torn)
		fprintf(stderr,
			"%u-byte value seen torn %llu times (first %#llx) "
			"in %ld writes\n",
			size, (unsigned long long)t.torn,
			(unsigned long long)t.torn_value, n);
	CHECK(t.torn == 0);
	/* the reader really raced the writer */
	CHECK(t.seen_a > 0 && t.seen_b > 0);
}

static void run_torn(void *at, unsigned size, enum how how)
{
	run_torn_for(at, size, how, MIN_WRITES, MAX_SECONDS);
}

TEST(torn_8_rare_write, EXPECT_PASS)
{
	init();
	run_torn(page + 4088, 8, BY_RARE_WRITE);
}

TEST(torn_4_rare_write, EXPECT_PASS)
{
	init();
	run_torn(page + 4092, 4, BY_RARE_WRITE);
}

TEST(torn_2_rare_write, EXPECT_PASS)
{
	init();
	run_torn(page + 4094, 2, BY_RARE_WRITE);
}

TEST(torn_8_memset, EXPECT_PASS)
{
	init();
	run_torn(page + 8, 8, BY_MEMSET);
}

TEST(torn_8_memcpy_page_source, EXPECT_PASS)
{
	init();
	run_torn_for(page + 8, 8, BY_MEMCPY, MEMCPY_WRITES, MEMCPY_SECONDS);
}

TEST(torn_4_memset, EXPECT_PASS)
{
	init();
	run_torn(page + 4, 4, BY_MEMSET);
}

/* rare_write_memset(), rare_write_memcpy() and rare_write_add() of the
 * other sizes are single stores too (shadow filled with rep stosb, which
 * stores byte by byte). */
TEST(torn_2_memset, EXPECT_PASS)
{
	init();
	run_torn(page + 42, 2, BY_MEMSET);
}

TEST(torn_4_memcpy, EXPECT_PASS)
{
	init();
	run_torn(page + 44, 4, BY_MEMCPY);
}

TEST(torn_8_add, EXPECT_PASS)
{
	init();
	run_torn(page + 48, 8, BY_ADD);
}

TEST(torn_4_add, EXPECT_PASS)
{
	init();
	run_torn(page + 60, 4, BY_ADD);
}

TEST(torn_2_map_unmap, EXPECT_PASS)
{
	init();
	run_torn(page + 26, 2, BY_MAP);
}

TEST(torn_8_map_unmap, EXPECT_PASS)
{
	init();
	run_torn(page + 16, 8, BY_MAP);
}

TEST(torn_8_pool, EXPECT_PASS)
{
	struct rare_pool *pool;
	uint64_t *v;

	init();
	pool = rare_pool_create(4096);
	CHECK(pool);
	v = rare_alloc(pool, 16);
	CHECK(v);
	run_torn(v + 1, 8, BY_RARE_WRITE);
}
