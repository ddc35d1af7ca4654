// SPDX-License-Identifier: MIT
/*
 * test_owner.c - who may write: the owner's token page (src/owner.c). A
 * child made by a raw fork() (no fork handlers) reads the page as zeroes,
 * cannot store the token back, and aborts when it writes through the API
 * on the backends whose memory it shares with its parent. On a kernel
 * without MADV_WIPEONFORK (emulated here with a seccomp filter that refuses
 * it) the library falls back to getpid(), with the same result.
 */
#define _GNU_SOURCE
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "attack.h"
#include "harness.h"
#include "testutil.h"
#include "../src/table.h"

#ifndef MADV_WIPEONFORK
#define MADV_WIPEONFORK 18
#endif

static uint64_t owned __wr_rare = 1;

static const struct rw_table *table(void)
{
	const struct rw_table *t = attack_lib_sym("rw_table");

	CHECK(t);
	return t;
}

/* The backends whose views and table a raw fork() child shares. */
static bool shares_memory(void)
{
	const char *b = rare_write_backend();

	return !strcmp(b, "pwrite") || !strcmp(b, "shadow") ||
	       !strcmp(b, "process");
}

static void store_token(void *page)
{
	*(volatile uint64_t *)page = table()->owner.token;
}

/* A raw fork() child writes through the API: it must die by SIGABRT, and
 * the parent's value stays. */
static void raw_child_write_aborts(void)
{
	int status;
	pid_t pid;

	rare_write(owned, 2UL);
	fflush(NULL);
	pid = (pid_t)syscall(SYS_fork);
	CHECK(pid >= 0);
	if (!pid) {
		close(STDERR_FILENO); /* the expected abort message */
		rare_write(owned, 3UL);
		_exit(0);
	}
	CHECK(waitpid(pid, &status, 0) == pid);
	if (!shares_memory()) { /* it wrote its own copy-on-write pages */
		CHECK(WIFEXITED(status) && !WEXITSTATUS(status));
	} else {
		if (child_killed_by(status) != SIGABRT)
			fprintf(stderr, "raw child status %#x\n", status);
		CHECK(child_killed_by(status) == SIGABRT);
	}
	CHECK(owned == 2);
	rare_write(owned, 4UL); /* the parent still owns it */
	CHECK(owned == 4);
}

TEST(owner_token_page_is_read_only_and_wiped_on_fork, EXPECT_PASS)
{
	const struct rw_table *t;
	const volatile uint64_t *page;
	int status;
	pid_t pid;

	init();
	t = table();
	page = t->owner.token_page;
	if (!page)
		SKIP("the kernel has no MADV_WIPEONFORK: getpid() decides");
	CHECK(t->owner.token && *page == t->owner.token);
	expect_segv(store_token, (void *)page);
	fflush(NULL);
	pid = (pid_t)syscall(SYS_fork);
	CHECK(pid >= 0);
	if (!pid) {
		/* Zeroes; and a store cannot put the token back. */
		if (*page)
			_exit(10);
		if (attack_try_store64((void *)page, t->owner.token) ||
		    *page == t->owner.token)
			_exit(11);
		_exit(0);
	}
	CHECK(waitpid(pid, &status, 0) == pid);
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		fprintf(stderr, "raw child status %#x\n", status);
	CHECK(WIFEXITED(status) && !WEXITSTATUS(status));
	CHECK(*page == t->owner.token);
}

TEST(owner_raw_fork_child_write_aborts, EXPECT_PASS)
{
	init();
	raw_child_write_aborts();
}

/* A child made with fork handlers owns a page of its own. */
static void child_owns(void *unused)
{
	const struct rw_table *t = table();

	(void)unused;
	if (t->owner.token_page && *t->owner.token_page != t->owner.token)
		_exit(20);
	if (t->owner.pid != getpid())
		_exit(21);
	rare_write(owned, 5UL);
	_exit(owned == 5 ? 0 : 22);
}

TEST(owner_fork_child_claims_its_own_token, EXPECT_PASS)
{
	const uint64_t *before;

	init();
	before = table()->owner.token_page;
	CHECK(run_in_child(child_owns, NULL) == CHILD_OK);
	CHECK(table()->owner.token_page == before && owned == 1);
}

/* madvise(MADV_WIPEONFORK) fails with EINVAL, as on Linux < 4.14. */
static void refuse_wipeonfork(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_madvise, 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, args[2])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, MADV_WIPEONFORK, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EINVAL),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {sizeof(f) / sizeof(f[0]), f};
	void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	CHECK(p != MAP_FAILED);
	CHECK(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0);
	CHECK(prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0);
	CHECK(madvise(p, 4096, MADV_WIPEONFORK) == -1 && errno == EINVAL);
	munmap(p, 4096);
}

TEST(owner_falls_back_to_getpid_without_wipeonfork, EXPECT_PASS)
{
	const struct rw_table *t;

	refuse_wipeonfork();
	init();
	t = table();
	CHECK(!t->owner.token_page && t->owner.pid == getpid());
	raw_child_write_aborts();
	CHECK(run_in_child(child_owns, NULL) == CHILD_OK);
}
