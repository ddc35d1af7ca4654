// SPDX-License-Identifier: MIT
/* The static __wr_rare section: ro-after-init, page isolation, DSOs. */
#include <pthread.h>
#include <stdint.h>

#include "harness.h"
#include "testutil.h"

static long protected_value __wr_rare = 1;
static long plain_neighbour = 2;

TEST(section_write_before_init_is_plain, EXPECT_PASS)
{
	protected_value = 5; /* ordinary data until init */
	rare_write(protected_value, 6L);
	CHECK(protected_value == 6);
	init();
	CHECK(protected_value == 6);
}

TEST(section_rare_write_lands, EXPECT_PASS)
{
	init();
	CHECK(rare_write(protected_value, 42L) == 42);
	CHECK(protected_value == 42);
}

TEST(section_plain_store_after_init_faults, EXPECT_SEGV)
{
	init();
	*(volatile long *)&protected_value = 3;
}

TEST(section_neighbour_stays_writable, EXPECT_PASS)
{
	init();
	plain_neighbour = 9;
	CHECK(plain_neighbour == 9);
}

/* More neighbours: initialised data on both sides, zeroed data (bss). */
static long data_before = 3;
static char protected_bytes[100] __wr_rare = "sealed";
static long data_after = 4;
static long bss_neighbour;

TEST(section_all_neighbours_stay_writable, EXPECT_PASS)
{
	init();
	data_before = 30;
	data_after = 40;
	bss_neighbour = 50;
	plain_neighbour = 20;
	CHECK(data_before == 30 && data_after == 40 && bss_neighbour == 50 &&
	      plain_neighbour == 20);
	CHECK(strcmp(protected_bytes, "sealed") == 0);
}

TEST(section_is_page_isolated, EXPECT_PASS)
{
	uintptr_t start = (uintptr_t)__start_rarewrite_data;
	uintptr_t stop = (uintptr_t)__stop_rarewrite_data;
	uintptr_t pg = page_size();
	const void *plain[] = {&data_before, &data_after, &bss_neighbour,
			       &plain_neighbour};

	CHECK(start && stop > start);
	CHECK(start % pg == 0 && stop % pg == 0);
	CHECK((uintptr_t)&protected_value >= start &&
	      (uintptr_t)&protected_value < stop);
	CHECK((uintptr_t)protected_bytes >= start &&
	      (uintptr_t)protected_bytes < stop);
	for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++)
		CHECK((uintptr_t)plain[i] < start ||
		      (uintptr_t)plain[i] >= stop);
}

TEST(section_second_object_faults, EXPECT_SEGV)
{
	init();
	((volatile char *)protected_bytes)[99] = 1;
}

TEST(section_memcpy_memset_before_init_are_plain, EXPECT_PASS)
{
	CHECK(strcmp(rare_write_backend(), "none") == 0);
	CHECK(rare_write_caps() == 0);
	rare_write_memcpy(protected_bytes, "before", 7);
	CHECK(strcmp(protected_bytes, "before") == 0);
	rare_write_memset(protected_bytes + 10, 'x', 5);
	CHECK(memcmp(protected_bytes + 10, "xxxxx", 5) == 0);
	protected_bytes[20] = 'p'; /* and plain stores still work */
	init();
	CHECK(strcmp(protected_bytes, "before") == 0);
	CHECK(protected_bytes[20] == 'p');
	CHECK(strcmp(rare_write_backend(), "none") != 0);
}

TEST(section_init_is_idempotent, EXPECT_PASS)
{
	const char *name;
	unsigned caps;

	init();
	name = rare_write_backend();
	caps = rare_write_caps();
	rare_write(protected_value, 77L);
	for (int i = 0; i < 5; i++)
		CHECK(rare_write_init() == 0);
	CHECK(strcmp(rare_write_backend(), name) == 0);
	CHECK(rare_write_caps() == caps);
	CHECK(protected_value == 77);
	rare_write(protected_value, 78L);
	CHECK(protected_value == 78);
	expect_segv(store_long, &protected_value);
}

#define INIT_THREADS 8
static pthread_barrier_t init_barrier;

static void *init_thread(void *arg)
{
	pthread_barrier_wait(&init_barrier);
	*(int *)arg = rare_write_init();
	return NULL;
}

TEST(section_init_is_thread_safe, EXPECT_PASS)
{
	for (int round = 0; round < 3; round++) {
		pthread_t t[INIT_THREADS];
		int res[INIT_THREADS];

		pthread_barrier_init(&init_barrier, NULL, INIT_THREADS);
		for (int i = 0; i < INIT_THREADS; i++)
			CHECK(pthread_create(&t[i], NULL, init_thread,
					     &res[i]) == 0);
		for (int i = 0; i < INIT_THREADS; i++) {
			pthread_join(t[i], NULL);
			CHECK(res[i] == 0);
		}
		pthread_barrier_destroy(&init_barrier);
	}
	CHECK(strcmp(rare_write_backend(), "none") != 0);
	CHECK(rare_write(protected_value, 5L) == 5);
	expect_segv(store_long, &protected_value);
	data_after = 1; /* neighbours untouched by the racing inits */
	CHECK(data_after == 1);
}

static double protected_double __wr_rare;
static short protected_shorts[4] __wr_rare;
static const char *protected_str __wr_rare;

/* rare_write() converts as an initialisation would, evaluates its lvalue
 * once and yields the stored value. */
TEST(section_rare_write_converts_like_assignment, EXPECT_PASS)
{
	int i = 1;

	init();
	CHECK(rare_write(protected_double, 3) == 3.0);
	CHECK(protected_double == 3.0);
	rare_write(protected_shorts[i++], 7);
	CHECK(i == 2);
	CHECK(protected_shorts[1] == 7 && protected_shorts[0] == 0 &&
	      protected_shorts[2] == 0);
	CHECK(rare_write(protected_str, "literal") == protected_str);
	CHECK(strcmp(protected_str, "literal") == 0);
	CHECK(sizeof(rare_write(protected_shorts[0], 1)) == sizeof(short));
}
