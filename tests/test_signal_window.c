// SPDX-License-Identifier: MIT
/*
 * Signals and windows on every backend: a handler that interrupts a window
 * or a map holds none of it, may make its own writes, and the interrupted
 * code gets its window back; a store that faults inside a window is
 * reported; signals that arrive inside the library's short critical
 * sections are delivered after them, every one, with their siginfo.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/wait.h>

#include "harness.h"
#include "testutil.h"

static long sw_value __wr_rare;
static long sw_other __wr_rare;

static bool has(unsigned cap)
{
	return rare_write_caps() & cap;
}

static bool store_faults(long *p)
{
	return child_killed_by(run_in_child(store_long, p)) == SIGSEGV;
}

/* ---- a store that faults inside a window is reported ---- */

static void store_in_window(void *unused)
{
	struct rare_pool *pool;
	struct rare_write_mapping m = {0};
	long *obj;

	(void)unused;
	init();
	/* A pool on another backend stays sealed during this backend's
	 * window, whatever the window opens. */
	pool = rare_pool_create_with(
		4096, &(struct rare_pool_opts){
			      .backend = strcmp(rare_write_backend(), "pwrite")
						 ? "pwrite"
						 : "shadow"});
	CHECK(pool && (obj = rare_alloc(pool, sizeof(long))));
	if (has(RARE_WRITE_CAP_BEGIN_END))
		rare_write_begin();
	else
		m = rare_write_map(&sw_value, sizeof(sw_value));
	*(volatile long *)obj = 1; /* dies here, reported */
	(void)m;
	_exit(3);
}

TEST(signal_fault_in_window_is_reported, EXPECT_PASS)
{
	static const char want[] = "rarewrite: write to protected memory at ";
	char msg[1024];
	int status = run_captured(store_in_window, NULL, msg, sizeof(msg));

	if (strncmp(msg, want, strlen(want)))
		fprintf(stderr, "status %#x, stderr: '%s'\n", status, msg);
	CHECK(child_killed_by(status) == SIGSEGV);
	CHECK(!strncmp(msg, want, strlen(want)));
}

/* ---- a handler inside a window or map ---- */

static volatile long seen_in_handler;
static volatile bool handler_store_faulted;

static void handler_rare_write(int sig)
{
	(void)sig;
	rare_write(sw_other, 42L);
	seen_in_handler = sw_other;
}

TEST(signal_handler_rare_write_in_window, EXPECT_PASS)
{
	struct sigaction sa = {.sa_handler = handler_rare_write};

	init();
	if (!has(RARE_WRITE_CAP_BEGIN_END))
		SKIP("no begin/end windows");
	sigemptyset(&sa.sa_mask);
	CHECK(!sigaction(SIGUSR1, &sa, NULL));
	rare_write_begin();
	sw_value = 1;
	raise(SIGUSR1);
	sw_value = 2; /* the window is back */
	rare_write_end();
	CHECK(seen_in_handler == 42 && sw_other == 42 && sw_value == 2);
	CHECK(store_faults(&sw_value));
	CHECK(store_faults(&sw_other));
}

TEST(signal_handler_rare_write_in_map, EXPECT_PASS)
{
	struct sigaction sa = {.sa_handler = handler_rare_write};
	struct rare_write_mapping m;

	init();
	sigemptyset(&sa.sa_mask);
	CHECK(!sigaction(SIGUSR1, &sa, NULL));
	m = rare_write_map(&sw_value, sizeof(sw_value));
	*(long *)m.addr = 5;
	raise(SIGUSR1);
	*(long *)m.addr = 6; /* the map is back */
	rare_write_unmap(m);
	CHECK(seen_in_handler == 42 && sw_value == 6);
	CHECK(store_faults(&sw_value));
}

/* The handler's plain store dies although the window it interrupted is
 * open (for the interrupted code). */
static void handler_plain_store(int sig)
{
	(void)sig;
	*(volatile long *)&sw_other = 13;
}

static void plain_store_in_handler(void *unused)
{
	struct sigaction sa = {.sa_handler = handler_plain_store};

	(void)unused;
	init();
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	rare_write_begin();
	raise(SIGUSR1);
	rare_write_end();
	_exit(0);
}

