// SPDX-License-Identifier: MIT
/* Protected pools: rare_pool_create, rare_alloc, rare_free, destroy. */
#include <errno.h>
#include <stdint.h>

#include "harness.h"
#include "testutil.h"

#define NR_OBJS 10000

static bool all_zero(const void *p, size_t n)
{
	const unsigned char *c = p;

	for (size_t i = 0; i < n; i++)
		if (c[i])
			return false;
	return true;
}

static int cmp_ptr(const void *a, const void *b)
{
	uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;

	return x < y ? -1 : x > y;
}

static size_t obj_size(size_t i)
{
	static const size_t sz[] = {1, 8, 16, 24, 32, 48, 64, 100, 128, 200};

	return sz[i % 10];
}

static void *objs[NR_OBJS];

/* 10,000 allocations of mixed sizes: distinct, non-overlapping, zeroed,
 * aligned, and each keeps what is written to it. */
TEST(pool_10000_allocations_distinct_zeroed, EXPECT_PASS)
{
	static uintptr_t sorted[NR_OBJS][2];
	struct rare_pool *pool;

	init();
	pool = rare_pool_create(4 << 20);
	CHECK(pool);
	for (size_t i = 0; i < NR_OBJS; i++) {
		objs[i] = rare_alloc(pool, obj_size(i));
		CHECK(objs[i]);
		CHECK((uintptr_t)objs[i] % 16 == 0);
		CHECK(all_zero(objs[i], obj_size(i)));
		sorted[i][0] = (uintptr_t)objs[i];
		sorted[i][1] = obj_size(i);
	}
	qsort(sorted, NR_OBJS, sizeof(sorted[0]), cmp_ptr);
	for (size_t i = 1; i < NR_OBJS; i++)
		CHECK(sorted[i - 1][0] + sorted[i - 1][1] <= sorted[i][0]);
	/* tag every byte of every object, then check no tag was overwritten */
	for (size_t i = 0; i < NR_OBJS; i++)
		rare_write_memset(objs[i], (int)(i % 251) + 1, obj_size(i));
	for (size_t i = 0; i < NR_OBJS; i++) {
		const unsigned char *c = objs[i];

		for (size_t j = 0; j < obj_size(i); j++)
			CHECK(c[j] == (unsigned char)(i % 251 + 1));
	}
}

TEST(pool_allocation_is_protected, EXPECT_SEGV)
{
	struct rare_pool *pool;
	long *p;

	init();
	pool = rare_pool_create(4096);
	CHECK(pool);
	p = rare_alloc(pool, sizeof(*p));
	CHECK(p);
	rare_write(*p, 5L);
	CHECK(*p == 5);
	*(volatile long *)p = 6;
}

TEST(pool_bookkeeping_is_protected, EXPECT_SEGV)
{
	struct rare_pool *pool;

	init();
	pool = rare_pool_create(4096);
	CHECK(pool);
	*(volatile long *)pool = 0;
}

TEST(pool_big_allocation_is_protected, EXPECT_SEGV)
{
	struct rare_pool *pool;
	char *p;

	init();
	pool = rare_pool_create(1 << 20);
	CHECK(pool);
	p = rare_alloc(pool, 512 * 1024);
	CHECK(p);
	((volatile char *)p)[300 * 1024] = 1;
}

TEST(pool_many_objects_all_protected, EXPECT_PASS)
{
	struct rare_pool *pool;

	init();
	pool = rare_pool_create(1 << 20);
	CHECK(pool);
	/* one object per size class and a large one: each store faults */
	for (size_t sz = 16; sz <= 16384; sz *= 2) {
		long *p = rare_alloc(pool, sz);

		CHECK(p);
		expect_segv(store_long, p);
		expect_segv(store_long, (char *)p + sz - sizeof(long));
		CHECK(all_zero(p, sz));
	}
}

TEST(pool_reusable_after_free, EXPECT_PASS)
{
	struct rare_pool *pool;
	size_t n = 0, m = 0;
	static void *p[4096];

	init();
	pool = rare_pool_create(16 * 4096);
	CHECK(pool);
	while ((p[n] = rare_alloc(pool, 64)))
		n++;
	CHECK(errno == ENOMEM);
	CHECK(n == 16 * 4096 / 64);
	for (size_t i = 0; i < n; i++)
		rare_write_memset(p[i], 0xee, 64);
	for (size_t i = 0; i < n; i++)
		rare_free(pool, p[i]);
	/* everything comes back, zeroed, in any size class */
	while ((p[m] = rare_alloc(pool, 256))) {
		CHECK(all_zero(p[m], 256));
		m++;
	}
	CHECK(m == 16 * 4096 / 256);
	for (size_t i = 0; i < m; i++)
		rare_free(pool, p[i]);
	p[0] = rare_alloc(pool, 16 * 4096);
	CHECK(p[0]);
	CHECK(all_zero(p[0], 16 * 4096));
	rare_free(pool, p[0]);
	/* and again in small pieces */
	for (size_t i = 0; i < 100; i++)
		CHECK(rare_alloc(pool, 16));
}

