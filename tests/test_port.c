// SPDX-License-Identifier: MIT
/*
 * What porting an existing program needs: windows on the default
 * backend (RAREWRITE_NEED, rare_write_init_caps), one line for every
 * environment failure, asking whether memory is protected, and a
 * read-modify-write that loses no update.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>

#include "harness.h"
#include "testutil.h"

static long port_value __wr_rare __attribute__((aligned(4096)));
static uint8_t port_u8 __wr_rare;
static uint16_t port_u16 __wr_rare;
static int32_t port_i32 __wr_rare;
static uint64_t port_u64 __wr_rare;

static bool auto_run(void)
{
	return !strcmp(test_backend(), "auto");
}

struct init_result {
	int err;
	char msg[512];
};

static void init_child(void *arg)
{
	unsigned need = (unsigned)(uintptr_t)arg;

	_exit(-rare_write_init_caps(need) & 0xff);
}

/* rare_write_init_caps(@need) in a child: its return and stderr. */
static struct init_result init_in_child(unsigned need)
{
	struct init_result r;
	int st = run_captured(init_child, (void *)(uintptr_t)need, r.msg,
			      sizeof(r.msg));

	CHECK(WIFEXITED(st));
	r.err = -WEXITSTATUS(st);
	return r;
}

static void check_one_line(const char *msg, const char *has)
{
	if (!strstr(msg, has))
		fprintf(stderr, "message '%s' lacks '%s'\n", msg, has);
	CHECK(!strncmp(msg, "rarewrite: rare_write_init", 26));
	CHECK(strstr(msg, has));
	CHECK(strchr(msg, '\n') == msg + strlen(msg) - 1);
}

/* The backend under test is named and lacks a bit of @cap, as the library's
 * list says (rare_write_backends(3)); "auto" lacks nothing. */
static bool named_lacks(unsigned cap)
{
	const char *name;
	unsigned caps;

	for (unsigned i = 0; (name = rare_write_backends(i, &caps)); i++)
		if (!strcmp(name, test_backend()))
			return (caps & cap) != cap;
	return false;
}

/* Windows wherever the program asks for them: auto picks a backend that
 * has them; a named one without them is refused in one line. */
static void need_begin_end(bool by_env)
{
	struct init_result r;

	if (by_env)
		setenv("RAREWRITE_NEED", "begin_end", 1);
	r = init_in_child(by_env ? 0 : RARE_WRITE_CAP_BEGIN_END);
	if (named_lacks(RARE_WRITE_CAP_BEGIN_END)) {
		CHECK(r.err == -ENOTSUP);
		check_one_line(r.msg, "has no begin_end");
		return;
	}
	CHECK(r.err == 0 && r.msg[0] == 0);
	CHECK(rare_write_init_caps(by_env ? 0 : RARE_WRITE_CAP_BEGIN_END) == 0);
	CHECK(backend_has(RARE_WRITE_CAP_BEGIN_END));
	if (auto_run())
		CHECK(!strcmp(rare_write_backend(), "pkey") ||
		      !strcmp(rare_write_backend(), "mprotect"));
	rare_write_begin();
	port_value = 41;
	rare_write_end();
	CHECK(port_value == 41);
	expect_segv(store_long, &port_value);
}

TEST(port_need_begin_end_env, EXPECT_PASS)
{
	need_begin_end(true);
}

TEST(port_need_begin_end_caps, EXPECT_PASS)
{
	need_begin_end(false);
}

TEST(port_need_thread_local, EXPECT_PASS)
{
	struct init_result r = init_in_child(RARE_WRITE_CAP_THREAD_LOCAL |
					     RARE_WRITE_CAP_BEGIN_END);

	if (!auto_run() ? !named_lacks(RARE_WRITE_CAP_THREAD_LOCAL |
				       RARE_WRITE_CAP_BEGIN_END)
			: r.err == 0) {
		CHECK(r.err == 0);
		init();
		CHECK(!strcmp(rare_write_backend(), "pkey"));
		return;
	}
	CHECK(r.err == -ENOTSUP);
	check_one_line(r.msg, auto_run() ? "no backend on this machine has "
					   "begin_end,thread_local"
					 : "has no ");
}

/* An earlier init that chose a backend without the capability. */
TEST(port_need_after_init_is_refused, EXPECT_PASS)
{
	init();
	CHECK(rare_write_init_caps(0) == 0);
	if (backend_has(RARE_WRITE_CAP_BEGIN_END))
		CHECK(rare_write_init_caps(RARE_WRITE_CAP_BEGIN_END) == 0);
	else
		CHECK(rare_write_init_caps(RARE_WRITE_CAP_BEGIN_END) ==
		      -ENOTSUP);
}

