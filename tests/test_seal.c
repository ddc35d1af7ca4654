// SPDX-License-Identifier: MIT
/*
 * Sealed views (mseal(2) after MADV_DONTFORK): the section of pwrite,
 * shadow and process, and pools created with RARE_POOL_SEAL. Sealed in the
 * parent, yet a forked child still gets a private copy, and
 * rare_pool_destroy() still works.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "testutil.h"

#ifndef SYS_mseal
#define SYS_mseal 462
#endif

static long sealed_var __wr_rare = 1;

/* The backend seals memfd views, and the kernel has mseal(2). */
static bool seals_here(void)
{
	static char page[1] __attribute__((aligned(4096)));
	const char *b = rare_write_backend();

	if (strcmp(b, "pwrite") && strcmp(b, "shadow") && strcmp(b, "process"))
		return false;
	return syscall(SYS_mseal, page, 0UL, 0UL) == 0;
}

static void *page_of(const void *p)
{
	return (void *)((uintptr_t)p & ~(uintptr_t)4095);
}

/* mprotect, munmap and mremap of a sealed page fail. */
static void check_sealed(void *page)
{
	void *scratch =
		mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	CHECK(scratch != MAP_FAILED);
	/* EACCES first where the memfd's write seal (process) already
	 * forbids a writable view. */
	CHECK(mprotect(page, 4096, PROT_READ | PROT_WRITE) == -1 &&
	      (errno == EPERM || errno == EACCES));
	CHECK(munmap(page, 4096) == -1 && errno == EPERM);
	CHECK(mremap(page, 4096, 4096, MREMAP_MAYMOVE | MREMAP_FIXED,
		     scratch) == MAP_FAILED &&
	      errno == EPERM);
	munmap(scratch, 4096);
}

struct fork_case {
	long *obj;
};

/* The child's copies are its own, sealed too, and writable through the
 * API; the parent checks that nothing reached it. */
static void child_writes(void *arg)
{
	struct fork_case *c = arg;

	CHECK(sealed_var == 2 && *c->obj == 3);
	check_sealed(page_of(&sealed_var));
	check_sealed(page_of(c->obj));
	rare_write(sealed_var, 20L);
	rare_write(*c->obj, 30L);
	CHECK(sealed_var == 20 && *c->obj == 30);
	_exit(0);
}

TEST(seal_section_and_pool_sealed_fork_private, EXPECT_PASS)
{
	struct rare_pool *pool;
	struct fork_case c;

	init();
	if (!seals_here())
		SKIP("backend does not seal memfd views, or no mseal(2)");
	pool = rare_pool_create_with(
		1 << 16, &(struct rare_pool_opts){.flags = RARE_POOL_SEAL});
	CHECK(pool);
	c.obj = rare_alloc(pool, sizeof(long));
	CHECK(c.obj);
	rare_write(sealed_var, 2L);
	rare_write(*c.obj, 3L);
	check_sealed(page_of(&sealed_var));
	check_sealed(page_of(c.obj));
	CHECK(run_in_child(child_writes, &c) == CHILD_OK);
	CHECK(sealed_var == 2 && *c.obj == 3);
	rare_write(sealed_var, 4L); /* the parent's writes still land */
	CHECK(sealed_var == 4);
}

TEST(seal_pool_destroy_zeroes_and_forgets, EXPECT_PASS)
{
	struct rare_pool *pool;
	long *obj;

	init();
	pool = rare_pool_create_with(
		1 << 16, &(struct rare_pool_opts){.flags = RARE_POOL_SEAL});
	CHECK(pool);
	obj = rare_alloc(pool, 64);
	CHECK(obj);
	rare_write(*obj, 77L);
	rare_pool_destroy(pool);
	/* Pools come and go as before; a sealed view stays, zeroed. */
	for (int i = 0; i < 8; i++) {
		struct rare_pool *p = rare_pool_create_with(
			4096,
			&(struct rare_pool_opts){.flags = RARE_POOL_SEAL});

		CHECK(p);
		rare_pool_destroy(p);
	}
	if (seals_here())
		CHECK(*(volatile long *)obj == 0);
}

struct destroy_case {
	struct rare_pool *pool;
	long *obj;
};

/* The child destroys its copy of a sealed pool: its view zeroed by its own
 * helper (process: the range from the child's copy of the table, which
 * that helper shares), the parent's untouched; and creates one. */
static void child_destroys(void *arg)
{
	struct destroy_case *c = arg;

	struct rare_pool *p;
	long *o;

	CHECK(*c->obj == 5);
	rare_pool_destroy(c->pool);
	CHECK(*(volatile long *)c->obj == 0);
	/* A new pool of the child's: its head written by the child's helper
	 * (process: where the child's table says). */
	p = rare_pool_create_with(
		4096, &(struct rare_pool_opts){.flags = RARE_POOL_SEAL});
	CHECK(p);
	o = rare_alloc(p, sizeof(long));
	CHECK(o);
	rare_write(*o, 7L);
	CHECK(*o == 7);
	_exit(0);
}

TEST(seal_pool_destroy_zeroes_in_fork_child, EXPECT_PASS)
{
	struct destroy_case c;

	init();
	if (!seals_here())
		SKIP("backend does not seal memfd views, or no mseal(2)");
	c.pool = rare_pool_create_with(
		1 << 16, &(struct rare_pool_opts){.flags = RARE_POOL_SEAL});
	CHECK(c.pool);
	c.obj = rare_alloc(c.pool, sizeof(long));
	CHECK(c.obj);
	rare_write(*c.obj, 5L);
	CHECK(run_in_child(child_destroys, &c) == CHILD_OK);
	CHECK(*c.obj == 5);
	rare_write(*c.obj, 6L); /* the parent's pool still live */
	CHECK(*c.obj == 6);
	rare_pool_destroy(c.pool);
	CHECK(*(volatile long *)c.obj == 0);
}

static void write_destroyed(void *arg)
{
	rare_write(*(long *)arg, 1L);
}

TEST(seal_pool_destroyed_is_not_writable, EXPECT_PASS)
{
	struct rare_pool *pool;
	long *obj;

	init();
	pool = rare_pool_create_with(
		1 << 16, &(struct rare_pool_opts){.flags = RARE_POOL_SEAL});
	CHECK(pool);
	obj = rare_alloc(pool, 64);
	CHECK(obj);
	rare_pool_destroy(pool);
	CHECK(child_killed_by(run_in_child(write_destroyed, obj)) == SIGABRT);
}

TEST(seal_pool_unknown_flags_einval, EXPECT_PASS)
{
	init();
	errno = 0;
	CHECK(!rare_pool_create_with(4096,
				     &(struct rare_pool_opts){.flags = 0x80}));
	CHECK(errno == EINVAL);
}
