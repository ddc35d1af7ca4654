// SPDX-License-Identifier: MIT
/*
 * Misuse is never silent: a write outside protected memory, partly inside
 * it, crossing its end, or from a NULL source aborts with one line on stderr
 * naming the call and the address, and writes nothing.
 */
#include <stdint.h>

#include "harness.h"
#include "testutil.h"

static char sect[4096] __wr_rare __attribute__((aligned(4096)));
static long plain_global;

struct wr {
	void *dst;
	const void *src;
	size_t len;
	int memset_;
};

static void do_write(void *arg)
{
	struct wr *w = arg;

	if (w->memset_)
		rare_write_memset(w->dst, 0x41, w->len);
	else
		rare_write_memcpy(w->dst, w->src, w->len);
}

static const char buf[64 * 1024] = {1};

/* Both calls, @dst/@len: abort naming the call and @dst. */
static void check_rejected(void *dst, size_t len)
{
	struct wr w = {dst, buf, len, 0};

	expect_abort(do_write, &w, "rare_write_memcpy", dst);
	w.memset_ = 1;
	expect_abort(do_write, &w, "rare_write_memset", dst);
}

static void *at(uintptr_t a)
{
	return (void *)a;
}

static void check_all_outside(void)
{
	long local;
	uintptr_t start = (uintptr_t)__start_rarewrite_data;
	uintptr_t stop = (uintptr_t)__stop_rarewrite_data;
	void *heap = malloc(64);

	check_rejected(&plain_global, sizeof(long));
	check_rejected(&local, sizeof(long));
	check_rejected(heap, 64);
	check_rejected((void *)buf, 1); /* read-only, but not ours */
	check_rejected(NULL, 8);
	check_rejected(at(8), 8);
	check_rejected(at(UINTPTR_MAX - 3), 8);
	/* partly inside: starting just before the section */
	check_rejected(at(start - 1), 2);
	check_rejected(at(start - 8), 4096);
	/* partly inside: crossing the end */
	check_rejected(at(stop - 1), 2);
	check_rejected(at(stop - 4096), 4097);
	check_rejected(at(stop - 8), 16);
	check_rejected(at(stop), 1);
	/* lengths that wrap around the address space */
	check_rejected(sect, SIZE_MAX);
	check_rejected(sect + 1, SIZE_MAX - 100);
	/* ... and nothing was written */
	for (size_t i = 0; i < sizeof(sect); i++)
		CHECK(sect[i] == 0);
	CHECK(plain_global == 0);
	free(heap);
}

TEST(misuse_outside_after_init_aborts, EXPECT_PASS)
{
	init();
	check_all_outside();
}

TEST(misuse_outside_before_init_aborts, EXPECT_PASS)
{
	check_all_outside();
}

TEST(misuse_pool_crossing_end_aborts, EXPECT_PASS)
{
	struct rare_pool *pool;
	char *obj;
	size_t pg = page_size();

	init();
	pool = rare_pool_create(pg);
	CHECK(pool);
	obj = rare_alloc(pool, pg);
	CHECK(obj);
	check_rejected(obj + pg - 4, 8);
	check_rejected(obj + pg, 1);
	check_rejected(obj - 1, 2); /* the bookkeeping page */
	check_rejected(obj, SIZE_MAX);
	rare_write_memset(obj, 1, pg); /* the whole object is fine */
	CHECK(obj[pg - 1] == 1);
}

TEST(misuse_destroyed_pool_aborts, EXPECT_PASS)
{
	struct rare_pool *pool;
	char *obj;

	init();
	pool = rare_pool_create(4096);
	CHECK(pool);
	obj = rare_alloc(pool, 64);
	CHECK(obj);
	rare_pool_destroy(pool);
	check_rejected(obj, 8);
}

static void do_null_src(void *dst)
{
	rare_write_memcpy(dst, NULL, 8);
}

TEST(misuse_null_source_aborts, EXPECT_PASS)
{
	expect_abort(do_null_src, sect, "rare_write_memcpy", sect);
	init();
	expect_abort(do_null_src, sect, "rare_write_memcpy", sect);
	expect_abort(do_null_src, &plain_global, "rare_write_memcpy",
		     &plain_global);
}

static void do_rare_write_local(void *unused)
{
	long local = 0;

	(void)unused;
	rare_write(local, 5L);
}

/* The macro is subject to the same check. */
TEST(misuse_rare_write_on_plain_variable_aborts, EXPECT_PASS)
{
	init();
	expect_abort_addr(do_rare_write_local, NULL, "rare_write_memcpy", NULL,
			  false);
}

/* The exact limits are fine. */
TEST(misuse_exact_limits_accepted, EXPECT_PASS)
{
	uintptr_t stop = (uintptr_t)__stop_rarewrite_data;

	init();
	rare_write_memset(at(stop - 1), 7, 1);
	CHECK(*(char *)at(stop - 1) == 7);
	rare_write_memset(sect, 9, sizeof(sect));
	CHECK(sect[0] == 9 && sect[sizeof(sect) - 1] == 9);
}