TEST(port_need_unknown_is_einval, EXPECT_PASS)
{
	struct init_result r;

	setenv("RAREWRITE_NEED", "begin_end,teleport", 1);
	r = init_in_child(0);
	CHECK(r.err == -EINVAL);
	check_one_line(r.msg, "unknown capability \"teleport\" in "
			      "RAREWRITE_NEED");
	unsetenv("RAREWRITE_NEED");
	r = init_in_child(0x80);
	CHECK(r.err == -EINVAL);
	check_one_line(r.msg, "unknown capability bits");
}

/* RAREWRITE_BACKEND errors are said, not only returned. */
TEST(port_unknown_backend_says_so, EXPECT_PASS)
{
	struct init_result r;

	setenv("RAREWRITE_BACKEND", "pkeyy", 1);
	r = init_in_child(0);
	CHECK(r.err == -EINVAL);
	check_one_line(r.msg, "unknown backend \"pkeyy\" in "
			      "RAREWRITE_BACKEND");
	CHECK(!strcmp(rare_write_backend(), "none"));
}

TEST(port_unavailable_backend_says_so, EXPECT_PASS)
{
	static const char *const names[] = {"pkey", "pwrite", "shadow",
					    "mprotect", "process"};
	int tried = 0;

	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		struct init_result r;

		setenv("RAREWRITE_BACKEND", names[i], 1);
		r = init_in_child(0);
		if (!r.err)
			continue;
		tried++;
		CHECK(r.err == -ENOTSUP);
		check_one_line(r.msg, "is not available on this machine");
		CHECK(strstr(r.msg, names[i]));
	}
	if (!tried)
		SKIP("every backend is available here");
}

/* --- rare_write_is_protected --------------------------------------------- */

TEST(port_is_protected, EXPECT_PASS)
{
	long local = 0;
	struct rare_pool *pool;
	char *obj;

	/* Before init: plain memory, so 0. */
	CHECK(rare_write_is_protected(&port_value, sizeof(port_value)) == 0);
	init();
	CHECK(rare_write_is_protected(&port_value, sizeof(port_value)) == 1);
	CHECK(rare_write_is_protected(&port_value, 0) == 1);
	CHECK(rare_write_is_protected(&local, sizeof(local)) == 0);
	CHECK(rare_write_is_protected(NULL, 1) == 0);
	CHECK(rare_write_is_protected(&port_value, 1 << 30) == 0);
	pool = rare_pool_create(1 << 16);
	CHECK(pool);
	obj = rare_alloc(pool, 100);
	CHECK(obj);
	CHECK(rare_write_is_protected(obj, 100) == 1);
	CHECK(rare_write_is_protected(pool, 8) == 0); /* bookkeeping */
	/* The answer is the one rare_write() acts on. */
	if (rare_write_is_protected(obj, 8))
		rare_write(*(long *)obj, 7L);
	CHECK(*(long *)obj == 7);
	expect_segv(store_long, obj);
}

/* --- rare_write_add ----------------------------------------------------------
 */

TEST(port_add_sizes_and_wrap, EXPECT_PASS)
{
	init();
	rare_write(port_u8, (uint8_t)250);
	CHECK(rare_write_add(port_u8, 10) == 4);
	CHECK(port_u8 == 4);
	CHECK(rare_write_add(port_u16, 65535) == 65535);
	CHECK(rare_write_add(port_u16, 2) == 1);
	CHECK(rare_write_add(port_i32, -5) == -5);
	CHECK(port_i32 == -5);
	CHECK(rare_write_add(port_u64, 1ULL << 40) == 1ULL << 40);
	CHECK(rare_write_add(port_value, 3) == 3);
	expect_segv(store_long, &port_value);
}

#define ADDERS 4
#define ADDS 2000

static void *adder(void *unused)
{
	(void)unused;
	for (int i = 0; i < ADDS; i++)
		rare_write_add(port_value, 1);
	return NULL;
}

/* No lost update: every add from every thread lands. */
TEST(port_add_concurrent_no_lost_update, EXPECT_PASS)
{
	pthread_t t[ADDERS];

	init();
	for (int i = 0; i < ADDERS; i++)
		CHECK(pthread_create(&t[i], NULL, adder, NULL) == 0);
	for (int i = 0; i < ADDERS; i++)
		pthread_join(t[i], NULL);
	CHECK(port_value == ADDERS * ADDS);
}

static long plain_long;

static void add_outside(void *unused)
{
	(void)unused;
	rare_write_add(plain_long, 1);
}

TEST(port_add_outside_aborts, EXPECT_PASS)
{
	init();
	expect_abort(add_outside, NULL, "rare_write_add", &plain_long);
}

/* --- pools before init, rare_realloc ------------------------------------ */

