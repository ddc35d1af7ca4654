// SPDX-License-Identifier: MIT
/*
 * No window opens inside fork() (attack 21b, src/fork.c): a call that can
 * leave a window open, made by an at-fork handler, aborts naming itself,
 * in the parent and in the child, through fork(), daemon() and forkpty();
 * the same calls work once fork() has returned, and another thread that
 * opens windows while one forks is not affected.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pty.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "harness.h"
#include "testutil.h"

static long fvalue __wr_rare = 1;

/* Open a window and leave it open, as a redirected hook would. */
static void map_and_leave(void)
{
	(void)rare_write_map(&fvalue, sizeof(fvalue));
}

static void map_unmap(void)
{
	struct rare_write_mapping m = rare_write_map(&fvalue, sizeof(fvalue));

	*(long *)m.addr += 1;
	rare_write_unmap(m);
}

static int wait_child(pid_t pid)
{
	int status;

	CHECK(pid > 0);
	while (waitpid(pid, &status, 0) < 0)
		CHECK(errno == EINTR);
	return status;
}

static void fork_with_prepare_map(void *arg)
{
	(void)arg;
	CHECK(pthread_atfork(map_and_leave, NULL, NULL) == 0);
	fflush(NULL);
	if (!fork())
		_exit(0);
}

TEST(fork_handler_map_aborts_in_parent, EXPECT_PASS)
{
	init();
	expect_abort_addr(fork_with_prepare_map, NULL, "rare_write_map", NULL,
			  false);
}

static void begin_and_leave(void)
{
	rare_write_begin();
}

static void fork_with_prepare_begin(void *arg)
{
	(void)arg;
	CHECK(pthread_atfork(begin_and_leave, NULL, NULL) == 0);
	fflush(NULL);
	if (!fork())
		_exit(0);
}

TEST(fork_handler_begin_aborts_in_parent, EXPECT_PASS)
{
	init();
	if (!backend_has(RARE_WRITE_CAP_BEGIN_END))
		SKIP("no begin/end windows");
	expect_abort_addr(fork_with_prepare_begin, NULL, "rare_write_begin",
			  NULL, false);
}

TEST(fork_handler_map_aborts_in_child, EXPECT_PASS)
{
	pid_t pid;

	init();
	CHECK(pthread_atfork(NULL, NULL, map_and_leave) == 0);
	fflush(NULL);
	pid = fork();
	if (!pid)
		_exit(0);
	CHECK(child_killed_by(wait_child(pid)) == SIGABRT);
}

/* The control: after fork() returned, both sides open and close maps
 * (and windows) as before. */
TEST(fork_mark_cleared_after_fork, EXPECT_PASS)
{
	bool windows;
	pid_t pid;

	init();
	windows = backend_has(RARE_WRITE_CAP_BEGIN_END);
	for (int i = 0; i < 20; i++) {
		fflush(NULL);
		if (windows)
			rare_write_begin(); /* fork inside a window works */
		pid = fork();
		CHECK(pid >= 0);
		if (windows)
			rare_write_end();
		if (!pid) {
			map_unmap();
			_exit(0);
		}
		map_unmap();
		CHECK(WIFEXITED(wait_child(pid)));
	}
	CHECK(fvalue == 21);
}

static volatile int stop;

static void *mapper(void *arg)
{
	unsigned long *n = arg;
	bool windows = backend_has(RARE_WRITE_CAP_BEGIN_END);
	/* shadow: an open map holds the memfd write lock, which the fork
	 * hooks take after the core's maps lock, which unmap takes first: a
	 * fork meanwhile deadlocks (before fork() was interposed too). */
	bool maps = strcmp(rare_write_backend(), "shadow") != 0;

	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		if (windows) {
			rare_write_begin();
			rare_write_end();
		}
		if (maps)
			map_unmap();
		else
			rare_write(fvalue, fvalue + 1);
		++*n;
	}
	return NULL;
}

/* Another thread opens and closes windows all through the forks. */
TEST(fork_mark_other_thread_unaffected, EXPECT_PASS)
{
	unsigned long n = 0;
	pthread_t t;

	init();
	CHECK(pthread_create(&t, NULL, mapper, &n) == 0);
	for (int i = 0; i < 100; i++) {
		fflush(NULL);
		pid_t pid = fork();

		if (!pid)
			_exit(0);
		CHECK(WIFEXITED(wait_child(pid)));
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	CHECK(pthread_join(t, NULL) == 0);
	CHECK(n > 0);
}

/* daemon() forks inside the C library: its handlers are covered too. */
static void daemon_with_prepare_map(void *arg)
{
	(void)arg;
	CHECK(pthread_atfork(map_and_leave, NULL, NULL) == 0);
	fflush(NULL);
	if (!daemon(1, 1))
		_exit(0);
}

TEST(daemon_handler_map_aborts, EXPECT_PASS)
{
	init();
	expect_abort_addr(daemon_with_prepare_map, NULL, "rare_write_map", NULL,
			  false);
}

/* The control: a daemon() child maps as before. */
TEST(daemon_child_maps, EXPECT_PASS)
{
	int p[2];
	char c = 0;
	pid_t pid;

	init();
	CHECK(pipe(p) == 0);
	fflush(NULL);
	pid = fork();
	if (!pid) {
		close(p[0]);
		if (daemon(1, 1))
			_exit(1);
		map_unmap(); /* the daemon, a grandchild */
		(void)!write(p[1], fvalue == 2 ? "y" : "n", 1);
		_exit(0);
	}
	close(p[1]);
	CHECK(WIFEXITED(wait_child(pid)));
	CHECK(read(p[0], &c, 1) == 1 && c == 'y');
}

static void forkpty_with_prepare_map(void *arg)
{
	int master;

	(void)arg;
	CHECK(pthread_atfork(map_and_leave, NULL, NULL) == 0);
	fflush(NULL);
	if (!forkpty(&master, NULL, NULL, NULL))
		_exit(0);
}

TEST(forkpty_handler_map_aborts, EXPECT_PASS)
{
	int m, s;

	init();
	if (openpty(&m, &s, NULL, NULL, NULL))
		SKIP("no pseudo-terminals here");
	close(m);
	close(s);
	expect_abort_addr(forkpty_with_prepare_map, NULL, "rare_write_map",
			  NULL, false);
}

/* A fork that fails (clone() refused by a seccomp filter) clears the mark
 * and gives the token back: maps open afterwards, and the next fork()
 * fails again rather than wait for the token forever. */
TEST(fork_failed_clears_mark, EXPECT_PASS)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone, 2, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone3, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EAGAIN),
	};
	struct sock_fprog prog = {sizeof(f) / sizeof(f[0]), f};

	init();
	CHECK(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0);
	CHECK(prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0);
	for (int i = 0; i < 2; i++) {
		errno = 0;
		CHECK(fork() == -1 && errno == EAGAIN);
		map_unmap();
	}
	CHECK(fvalue == 3);
}
