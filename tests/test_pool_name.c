// SPDX-License-Identifier: MIT
/*
 * rare_pool_set_name(): a pool's name in the fault report, instead of an
 * anonymous "pool 0x7f...+0x4050". The name is a bounded copy kept in the
 * pool's protected bookkeeping: the caller's buffer, rewritten or unmapped
 * later, never reaches the report, and a plain store to the copy faults.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sys/mman.h>

#include "harness.h"
#include "testutil.h"

static long *named_obj;
static long plain_word;

static void store_obj(void *arg)
{
	(void)arg;
	named_obj[1] = 1;
}

/* The report of a plain store to named_obj[1], into @msg. */
static void report_of_store(char *msg, size_t cap)
{
	int status = run_captured(store_obj, NULL, msg, cap);

	if (child_killed_by(status) != SIGSEGV)
		fprintf(stderr, "status %#x: %s\n", status, msg);
	CHECK(child_killed_by(status) == SIGSEGV);
}

TEST(pool_name_in_fault_report, EXPECT_PASS)
{
	char buf[RARE_POOL_NAME_MAX] = "commands", msg[1024], want[128];
	struct rare_pool *pool;

	init();
	pool = rare_pool_create(1 << 16);
	CHECK(pool);
	named_obj = rare_alloc(pool, 64);
	CHECK(named_obj);
	CHECK(rare_pool_set_name(pool, buf) == 0);
	/* The caller's buffer is not what the report reads. */
	strcpy(buf, "forged");
	report_of_store(msg, sizeof(msg));
	snprintf(want, sizeof(want), "(pool \"commands\" %p+0x", (void *)pool);
	if (!strstr(msg, want))
		fprintf(stderr, "report: %s(want %s)\n", msg, want);
	CHECK(strstr(msg, want));
	CHECK(!strstr(msg, "forged"));
	CHECK(strchr(msg, '\n') == msg + strlen(msg) - 1);

	/* Renamed; then no name: the anonymous form again. */
	CHECK(rare_pool_set_name(pool, "acl users") == 0);
	report_of_store(msg, sizeof(msg));
	CHECK(strstr(msg, "(pool \"acl users\" 0x"));
	CHECK(rare_pool_set_name(pool, NULL) == 0);
	report_of_store(msg, sizeof(msg));
	snprintf(want, sizeof(want), "(pool %p+0x", (void *)pool);
	CHECK(strstr(msg, want));
	CHECK(!strchr(msg, '"'));
}

TEST(pool_name_bad_names_refused, EXPECT_PASS)
{
	char longest[RARE_POOL_NAME_MAX], msg[1024];
	struct rare_pool *pool;
	char *page;

	init();
	pool = rare_pool_create(1 << 16);
	CHECK(pool);
	named_obj = rare_alloc(pool, 64);
	CHECK(named_obj);
	memset(longest, 'x', sizeof(longest) - 1);
	longest[sizeof(longest) - 1] = 0;
	CHECK(rare_pool_set_name(pool, longest) == 0);
	report_of_store(msg, sizeof(msg));
	CHECK(strstr(msg, longest));
	CHECK(rare_pool_set_name(pool, "tab\there") == -EINVAL);
	CHECK(rare_pool_set_name(pool, "\x80high") == -EINVAL);
	/* RARE_POOL_NAME_MAX bytes without a NUL, right before an
	 * inaccessible page: refused, and nothing past them is read. */
	page = mmap(NULL, 2 * page_size(), PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(page != MAP_FAILED);
	CHECK(!mprotect(page + page_size(), page_size(), PROT_NONE));
	memset(page + page_size() - RARE_POOL_NAME_MAX, 'y',
	       RARE_POOL_NAME_MAX);
	CHECK(rare_pool_set_name(pool,
				 page + page_size() - RARE_POOL_NAME_MAX) ==
	      -ENAMETOOLONG);
	/* The refused names left the last good one. */
	report_of_store(msg, sizeof(msg));
	CHECK(strstr(msg, longest));
}

static struct rare_pool *victim_pool;

static void store_into_name(void *arg)
{
	(void)arg;
	/* The name lives in the pool's first page, its bookkeeping. */
	memset((char *)victim_pool + 8, 'A', 16);
}

TEST(pool_name_copy_is_protected, EXPECT_PASS)
{
	char msg[1024];
	int status;

	init();
	victim_pool = rare_pool_create(1 << 16);
	CHECK(victim_pool);
	CHECK(rare_pool_set_name(victim_pool, "users") == 0);
	status = run_captured(store_into_name, NULL, msg, sizeof(msg));
	CHECK(child_killed_by(status) == SIGSEGV);
	CHECK(strstr(msg, "bookkeeping of pool \"users\" "));
}

static void name_not_a_pool(void *unused)
{
	(void)unused;
	init();
	if (rare_pool_set_name((struct rare_pool *)&plain_word, "x"))
		fprintf(stderr, "returned\n");
}

TEST(pool_name_of_non_pool_aborts, EXPECT_PASS)
{
	expect_abort(name_not_a_pool, NULL, "rare_pool_set_name", &plain_word);
}