struct ext {
	long id;
	void (*fn)(void);
};

static struct ext *__wr_rare port_exts; /* a protected pointer ... */
static size_t port_nr_exts __wr_rare;	/* ... to a growing array */

static void ext_fn(void)
{
}

static void add_ext(struct rare_pool *pool, long id)
{
	struct ext *a =
		rare_realloc(pool, port_exts, (port_nr_exts + 1) * sizeof(*a));

	CHECK(a);
	rare_write(a[port_nr_exts], ((struct ext){id, ext_fn}));
	rare_write(port_exts, a);
	rare_write(port_nr_exts, port_nr_exts + 1);
}

static void check_exts(size_t n)
{
	CHECK(port_nr_exts == n);
	for (size_t i = 0; i < n; i++)
		CHECK(port_exts[i].id == (long)i && port_exts[i].fn == ext_fn);
}

/* Built with plain stores before init, protected in place by init, on
 * the process-wide backend and on a level of its own. */
static void pool_before_init(const char *level)
{
	struct rare_pool *pool = rare_pool_create_with(
		1 << 20, &(struct rare_pool_opts){.backend = level});
	struct ext *a;
	long *counter;

	if (!pool && errno == ENOTSUP)
		SKIP("backend not available as a level");
	CHECK(pool);
	counter = rare_alloc(pool, sizeof(*counter));
	a = rare_alloc(pool, 4 * sizeof(*a));
	CHECK(counter && a);
	*counter = 11; /* plain stores: not protected yet */
	for (long i = 0; i < 4; i++)
		a[i] = (struct ext){i, ext_fn};
	port_exts = a;
	port_nr_exts = 4;
	/* Not protected yet: never 1 for writable memory. */
	CHECK(!rare_write_is_protected(a, 4 * sizeof(*a)));
	init();
	CHECK(*counter == 11);
	check_exts(4);
	expect_segv(store_long, counter);
	expect_segv(store_long, &a[1].fn);
	CHECK(rare_write(*counter, 12L) == 12);
	/* Growing the registered extensions keeps them protected. */
	for (long i = 4; i < 200; i++)
		add_ext(pool, i);
	check_exts(200);
	CHECK(rare_write_is_protected(port_exts, 200 * sizeof(*a)));
	expect_segv(store_long, &port_exts[150].fn);
	rare_free(pool, counter);
	rare_pool_destroy(pool);
}

TEST(port_pool_before_init_default_backend, EXPECT_PASS)
{
	pool_before_init(NULL);
}

TEST(port_pool_before_init_own_level, EXPECT_PASS)
{
	pool_before_init("process");
}

TEST(port_pool_before_init_destroyed_before_init, EXPECT_PASS)
{
	struct rare_pool *pool = rare_pool_create(1 << 16);

	CHECK(pool && rare_alloc(pool, 64));
	rare_pool_destroy(pool);
	init();
	pool = rare_pool_create(1 << 16);
	CHECK(pool && rare_alloc(pool, 64));
}

TEST(port_realloc_semantics, EXPECT_PASS)
{
	struct rare_pool *pool;
	unsigned char *p, *q;

	init();
	pool = rare_pool_create(1 << 20);
	CHECK(pool);
	p = rare_realloc(pool, NULL, 24); /* NULL: rare_alloc */
	CHECK(p);
	rare_write_memset(p, 0xab, 24);
	q = rare_realloc(pool, p, 20); /* shrink in place, tail zeroed */
	CHECK(q == p && q[19] == 0xab && q[20] == 0 && q[23] == 0);
	q = rare_realloc(pool, p, 5000); /* grow: moves to a page run */
	CHECK(q && q != p);
	CHECK(q[0] == 0xab && q[19] == 0xab && q[20] == 0 && q[4999] == 0);
	CHECK(rare_write_is_protected(q, 5000));
	expect_segv(store_long, q);
	errno = 0;
	CHECK(rare_realloc(pool, q, 0) == NULL && errno == EINVAL);
	errno = 0;
	CHECK(rare_realloc(pool, q, 1 << 21) == NULL && errno == ENOMEM);
	CHECK(q[0] == 0xab); /* untouched on failure */
}

static struct rare_pool *bad_pool;
static void *bad_obj;

static void realloc_bad(void *unused)
{
	(void)unused;
	rare_realloc(bad_pool, bad_obj, 64);
}

TEST(port_realloc_foreign_pointer_aborts, EXPECT_PASS)
{
	init();
	bad_pool = rare_pool_create(1 << 16);
	CHECK(bad_pool);
	bad_obj = (char *)rare_alloc(bad_pool, 64) + 16;
	expect_abort(realloc_bad, NULL, "rare_realloc", bad_obj);
}
