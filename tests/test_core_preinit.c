// SPDX-License-Identifier: MIT
/*
 * test_core_preinit.c - what happens before rare_write_init(): a library
 * that seals itself first (rare_write_seal_self()), maps opened before init,
 * init that fails for want of descriptors, and the fault report's own
 * state.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "attack.h"
#include "harness.h"
#include "testutil.h"
#include "../src/internal.h"

/* tests/dso_lib.c. The static runner of `make check-vm` has no shared
 * library: there the program's own section plays the library's, and the
 * checks that the program's section stays plain until init are left out. */
long *dso_protected_addr(void) __attribute__((weak));
void dso_rare_set(long v) __attribute__((weak));
int dso_seal_self(void) __attribute__((weak));

static long core_var __wr_rare = 1;
static long core_lib_var __wr_rare = 7;

static bool have_dso(void)
{
	return dso_seal_self != NULL;
}

/* The "library": seal it, its variable, a rare_write() from inside it. */
static int lib_seal(void)
{
	return have_dso() ? dso_seal_self() : rare_write_seal_self();
}

static long *lib_var(void)
{
	return have_dso() ? dso_protected_addr() : &core_lib_var;
}

static void lib_set(long v)
{
	if (have_dso())
		dso_rare_set(v);
	else
		rare_write(core_lib_var, v);
}

/* The table's entry for the region holding @p (the library's file-local
 * table, found in its symbol table as an attacker would). */
static struct rw_region *table_entry(const void *p)
{
	char *table = attack_lib_sym("rw_table");
	uintptr_t a = (uintptr_t)p;

	CHECK(table);
	for (size_t off = 0; off < 64 * 1024; off += sizeof(void *)) {
		struct rw_region *r = (struct rw_region *)(table + off);

		if ((r->kind == RW_REGION_SECTION ||
		     r->kind == RW_REGION_POOL) &&
		    r->start && r->start <= a && a - r->start < r->len &&
		    r->len < (1UL << 32))
			return r;
	}
	CHECK(!"region not found in the table");
	return NULL;
}

/* --- the first seal creates the vault ------------------ */

static void store_region_start(void *arg)
{
	struct rw_region *r = arg;

	attack_store64(&r->start, r->start + 4096);
}

static void store_region_backend(void *arg)
{
	static const struct rw_backend fake;
	struct rw_region *r = arg;

	attack_store64(&r->backend, (uint64_t)(uintptr_t)&fake);
}

TEST(core_seal_self_seals_the_table, EXPECT_PASS)
{
	struct rw_region *r;

	CHECK(lib_seal() == 0);
	r = table_entry(lib_var());
	CHECK(r->protected_);
	/* One store must neither redirect the library's next write nor
	 * swap its backend for a fake ops table. */
	expect_segv(store_region_start, r);
	expect_segv(store_region_backend, r);
	lib_set(41);
	CHECK(*lib_var() == 41);
	init();
	lib_set(42);
	CHECK(*lib_var() == 42);
}

/* --- maps opened before init --------------------------- */

static void map_then_init(void *unused)
{
	struct rare_write_mapping m;

	(void)unused;
	m = rare_write_map(&core_var, sizeof(core_var));
	*(long *)m.addr = 2;
	rare_write_init(); /* must refuse */
	rare_write_unmap(m);
}

TEST(core_init_refuses_open_map, EXPECT_PASS)
{
	struct rare_write_mapping m;

	expect_abort(map_then_init, NULL, "rare_write_init", NULL);
	/* Unmapped before init: init goes ahead. */
	m = rare_write_map(&core_var, sizeof(core_var));
	*(long *)m.addr = 3;
	rare_write_unmap(m);
	init();
	CHECK(core_var == 3);
	m = rare_write_map(&core_var, sizeof(core_var));
	*(long *)m.addr = 4;
	rare_write_unmap(m);
	CHECK(core_var == 4);
}

/* A map of a library's sealed section before init is a real view. */
TEST(core_map_of_sealed_section_before_init, EXPECT_PASS)
{
	struct rare_write_mapping m;

	CHECK(lib_seal() == 0);
	m = rare_write_map(lib_var(), sizeof(long));
	*(long *)m.addr = 51;
	rare_write_unmap(m);
	CHECK(*lib_var() == 51);
	expect_segv(store_long, lib_var());
}

/* Opened on plain memory, unmapped after a seal protected it: unmap must
 * not hand the backend a view it never made. */
TEST(core_map_across_seal, EXPECT_PASS)
{
	struct rare_pool *pool = rare_pool_create(4096);
	long *obj;
	struct rare_write_mapping m;

	CHECK(pool);
	obj = rare_alloc(pool, sizeof(*obj));
	CHECK(obj);
	m = rare_write_map(obj, sizeof(*obj));
	*(long *)m.addr = 5;
	CHECK(lib_seal() == 0); /* protects the pool too */
	rare_write_unmap(m);
	CHECK(*obj == 5);
	expect_segv(store_long, obj);
	rare_write(*obj, 6L);
	CHECK(*obj == 6);
}

