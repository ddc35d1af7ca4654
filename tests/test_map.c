// SPDX-License-Identifier: MIT
/* rare_write_map / rare_write_unmap: writable views of protected memory. */
#include <stdint.h>

#include "harness.h"
#include "testutil.h"

struct config {
	long a, b;
	char name[32];
};

static struct config cfg __wr_rare = {1, 2, "initial"};
static unsigned char pages[3 * 4096] __wr_rare __attribute__((aligned(4096)));
static long plain;

TEST(map_writes_land_on_unmap, EXPECT_PASS)
{
	struct rare_write_mapping m;
	struct config *v;
	const char *b;

	init();
	b = rare_write_backend();
	m = rare_write_map(&cfg, sizeof(cfg));
	v = m.addr;
	CHECK(v);
	/* the view starts with the current contents */
	CHECK(v->a == 1 && v->b == 2 && strcmp(v->name, "initial") == 0);
	v->a = 10;
	v->b = 20;
	strcpy(v->name, "changed");
	if (!strcmp(b, "pwrite") || !strcmp(b, "process")) {
		/* a private staging copy: nothing visible before unmap */
		CHECK(m.addr != (void *)&cfg);
		CHECK(cfg.a == 1 && strcmp(cfg.name, "initial") == 0);
	} else if (!strcmp(b, "shadow")) {
		/* an alias of the same pages at another address */
		CHECK(m.addr != (void *)&cfg);
		CHECK(((uintptr_t)m.addr ^ (uintptr_t)&cfg) % page_size() ==
			      0 ||
		      true);
		CHECK((uintptr_t)m.addr % page_size() ==
		      (uintptr_t)&cfg % page_size());
		CHECK(cfg.a == 10);
	} else if (!strcmp(b, "mprotect") || !strcmp(b, "pkey")) {
		CHECK(m.addr == (void *)&cfg);
	}
	rare_write_unmap(m);
	CHECK(cfg.a == 10 && cfg.b == 20 && strcmp(cfg.name, "changed") == 0);
}

TEST(map_closed_after_unmap, EXPECT_SEGV)
{
	struct rare_write_mapping m;

	init();
	m = rare_write_map(&cfg.b, sizeof(cfg.b));
	*(long *)m.addr = 5;
	rare_write_unmap(m);
	CHECK(cfg.b == 5);
	*(volatile long *)&cfg.b = 6;
}

/* The shadow alias is gone after unmap: storing through it faults. */
TEST(map_shadow_alias_gone_after_unmap, EXPECT_SEGV)
{
	struct rare_write_mapping m;

	init();
	if (strcmp(rare_write_backend(), "shadow"))
		SKIP("shadow only");
	m = rare_write_map(&cfg.a, sizeof(cfg.a));
	rare_write_unmap(m);
	*(volatile long *)m.addr = 1;
}

TEST(map_straddling_pages_and_sequences, EXPECT_PASS)
{
	size_t pg = page_size();

	init();
	for (size_t round = 0; round < 50; round++) {
		size_t off = pg - 7 - round, len = 3 + round * 61;
		struct rare_write_mapping m = rare_write_map(pages + off, len);
		unsigned char *v = m.addr;

		for (size_t i = 0; i < len; i++)
			v[i] = (unsigned char)(round + i);
		rare_write_unmap(m);
		for (size_t i = 0; i < len; i++)
			CHECK(pages[off + i] == (unsigned char)(round + i));
	}
	/* all three pages at once */
	{
		struct rare_write_mapping m = rare_write_map(pages, 3 * pg);

		memset(m.addr, 0x3c, 3 * pg);
		rare_write_unmap(m);
		for (size_t i = 0; i < 3 * pg; i++)
			CHECK(pages[i] == 0x3c);
	}
}

/* Maps that do not overlap may be open at the same time, even on the same
 * page; unmapping in any order publishes each. */
TEST(map_adjacent_maps_coexist, EXPECT_PASS)
{
	struct rare_write_mapping m1, m2, m3;

	init();
	m1 = rare_write_map(&cfg.a, sizeof(long));
	m2 = rare_write_map(&cfg.b, sizeof(long));
	m3 = rare_write_map(pages + 4096, 100);
	*(long *)m1.addr = 100;
	*(long *)m2.addr = 200;
	memset(m3.addr, 9, 100);
	rare_write_unmap(m2);
	rare_write_unmap(m3);
	rare_write_unmap(m1);
	CHECK(cfg.a == 100 && cfg.b == 200);
	CHECK(pages[4096] == 9 && pages[4195] == 9 && pages[4196] == 0);
	/* the same range may be mapped again after unmap */
	m1 = rare_write_map(&cfg, sizeof(cfg));
	((struct config *)m1.addr)->a = 101;
	rare_write_unmap(m1);
	CHECK(cfg.a == 101);
}