TEST(signal_handler_store_in_window_dies, EXPECT_PASS)
{
	init();
	if (!has(RARE_WRITE_CAP_BEGIN_END))
		SKIP("no begin/end windows");
	CHECK(child_killed_by(run_in_child(plain_store_in_handler, NULL)) ==
	      SIGSEGV);
}

/* A handler left by siglongjmp closes the window it interrupted; the
 * window's rare_write_end() still balances. */
static sigjmp_buf jump_env;

static void jumping_handler(int sig)
{
	(void)sig;
	siglongjmp(jump_env, 1);
}

TEST(signal_siglongjmp_out_of_window, EXPECT_PASS)
{
	struct sigaction sa = {.sa_handler = jumping_handler};

	init();
	if (!has(RARE_WRITE_CAP_BEGIN_END))
		SKIP("no begin/end windows");
	sigemptyset(&sa.sa_mask);
	CHECK(!sigaction(SIGUSR1, &sa, NULL));
	rare_write_begin();
	sw_value = 7;
	if (!sigsetjmp(jump_env, 1))
		raise(SIGUSR1);
	rare_write_end();
	CHECK(sw_value == 7);
	CHECK(store_faults(&sw_value));
	rare_write_begin(); /* and windows work as before */
	sw_value = 8;
	rare_write_end();
	CHECK(sw_value == 8 && rare_write(sw_value, 9L) == 9);
	CHECK(store_faults(&sw_value));
}

/* ---- signals inside critical sections ---- */

#define SENT 2000

static volatile int received;
static volatile bool values_ok = true;

static void counting_handler(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	if (si->si_value.sival_int != received)
		values_ok = false;
	received++;
}

struct sender {
	pthread_t target;
	volatile bool done;
};

static void *send_all(void *p)
{
	struct sender *s = p;

	for (int i = 0; i < SENT; i++)
		while (pthread_sigqueue(s->target, SIGRTMIN,
					(union sigval){.sival_int = i}))
			sched_yield(); /* queue full: let it drain */
	s->done = true;
	return NULL;
}

TEST(signal_every_signal_arrives_during_writes, EXPECT_PASS)
{
	struct sigaction sa = {.sa_sigaction = counting_handler,
			       .sa_flags = SA_SIGINFO | SA_RESTART};
	struct sender s = {pthread_self(), false};
	pthread_t t;
	long n = 0;

	init();
	sigemptyset(&sa.sa_mask);
	CHECK(!sigaction(SIGRTMIN, &sa, NULL));
	CHECK(!pthread_create(&t, NULL, send_all, &s));
	while (!s.done || received < SENT) {
		rare_write(sw_value, ++n);
		if (has(RARE_WRITE_CAP_BEGIN_END) && !(n & 7)) {
			rare_write_begin();
			sw_other = n;
			rare_write_end();
		}
	}
	pthread_join(t, NULL);
	CHECK(received == SENT && values_ok);
	CHECK(sw_value == n);
	CHECK(store_faults(&sw_value));
}

/* ---- rare_write_add() from a handler that interrupts one ---- */

static long sw_counter __wr_rare;
static volatile sig_atomic_t added;

static void adding_handler(int sig)
{
	(void)sig;
	rare_write_add(sw_counter, 1);
	added++;
}

/* A handler that finds the add lock held by the code it interrupted would
 * wait for it forever: it runs after the add instead, and both land. */
TEST(signal_handler_add_during_add, EXPECT_PASS)
{
	struct sigaction sa = {.sa_handler = adding_handler,
			       .sa_flags = SA_RESTART};
	struct sender s = {pthread_self(), false};
	pthread_t t;
	long n = 0;

	init();
	alarm(60); /* a deadlock ends the case */
	sigemptyset(&sa.sa_mask);
	CHECK(!sigaction(SIGRTMIN, &sa, NULL));
	CHECK(!pthread_create(&t, NULL, send_all, &s));
	while (!s.done || added < SENT) {
		rare_write_add(sw_counter, 1);
		n++;
	}
	pthread_join(t, NULL);
	CHECK(sw_counter == n + added && added == SENT);
	CHECK(store_faults(&sw_counter));
}