/* --- what the first seal decides ----------------- */

/* RAREWRITE_NEED is read at seal time too: the section is on the backend
 * that init then uses, and a window opens it. */
TEST(core_seal_reads_need, EXPECT_PASS)
{
	long *p = lib_var();

	unsetenv("RAREWRITE_BACKEND");
	setenv("RAREWRITE_NEED", "begin_end", 1);
	if (lib_seal())
		SKIP("no backend with begin_end here");
	init();
	CHECK(rare_write_caps() & RARE_WRITE_CAP_BEGIN_END);
	rare_write_begin();
	*(volatile long *)p = 61;
	rare_write_end();
	CHECK(*p == 61);
	expect_segv(store_long, p);
}

/* rare_write_init_caps() asks for more than the seal chose: init says so
 * and fails, or (where auto has it anyway) the window works. */
TEST(core_init_caps_after_seal, EXPECT_PASS)
{
	long *p = lib_var();
	char msg[1024];
	int err;

	unsetenv("RAREWRITE_BACKEND");
	unsetenv("RAREWRITE_NEED");
	CHECK(lib_seal() == 0);
	err = rare_write_init_caps(RARE_WRITE_CAP_BEGIN_END);
	if (!err) {
		rare_write_begin();
		*(volatile long *)p = 62;
		rare_write_end();
		CHECK(*p == 62);
		return;
	}
	CHECK(err == -ENOTSUP);
	CHECK(!strcmp(rare_write_backend(), "pwrite") ||
	      !strcmp(rare_write_backend(), "pkey"));
	lib_set(63);
	CHECK(*p == 63);
	expect_segv(store_long, p);
	(void)msg;
}

/* The backend the program names is the one the seal takes and init
 * keeps; rare_write_backend() says it from the seal on. */
TEST(core_seal_backend_is_inits, EXPECT_PASS)
{
	const char *want = test_backend();

	CHECK(!strcmp(rare_write_backend(), "none"));
	CHECK(lib_seal() == 0);
	if (strcmp(want, "auto"))
		CHECK(!strcmp(rare_write_backend(), want));
	else
		CHECK(strcmp(rare_write_backend(), "none"));
	want = strdup(rare_write_backend());
	CHECK(rare_write_caps() == 0); /* no windows before init */
	init();
	CHECK(!strcmp(rare_write_backend(), want));
}

/* Pools are protected from the first seal on, those created before it and
 * those created after; is_protected never says 1 for writable memory. */
TEST(core_pools_protected_from_first_seal, EXPECT_PASS)
{
	struct rare_pool *before = rare_pool_create(1 << 16), *after;
	long *a, *b;

	CHECK(before);
	a = rare_alloc(before, sizeof(*a));
	CHECK(a);
	*a = 7; /* plain memory yet */
	CHECK(rare_write_is_protected(a, sizeof(*a)) == 0);
	CHECK(rare_write_is_protected(&core_var, sizeof(core_var)) == 0);
	CHECK(lib_seal() == 0);
	after = rare_pool_create(1 << 16);
	CHECK(after);
	b = rare_alloc(after, sizeof(*b));
	CHECK(b);
	CHECK(*a == 7 && *b == 0);
	CHECK(rare_write_is_protected(a, sizeof(*a)) == 1);
	CHECK(rare_write_is_protected(b, sizeof(*b)) == 1);
	CHECK(rare_write_is_protected(lib_var(), sizeof(long)) == 1);
	/* The program's own section is not sealed until init. */
	if (have_dso())
		CHECK(rare_write_is_protected(&core_var, sizeof(core_var)) ==
		      0);
	expect_segv(store_long, a);
	expect_segv(store_long, b);
	rare_write(*a, 8L);
	rare_write(*b, 9L);
	CHECK(*a == 8 && *b == 9);
	init();
	CHECK(rare_write_is_protected(&core_var, sizeof(core_var)) == 1);
	expect_segv(store_long, a);
	expect_segv(store_long, &core_var);
	rare_write(*b, 10L);
	CHECK(*b == 10);
}

/* --- init out of descriptors ----------------------------- */

struct fd_case {
	unsigned limit;
	bool seal_first;
	char *backend; /* shared with the parent: the backend chosen */
};

/* Exit 0: init succeeded; 10: it failed and left everything plain, and a
 * retry with descriptors succeeds. Any other end fails the case. */