TEST(pool_free_zeroes, EXPECT_PASS)
{
	struct rare_pool *pool;
	unsigned char *a, *b, *big;

	init();
	pool = rare_pool_create(1 << 20);
	CHECK(pool);
	a = rare_alloc(pool, 48);
	b = rare_alloc(pool, 48);
	CHECK(a && b);
	rare_write_memset(a, 0x77, 48);
	rare_write_memset(b, 0x66, 48);
	rare_free(pool, a);
	CHECK(all_zero(a, 64)); /* still mapped, zeroed at once */
	for (int i = 0; i < 48; i++)
		CHECK(b[i] == 0x66); /* the neighbour is untouched */
	big = rare_alloc(pool, 3 * 4096 + 5);
	CHECK(big && (uintptr_t)big % page_size() == 0);
	rare_write_memset(big, 0x55, 3 * 4096 + 5);
	rare_free(pool, big);
	CHECK(all_zero(big, 4 * 4096));
}

TEST(pool_big_allocations, EXPECT_PASS)
{
	struct rare_pool *pool;
	unsigned char *p[4];

	init();
	pool = rare_pool_create(8 << 20);
	CHECK(pool);
	p[0] = rare_alloc(pool, 4 << 20);
	p[1] = rare_alloc(pool, 2049); /* just above the small classes */
	p[2] = rare_alloc(pool, 1 << 20);
	p[3] = rare_alloc(pool, 2048);
	for (int i = 0; i < 4; i++)
		CHECK(p[i]);
	for (int i = 0; i < 3; i++)
		CHECK((uintptr_t)p[i] % page_size() == 0);
	CHECK(all_zero(p[0], 4 << 20));
	rare_write_memset(p[0], 1, 4 << 20);
	rare_write_memset(p[2], 2, 1 << 20);
	rare_write_memset(p[1], 3, 2049);
	CHECK(p[0][0] == 1 && p[0][(4 << 20) - 1] == 1);
	CHECK(p[1][0] == 3 && p[1][2048] == 3);
	CHECK(p[2][0] == 2 && p[2][(1 << 20) - 1] == 2);
	/* the 4 MiB hole is reused */
	rare_free(pool, p[0]);
	CHECK(rare_alloc(pool, 4 << 20) == p[0]);
	CHECK(all_zero(p[0], 4 << 20));
	/* bigger than the pool */
	errno = 0;
	CHECK(rare_alloc(pool, 9 << 20) == NULL && errno == ENOMEM);
	errno = 0;
	CHECK(rare_alloc(pool, SIZE_MAX) == NULL && errno == ENOMEM);
}

TEST(pool_enomem_when_full, EXPECT_PASS)
{
	struct rare_pool *pool;
	size_t n = 0;

	init();
	pool = rare_pool_create(4096);
	CHECK(pool);
	while (rare_alloc(pool, 16))
		n++;
	CHECK(errno == ENOMEM);
	CHECK(n == 4096 / 16);
	errno = 0;
	CHECK(rare_alloc(pool, 4096) == NULL && errno == ENOMEM);
	errno = 0;
	CHECK(rare_alloc(pool, 2048) == NULL && errno == ENOMEM);

	pool = rare_pool_create(4096);
	CHECK(pool && rare_alloc(pool, 4096));
	errno = 0;
	CHECK(rare_alloc(pool, 1) == NULL && errno == ENOMEM);
}

TEST(pool_einval, EXPECT_PASS)
{
	struct rare_pool *pool;

	init();
	errno = 0;
	CHECK(rare_pool_create(0) == NULL && errno == EINVAL);
	pool = rare_pool_create(4096);
	CHECK(pool);
	errno = 0;
	CHECK(rare_alloc(pool, 0) == NULL && errno == EINVAL);
	errno = 0;
	CHECK(rare_pool_create(SIZE_MAX) == NULL && errno == ENOMEM);
}

/* A pool created before init is plain memory until init protects it in
 * place (rarewrite-porting(7), step 4): tests/test_port.c has the details. */
TEST(pool_usable_before_init, EXPECT_PASS)
{
	struct rare_pool *pool = rare_pool_create(4096);
	long *obj;

	CHECK(pool);
	obj = rare_alloc(pool, sizeof(*obj));
	CHECK(obj);
	*obj = 5;
	init();
	CHECK(*obj == 5);
	expect_segv(store_long, obj);
	CHECK(rare_pool_create(4096) != NULL);
}

/* Pools come and go; the region table reuses their slots, and running out
 * of slots is ENOMEM, not a crash. */
