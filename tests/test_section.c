// SPDX-License-Identifier: MIT
/* The static __wr_rare section: ro-after-init, page isolation, DSOs. */
#include "harness.h"

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