TEST(map_in_pool, EXPECT_PASS)
{
	struct rare_pool *pool;
	struct rare_write_mapping m;
	long *obj;

	init();
	pool = rare_pool_create(1 << 16);
	CHECK(pool);
	obj = rare_alloc(pool, 4 * sizeof(long));
	CHECK(obj);
	m = rare_write_map(obj, 4 * sizeof(long));
	for (int i = 0; i < 4; i++)
		((long *)m.addr)[i] = i + 1;
	rare_write_unmap(m);
	for (int i = 0; i < 4; i++)
		CHECK(obj[i] == i + 1);
	expect_segv(store_long, obj);
}

TEST(map_before_init_is_the_object, EXPECT_PASS)
{
	struct rare_write_mapping m = rare_write_map(&cfg.a, sizeof(cfg.a));

	CHECK(m.addr == (void *)&cfg.a);
	*(long *)m.addr = 33;
	rare_write_unmap(m);
	CHECK(cfg.a == 33);
	init();
	CHECK(cfg.a == 33);
}

/* Misuse. */
static void do_overlap(void *arg)
{
	struct rare_write_mapping m = rare_write_map(&cfg, sizeof(cfg));

	(void)m;
	rare_write_map(arg, 8);
}

TEST(map_overlapping_maps_abort, EXPECT_PASS)
{
	init();
	expect_abort(do_overlap, &cfg, "rare_write_map", &cfg);
	expect_abort(do_overlap, &cfg.b, "rare_write_map", &cfg.b);
	expect_abort(do_overlap, (void *)((uintptr_t)&cfg - 4),
		     "rare_write_map", (void *)((uintptr_t)&cfg - 4));
	expect_abort(do_overlap, (char *)(&cfg + 1) - 1, "rare_write_map",
		     (char *)(&cfg + 1) - 1);
}

static void do_unmap_forged(void *arg)
{
	struct rare_write_mapping m = rare_write_map(&cfg.a, sizeof(cfg.a));
	struct rare_write_mapping f = m;

	switch ((intptr_t)arg) {
	case 0: /* a token never handed out */
		f.token += 1000;
		break;
	case 1: /* a longer range than was mapped */
		f.len = sizeof(cfg);
		break;
	case 2: /* another protected address */
		f.target = &cfg.b;
		break;
	case 3: /* an unprotected address */
		f.target = &plain;
		break;
	}
	rare_write_unmap(f);
}

TEST(map_unmap_forged_aborts, EXPECT_PASS)
{
	init();
	expect_abort(do_unmap_forged, (void *)0, "rare_write_unmap", &cfg.a);
	expect_abort(do_unmap_forged, (void *)1, "rare_write_unmap", &cfg.a);
	expect_abort(do_unmap_forged, (void *)2, "rare_write_unmap", &cfg.b);
	expect_abort(do_unmap_forged, (void *)3, "rare_write_unmap", &plain);
	CHECK(cfg.a == 1 && cfg.b == 2);
}

static void do_unmap_twice(void *arg)
{
	struct rare_write_mapping m = rare_write_map(&cfg.a, sizeof(cfg.a));

	(void)arg;
	rare_write_unmap(m);
	rare_write_unmap(m);
}

static void do_unmap_zeroed(void *arg)
{
	struct rare_write_mapping m = {0};

	(void)arg;
	rare_write_unmap(m);
}

TEST(map_unmap_twice_aborts, EXPECT_PASS)
{
	init();
	expect_abort(do_unmap_twice, NULL, "rare_write_unmap", &cfg.a);
	expect_abort_addr(do_unmap_zeroed, NULL, "rare_write_unmap", NULL,
			  false);
}

static void do_map(void *arg)
{
	rare_write_map(arg, 8);
}

static void do_map_zero(void *arg)
{
	rare_write_map(arg, 0);
}

static void do_map_crossing(void *arg)
{
	(void)arg;
	rare_write_map((void *)((uintptr_t)__stop_rarewrite_data - 4), 8);
}

TEST(map_outside_protected_memory_aborts, EXPECT_PASS)
{
	long local;

	init();
	expect_abort(do_map, &plain, "rare_write_map", &plain);
	expect_abort(do_map, &local, "rare_write_map", &local);
	expect_abort(do_map_zero, &cfg, "rare_write_map", &cfg);
	expect_abort(do_map_crossing, NULL, "rare_write_map",
		     (void *)((uintptr_t)__stop_rarewrite_data - 4));
}
