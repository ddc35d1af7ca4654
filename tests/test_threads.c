// SPDX-License-Identifier: MIT
/* Concurrency: many threads writing protected memory lose nothing. */
#include <pthread.h>
#include <stdint.h>

#include "harness.h"
#include "testutil.h"

#define NR_THREADS 16
#define NR_INCS 1000

static long counter __wr_rare;
/* distinct slots, several to a page and across pages */
static long slots[NR_THREADS][64] __wr_rare __attribute__((aligned(4096)));

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t start;

static void run_threads(void *(*fn)(void *))
{
	pthread_t t[NR_THREADS];

	pthread_barrier_init(&start, NULL, NR_THREADS);
	for (long i = 0; i < NR_THREADS; i++)
		CHECK(pthread_create(&t[i], NULL, fn, (void *)(intptr_t)i) ==
		      0);
	for (int i = 0; i < NR_THREADS; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&start);
}

static void *inc_locked(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&start);
	for (int i = 0; i < NR_INCS; i++) {
		pthread_mutex_lock(&lock);
		rare_write(counter, counter + 1);
		pthread_mutex_unlock(&lock);
	}
	return NULL;
}

TEST(threads_locked_increments_lose_nothing, EXPECT_PASS)
{
	init();
	run_threads(inc_locked);
	CHECK(counter == (long)NR_THREADS * NR_INCS);
}

static void *inc_slot(void *arg)
{
	long id = (long)(intptr_t)arg;

	pthread_barrier_wait(&start);
	for (int i = 0; i < NR_INCS; i++) {
		rare_write(slots[id][0], slots[id][0] + 1);
		/* a neighbour word on the same page as other threads' slots */
		rare_write(slots[id][1 + i % 63], (long)i);
	}
	return NULL;
}

TEST(threads_distinct_slots_lose_nothing, EXPECT_PASS)
{
	init();
	run_threads(inc_slot);
	for (int t = 0; t < NR_THREADS; t++) {
		CHECK(slots[t][0] == NR_INCS);
		/* the last value written to each word */
		for (int w = 1; w < 64; w++) {
			long last = -1;

			for (int i = 0; i < NR_INCS; i++)
				if (1 + i % 63 == w)
					last = i;
			CHECK(slots[t][w] == last);
		}
	}
}

/* Distinct words written by all threads with every write primitive at
 * once: memcpy, memset, map/unmap, on the section and on a pool. */
static struct rare_pool *pool;
static unsigned char *pool_buf;

static void *mixed_writer(void *arg)
{
	long id = (long)(intptr_t)arg;
	unsigned char *mine = pool_buf + id * 1024;

	pthread_barrier_wait(&start);
	for (int i = 0; i < 400; i++) {
		unsigned char v = (unsigned char)(id + i);
		struct rare_write_mapping m;

		rare_write_memset(mine, v, 1024);
		for (int j = 0; j < 1024; j++)
			if (mine[j] != v)
				return (void *)1;
		m = rare_write_map(&slots[id][2], 8 * sizeof(long));
		for (int j = 0; j < 8; j++)
			((long *)m.addr)[j] = id * 1000 + i;
		rare_write_unmap(m);
		for (int j = 0; j < 8; j++)
			if (slots[id][2 + j] != id * 1000 + i)
				return (void *)1;
	}
	return NULL;
}

TEST(threads_mixed_writes_all_land, EXPECT_PASS)
{
	pthread_t t[NR_THREADS];

	init();
	pool = rare_pool_create(NR_THREADS * 1024 + 4096);
	CHECK(pool);
	pool_buf = rare_alloc(pool, NR_THREADS * 1024);
	CHECK(pool_buf);
	pthread_barrier_init(&start, NULL, NR_THREADS);
	for (long i = 0; i < NR_THREADS; i++)
		CHECK(pthread_create(&t[i], NULL, mixed_writer,
				     (void *)(intptr_t)i) == 0);
	for (int i = 0; i < NR_THREADS; i++) {
		void *r;

		pthread_join(t[i], &r);
		CHECK(r == NULL);
	}
	for (int i = 0; i < NR_THREADS; i++)
		for (int j = 0; j < 1024; j++)
			CHECK(pool_buf[i * 1024 + j] ==
			      (unsigned char)(i + 399));
}

/* Concurrent allocation and freeing: objects never shared. */
static void *alloc_free(void *arg)
{
	long id = (long)(intptr_t)arg;
	long *mine[64];

	pthread_barrier_wait(&start);
	for (int round = 0; round < 10; round++) {
		for (int i = 0; i < 64; i++) {
			mine[i] = rare_alloc(pool, 16 + (size_t)(i % 4) * 40);
			if (!mine[i] || *mine[i])
				return (void *)1;
			rare_write(*mine[i], id);
		}
		for (int i = 0; i < 64; i++) {
			if (*mine[i] != id)
				return (void *)2;
			rare_free(pool, mine[i]);
		}
	}
	return NULL;
}

TEST(threads_alloc_free_concurrently, EXPECT_PASS)
{
	pthread_t t[NR_THREADS];

	init();
	pool = rare_pool_create(1 << 20);
	CHECK(pool);
	pthread_barrier_init(&start, NULL, NR_THREADS);
	for (long i = 0; i < NR_THREADS; i++)
		CHECK(pthread_create(&t[i], NULL, alloc_free,
				     (void *)(intptr_t)i) == 0);
	for (int i = 0; i < NR_THREADS; i++) {
		void *r;

		pthread_join(t[i], &r);
		CHECK(r == NULL);
	}
}
