// SPDX-License-Identifier: MIT
/*
 * The process backend's helper keeps none of the program's signal handling
 * and takes none of its locks: it sets its dispositions by the system call
 * itself, not through the library's sigaction() interposer (which takes a
 * lock word and reinstalls the library's handlers). Run on every default
 * backend: where that is not process, the helper comes with a pool of the
 * process level, started after init, when the interposer is active.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "attack.h"
#include "harness.h"
#include "testutil.h"
#include "../src/reglock.h"

static unsigned long long status_hex(pid_t pid, const char *field)
{
	char path[64], line[256];
	unsigned long long v = ~0ULL;
	size_t n = strlen(field);
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	CHECK(f);
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, field, n) &&
		    sscanf(line + n, ": %llx", &v) == 1)
			break;
	fclose(f);
	return v;
}

static bool default_is_process(void)
{
	return !strcmp(rare_write_backend(), "process");
}

/* A pool on the process backend (the helper starts now unless it is the
 * default backend's); skips where the machine has no process backend. */
static struct rare_pool *process_pool(void)
{
	struct rare_pool *p;

	if (default_is_process())
		return rare_pool_create(4096);
	p = rare_pool_create_with(
		4096, &(struct rare_pool_opts){.backend = "process"});
	if (!p && errno == ENOTSUP)
		SKIP("no process backend here");
	return p;
}

TEST(process_helper_catches_no_signal, EXPECT_PASS)
{
	struct rare_pool *pool;
	pid_t h;

	init();
	pool = process_pool();
	CHECK(pool);
	h = find_helper();
	CHECK(h > 0);
	/* No handler at all: not the library's fault handler, not one of
	 * its own. */
	if (status_hex(h, "SigCgt"))
		fprintf(stderr, "helper SigCgt %#llx\n",
			status_hex(h, "SigCgt"));
	CHECK(status_hex(h, "SigCgt") == 0);
	/* Every signal blocked, but SIGKILL and SIGSTOP, which cannot be. */
	CHECK(status_hex(h, "SigBlk") ==
	      ~((1ULL << (SIGKILL - 1)) | (1ULL << (SIGSTOP - 1))));
}

struct holder {
	uint32_t *lock; /* a lock word (src/reglock.h) */
	int state;	/* 1: locked */
};

static void *hold_half_a_second(void *arg)
{
	struct holder *h = arg;
	struct timespec t = {0, 500000000};

	rw_reglock_write(h->lock);
	__atomic_store_n(&h->state, 1, __ATOMIC_RELEASE);
	nanosleep(&t, NULL);
	rw_reglock_write_unlock(h->lock);
	return NULL;
}

/* The helper is cloned while another thread holds the interposer's lock:
 * the clone's copy of it stays locked forever. */
static void start_helper_under_signal_lock(void *unused)
{
	struct holder h = {attack_lib_sym("signal_lock"), 0};
	struct rare_pool *pool;
	pthread_t t;
	long *obj;

	(void)unused;
	alarm(30); /* a helper that never answers: SIGALRM */
	CHECK(h.lock);
	if (strcmp(test_backend(), "process"))
		init();
	CHECK(!pthread_create(&t, NULL, hold_half_a_second, &h));
	while (!__atomic_load_n(&h.state, __ATOMIC_ACQUIRE))
		;
	if (!strcmp(test_backend(), "process"))
		init();
	pool = process_pool();
	obj = pool ? rare_alloc(pool, 64) : NULL;
	CHECK(obj);
	rare_write(*obj, 5L);
	CHECK(*obj == 5);
	CHECK(!pthread_join(t, NULL));
}

TEST(process_helper_starts_while_signal_lock_held, EXPECT_PASS)
{
	int status = run_in_child(start_helper_under_signal_lock, NULL);

	if (status != CHILD_OK)
		fprintf(stderr, "status %#x%s\n", status,
			child_killed_by(status) == SIGALRM
				? ": the helper never answered"
				: "");
	CHECK(status == CHILD_OK);
}