TEST(pool_many_pools_create_destroy, EXPECT_PASS)
{
	static struct rare_pool *pools[400];
	size_t n = 0;

	init();
	for (; n < 400; n++) {
		pools[n] = rare_pool_create(4096);
		if (!pools[n])
			break;
		long *p = rare_alloc(pools[n], sizeof(long));

		CHECK(p);
		rare_write(*p, (long)n);
	}
	CHECK(n >= 100);
	if (n < 400)
		CHECK(errno == ENOMEM || errno == EMFILE);
	for (size_t i = 0; i < n; i++)
		rare_pool_destroy(pools[i]);
	for (size_t i = 0; i < 1000; i++) {
		struct rare_pool *pool = rare_pool_create(8192);

		CHECK(pool);
		CHECK(rare_alloc(pool, 100));
		rare_pool_destroy(pool);
	}
	rare_pool_destroy(NULL);
	rare_free(NULL, NULL);
}

TEST(pool_destroyed_memory_is_gone, EXPECT_SEGV)
{
	struct rare_pool *pool;
	volatile long *p;

	init();
	pool = rare_pool_create(4096);
	CHECK(pool);
	p = rare_alloc(pool, sizeof(long));
	CHECK(p);
	rare_pool_destroy(pool);
	(void)*p;
}

/* Misuse: each aborts with a line naming the call and the pointer. */
struct pool_arg {
	struct rare_pool *pool;
	void *obj;
};

static void do_free(void *a)
{
	struct pool_arg *pa = a;

	rare_free(pa->pool, pa->obj);
}

static void do_alloc(void *a)
{
	struct pool_arg *pa = a;

	rare_alloc(pa->pool, 16);
}

TEST(pool_double_free_aborts, EXPECT_PASS)
{
	struct pool_arg a;

	init();
	a.pool = rare_pool_create(1 << 16);
	CHECK(a.pool);
	a.obj = rare_alloc(a.pool, 32);
	CHECK(a.obj && rare_alloc(a.pool, 32));
	rare_free(a.pool, a.obj);
	expect_abort(do_free, &a, "rare_free", a.obj);
	/* a large object too */
	a.obj = rare_alloc(a.pool, 3 * 4096);
	CHECK(a.obj);
	rare_free(a.pool, a.obj);
	expect_abort(do_free, &a, "rare_free", a.obj);
}

TEST(pool_foreign_pointer_aborts, EXPECT_PASS)
{
	static long plain;
	long on_stack = 0;
	struct pool_arg a;
	struct rare_pool *other;
	char *obj, *big;

	init();
	a.pool = rare_pool_create(1 << 16);
	other = rare_pool_create(1 << 16);
	CHECK(a.pool && other);
	obj = rare_alloc(a.pool, 64);
	big = rare_alloc(a.pool, 8192);
	CHECK(obj && big);

	a.obj = &plain;
	expect_abort(do_free, &a, "rare_free", a.obj);
	a.obj = &on_stack;
	expect_abort(do_free, &a, "rare_free", a.obj);
	a.obj = obj + 16; /* inside an object */
	expect_abort(do_free, &a, "rare_free", a.obj);
	a.obj = big + 4096; /* inside a large object */
	expect_abort(do_free, &a, "rare_free", a.obj);
	a.obj = rare_alloc(other, 64); /* another pool's object */
	CHECK(a.obj);
	expect_abort(do_free, &a, "rare_free", a.obj);
	a.obj = (char *)a.pool + 64; /* the bookkeeping */
	expect_abort(do_free, &a, "rare_free", a.obj);
	a.obj = obj + (1 << 15); /* never handed out */
	expect_abort(do_free, &a, "rare_free", a.obj);
	/* the objects are intact after all that */
	rare_free(a.pool, obj);
	rare_free(a.pool, big);
}

TEST(pool_bogus_pool_aborts, EXPECT_PASS)
{
	static long plain[8];
	struct pool_arg a = {.pool = (struct rare_pool *)plain};
	struct rare_pool *pool;

	init();
	expect_abort(do_alloc, &a, "rare_alloc", a.pool);
	pool = rare_pool_create(1 << 16);
	CHECK(pool);
	a.obj = rare_alloc(pool, 16);
	CHECK(a.obj);
	expect_abort(do_free, &a, "rare_free", a.pool);
	/* an object address passed as the pool */
	a.pool = (struct rare_pool *)a.obj;
	expect_abort(do_alloc, &a, "rare_alloc", a.pool);
	/* a destroyed pool */
	a.pool = rare_pool_create(4096);
	CHECK(a.pool);
	rare_pool_destroy(a.pool);
	expect_abort(do_alloc, &a, "rare_alloc", a.pool);
}

static void do_write_meta(void *a)
{
	struct pool_arg *pa = a;
	long zero = 0;

	rare_write_memcpy(pa->obj, &zero, sizeof(zero));
}

/* The allocator's bookkeeping is the library's: rare_write cannot reach it. */
TEST(pool_bookkeeping_not_writable_by_caller, EXPECT_PASS)
{
	struct pool_arg a;

	init();
	a.pool = rare_pool_create(4096);
	CHECK(a.pool);
	a.obj = a.pool;
	expect_abort(do_write_meta, &a, "rare_write_memcpy", a.obj);
	a.obj = (char *)a.pool + 200;
	expect_abort(do_write_meta, &a, "rare_write_memcpy", a.obj);
	CHECK(rare_alloc(a.pool, 16));
}
