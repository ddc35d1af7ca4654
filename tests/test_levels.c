// SPDX-License-Identifier: MIT
/*
 * Levels of rareness: pools on a backend of their own next to the
 * process-wide one (rare_pool_create_with). Runs on every default backend;
 * the other level is "process", or "pwrite" when the default is process.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <sys/wait.h>

#include "harness.h"
#include <rarewrite/list.h>

static long level_section __wr_rare = 1;
static struct rare_list_head level_head __wr_rare =
	RARE_LIST_HEAD_INIT(level_head);

static const char *other_level(void)
{
	return strcmp(rare_write_backend(), "process") ? "process" : "pwrite";
}

static struct rare_pool *other_pool(size_t cap)
{
	struct rare_pool *p = rare_pool_create_with(
		cap, &(struct rare_pool_opts){.backend = other_level()});

	if (!p)
		fprintf(stderr, "rare_pool_create_with(%s): %s\n",
			other_level(), strerror(errno));
	CHECK(p);
	return p;
}

static void store_long(void *p)
{
	*(volatile long *)p = 99;
}

/* A plain store to @p from a child must die by SIGSEGV. */
static void check_store_faults(long *p)
{
	int status = run_in_child(store_long, p);

	if (child_killed_by(status) != SIGSEGV)
		fprintf(stderr, "store to %p: status %#x\n", (void *)p, status);
	CHECK(child_killed_by(status) == SIGSEGV);
}

TEST(levels_two_backends_in_one_process, EXPECT_PASS)
{
	struct rare_pool *hot, *cold;
	long *h, *c;

	init();
	hot = rare_pool_create(4096);
	cold = other_pool(4096);
	CHECK(hot);
	h = rare_alloc(hot, sizeof(long));
	c = rare_alloc(cold, sizeof(long));
	CHECK(h && c);
	rare_write(*h, 10L);
	rare_write(*c, 20L);
	rare_write(level_section, 30L);
	CHECK(*h == 10 && *c == 20 && level_section == 30);
	/* Each level is protected by its own mechanism. */
	check_store_faults(h);
	check_store_faults(c);
	check_store_faults(&level_section);
	CHECK(*h == 10 && *c == 20 && level_section == 30);
	rare_write_memset(c, 0, sizeof(*c));
	CHECK(*c == 0);
	rare_free(cold, c);
	rare_free(hot, h);
	rare_pool_destroy(cold);
	rare_pool_destroy(hot);
}

TEST(levels_bad_backend_names, EXPECT_PASS)
{
	struct rare_pool *p;

	init();
	errno = 0;
	CHECK(!rare_pool_create_with(
		4096, &(struct rare_pool_opts){.backend = "bogus"}));
	CHECK(errno == EINVAL);
	errno = 0;
	CHECK(!rare_pool_create_with(
		4096, &(struct rare_pool_opts){.backend = "PWRITE"}));
	CHECK(errno == EINVAL);
	errno = 0;
	CHECK(!rare_pool_create_with(
		0, &(struct rare_pool_opts){.backend = "pwrite"}));
	CHECK(errno == EINVAL);
	/* pkey: there, or ENOTSUP, never a silent substitute. */
	errno = 0;
	p = rare_pool_create_with(4096,
				  &(struct rare_pool_opts){.backend = "pkey"});
	CHECK(p || errno == ENOTSUP);
	rare_pool_destroy(p);
	/* NULL opts and a NULL name mean the process-wide backend. */
	p = rare_pool_create_with(4096, NULL);
	CHECK(p);
	rare_pool_destroy(p);
	p = rare_pool_create_with(4096, &(struct rare_pool_opts){0});
	CHECK(p);
	rare_pool_destroy(p);
}

TEST(levels_every_backend_as_a_pool, EXPECT_PASS)
{
	static const char *const names[] = {"pwrite",  "shadow", "mprotect",
					    "process", "pkey",	 "auto"};

	init();
	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		struct rare_pool *p = rare_pool_create_with(
			8192, &(struct rare_pool_opts){.backend = names[i]});
		long *o;

		if (!p) {
			CHECK(errno == ENOTSUP);
			continue;
		}
		o = rare_alloc(p, 100);
		CHECK(o);
		rare_write(o[3], (long)i + 100);
		CHECK(o[3] == (long)i + 100);
		check_store_faults(&o[3]);
		rare_pool_destroy(p);
	}
}

struct node {
	struct rare_list_head link;
	long v;
};

TEST(levels_list_spans_two_backends, EXPECT_PASS)
{
	struct rare_pool *cold;
	struct rare_list_head *pos;
	struct node *a, *b;
	long sum = 0;
	int n = 0;

	init();
	cold = other_pool(4096);
	a = rare_alloc(cold, sizeof(*a));
	b = rare_alloc(cold, sizeof(*b));
	CHECK(a && b);
	rare_write(a->v, 1L);
	rare_write(b->v, 2L);
	/* One list op writes the section head and the pool nodes. */
	rare_list_add(&a->link, &level_head);
	rare_list_add_tail(&b->link, &level_head);
	rare_list_for_each(pos, &level_head) {
		sum += ((struct node *)pos)->v;
		n++;
	}
	CHECK(n == 2 && sum == 3);
	rare_list_del(&a->link);
	n = 0;
	rare_list_for_each(pos, &level_head)
		n++;
	CHECK(n == 1 && level_head.next == &b->link);
}

TEST(levels_map_and_window_on_mixed_levels, EXPECT_PASS)
{
	struct rare_pool *cold;
	struct rare_write_mapping m;
	long *c;

	init();
	cold = other_pool(4096);
	c = rare_alloc(cold, 64);
	CHECK(c);
	m = rare_write_map(c, 64);
	((long *)m.addr)[2] = 77;
	rare_write_unmap(m);
	CHECK(c[2] == 77);
	if (rare_write_caps() & RARE_WRITE_CAP_BEGIN_END) {
		/* The window opens the default level only... */
		rare_write_begin();
		*(volatile long *)&level_section = 5;
		/* ...writes to the other level still go through its backend. */
		rare_write(c[2], 78L);
		rare_write_end();
		CHECK(level_section == 5 && c[2] == 78);
	}
}

static void begin_then_store(void *p)
{
	rare_write_begin();
	*(volatile long *)p = 1;
	rare_write_end();
}

TEST(levels_window_does_not_open_other_level, EXPECT_PASS)
{
	struct rare_pool *cold;
	long *c;
	int status;

	init();
	if (!(rare_write_caps() & RARE_WRITE_CAP_BEGIN_END))
		SKIP("default backend has no begin/end");
	cold = other_pool(4096);
	c = rare_alloc(cold, 64);
	CHECK(c);
	status = run_in_child(begin_then_store, c);
	CHECK(child_killed_by(status) == SIGSEGV);
	CHECK(c[0] == 0);
}

TEST(levels_fork_isolates_both_levels, EXPECT_PASS)
{
	struct rare_pool *cold;
	long *c;
	pid_t pid;
	int status;

	init();
	cold = other_pool(4096);
	c = rare_alloc(cold, 64);
	CHECK(c);
	rare_write(*c, 1L);
	rare_write(level_section, 1L);
	fflush(NULL);
	pid = fork();
	CHECK(pid >= 0);
	if (!pid) {
		rare_write(*c, 2L);
		rare_write(level_section, 2L);
		_exit(*c == 2 && level_section == 2 ? 0 : 1);
	}
	CHECK(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	CHECK(*c == 1 && level_section == 1);
	rare_write(*c, 3L);
	CHECK(*c == 3);
}
