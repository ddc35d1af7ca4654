// SPDX-License-Identifier: MIT
/* The __wr_rare section of a shared library (tests/dso_lib.c, linked in). */
#include <stdint.h>

#include "harness.h"
#include "testutil.h"

/* tests/dso_lib.c */
long *dso_protected_addr(void);
void dso_rare_set(long v);
extern long dso_plain;

TEST(dso_section_plain_before_init, EXPECT_PASS)
{
	long *p = dso_protected_addr();

	CHECK(*p == 7);
	*p = 70; /* ordinary data until init */
	dso_rare_set(71);
	CHECK(*p == 71);
	init();
	CHECK(*p == 71);
}

TEST(dso_section_protected_after_init, EXPECT_SEGV)
{
	init();
	CHECK(*dso_protected_addr() == 7);
	*(volatile long *)dso_protected_addr() = 1;
}

TEST(dso_rare_set_works, EXPECT_PASS)
{
	init();
	dso_rare_set(42);
	CHECK(*dso_protected_addr() == 42);
	/* and from the program, through the DSO's address */
	rare_write(*dso_protected_addr(), 43L);
	CHECK(*dso_protected_addr() == 43);
	expect_segv(store_long, dso_protected_addr());
	CHECK(*dso_protected_addr() == 43);
}

TEST(dso_plain_neighbour_writable, EXPECT_PASS)
{
	init();
	CHECK(dso_plain == 8);
	dso_plain = 80;
	CHECK(dso_plain == 80);
	/* page isolation inside the DSO: the neighbour is on another page */
	CHECK(((uintptr_t)&dso_plain ^ (uintptr_t)dso_protected_addr()) >=
	      page_size());
}

TEST(dso_section_distinct_from_program_section, EXPECT_PASS)
{
	uintptr_t p = (uintptr_t)dso_protected_addr();

	CHECK(p < (uintptr_t)__start_rarewrite_data ||
	      p >= (uintptr_t)__stop_rarewrite_data);
	init();
	/* both sections sealed, both writable through the library */
	dso_rare_set(5);
	CHECK(*dso_protected_addr() == 5);
}