static void init_with_limit(void *arg)
{
	const struct fd_case *c = arg;
	struct rlimit rl, saved;
	struct rare_pool *pool;
	long *obj;
	int err;

	syscall(SYS_close_range, 3U, ~0U, 0U);
	if (c->seal_first && lib_seal())
		_exit(3);
	snprintf(c->backend, 32, "%s", rare_write_backend());
	pool = rare_pool_create(1 << 16);
	if (!pool)
		_exit(4);
	obj = rare_alloc(pool, sizeof(*obj));
	getrlimit(RLIMIT_NOFILE, &saved);
	rl = (struct rlimit){c->limit, saved.rlim_max};
	if (setrlimit(RLIMIT_NOFILE, &rl))
		_exit(5);
	err = rare_write_init();
	setrlimit(RLIMIT_NOFILE, &saved);
	snprintf(c->backend, 32, "%s", rare_write_backend());
	if (!err) {
		/* Done whole, with descriptors or without. */
		if (!rare_write_is_protected(obj, 8) ||
		    !rare_write_is_protected(&core_var, 8))
			_exit(9);
		rare_write(*obj, 26L);
		_exit(*obj == 26 ? 0 : 9);
	}
	/* Nothing protected: plain stores land, nothing says protected. */
	if (!c->seal_first) {
		*(volatile long *)obj = 21;
		*(volatile long *)&core_var = 22;
		*(volatile long *)lib_var() = 23;
		if (strcmp(rare_write_backend(), "none") ||
		    rare_write_is_protected(obj, 8) ||
		    rare_write_is_protected(&core_var, 8))
			_exit(6);
	} else {
		/* What the seal protected stays; the rest is plain. */
		if (have_dso()) {
			*(volatile long *)&core_var = 22;
			if (rare_write_is_protected(&core_var, 8))
				_exit(6);
		}
		if (!rare_write_is_protected(obj, 8))
			_exit(6);
	}
	if (rare_write_init())
		_exit(7);
	rare_write(*obj, 24L);
	rare_write(core_var, 25L);
	if (*obj != 24 || core_var != 25 || !rare_write_is_protected(obj, 8))
		_exit(8);
	_exit(10);
}

/* Backends that protect in place: after a seal (which took the table's
 * descriptor) their init opens none, so no limit makes it fail. mprotect
 * changes the pages' protection; pkey tags them with a key allocated
 * before main(). The others give each section a memfd of its own. */
static bool needs_no_descriptor(const char *backend)
{
	return !strcmp(backend, "mprotect") || !strcmp(backend, "pkey");
}

static void init_fd_limits(bool seal_first)
{
	char *backend = mmap(NULL, 32, PROT_READ | PROT_WRITE,
			     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	unsigned failed = 0;

	CHECK(backend != MAP_FAILED);
	for (unsigned limit = 3; limit <= 12; limit++) {
		struct fd_case c = {limit, seal_first, backend};
		char msg[1024];
		int status =
			run_captured(init_with_limit, &c, msg, sizeof(msg));

		if (!WIFEXITED(status) ||
		    (WEXITSTATUS(status) != 0 && WEXITSTATUS(status) != 10)) {
			fprintf(stderr,
				"RLIMIT_NOFILE %u: status %#x, stderr '%s'\n",
				limit, status, msg);
			CHECK(!"init did not fail cleanly");
		}
		if (WEXITSTATUS(status) == 10) {
			/* one line naming the call */
			if (strncmp(msg, "rarewrite: rare_write_init",
				    strlen("rarewrite: rare_write_init")) ||
			    strchr(msg, '\n') != msg + strlen(msg) - 1) {
				fprintf(stderr,
					"RLIMIT_NOFILE %u: want one line, got "
					"'%s'\n",
					limit, msg);
				CHECK(!"init failed without its one line");
			}
			failed++;
		}
	}
	/* The case did test a failure: after a seal, unless the backend
	 * (the one chosen, under "auto" too) protects in place, or in a
	 * static runner, where the seal took the only section. */
	if (!failed &&
	    !(seal_first && (!have_dso() || needs_no_descriptor(backend))))
		fprintf(stderr, "init never failed (backend %s)\n", backend);
	CHECK(failed > 0 ||
	      (seal_first && (!have_dso() || needs_no_descriptor(backend))));
	munmap(backend, 32);
}

TEST(core_init_out_of_descriptors_undoes, EXPECT_PASS)
{
	init_fd_limits(false);
}

TEST(core_init_out_of_descriptors_after_seal, EXPECT_PASS)
{
	init_fd_limits(true);
}

/* --- the fault report's state --------------------------- */

static void store_objects(void *arg)
{
	attack_store64(arg, 1000000);
}

/* The list of objects (once a plain count). */
static void *report_list(void)
{
	void *l = attack_lib_sym("symbolize_objects");

	return l ? l : attack_lib_sym("nr_objects");
}

TEST(core_fault_report_state_read_only, EXPECT_PASS)
{
	void *objects = report_list();

	CHECK(objects);
	init();
	expect_segv(store_objects, objects);	 /* the count */
	if (attack_lib_sym("symbolize_objects")) /* a path */
		expect_segv(store_objects, (char *)objects + 64);
	/* and the report still names the object */
	{
		char msg[1024];
		int status =
			run_captured(store_long, &core_var, msg, sizeof(msg));

		CHECK(child_killed_by(status) == SIGSEGV);
		CHECK(strstr(msg, "core_var"));
	}
}

TEST(core_fault_report_state_read_only_after_seal, EXPECT_PASS)
{
	void *objects = report_list();

	CHECK(objects);
	CHECK(lib_seal() == 0);
	expect_segv(store_objects, objects);
}
