// SPDX-License-Identifier: MIT
/* rare_write_begin / rare_write_end: windows for direct stores. */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>

#include "harness.h"
#include "testutil.h"

static long counters[64] __wr_rare;
static char far_page[4096] __wr_rare __attribute__((aligned(4096)));

static void need_begin_end(void)
{
	init();
	if (!backend_has(RARE_WRITE_CAP_BEGIN_END))
		SKIP("backend has no begin/end");
}

TEST(window_direct_stores_land, EXPECT_PASS)
{
	struct rare_pool *pool;
	long *obj;

	need_begin_end();
	pool = rare_pool_create(1 << 16);
	CHECK(pool);
	obj = rare_alloc(pool, 16 * sizeof(long));
	CHECK(obj);
	rare_write_begin();
	for (int i = 0; i < 64; i++)
		counters[i] = i * 3;
	far_page[4095] = 'z';
	for (int i = 0; i < 16; i++)
		obj[i] = -i;		/* pools open too */
	rare_write(counters[1], 1000L); /* and rare_write inside */
	rare_write_end();
	for (int i = 0; i < 64; i++)
		CHECK(counters[i] == (i == 1 ? 1000 : i * 3));
	CHECK(far_page[4095] == 'z');
	for (int i = 0; i < 16; i++)
		CHECK(obj[i] == -i);
	expect_segv(store_long, &counters[0]);
	expect_segv(store_long, obj);
}

TEST(window_closed_after_end, EXPECT_SEGV)
{
	need_begin_end();
	rare_write_begin();
	counters[0] = 1;
	rare_write_end();
	CHECK(counters[0] == 1);
	*(volatile long *)&counters[0] = 2;
}

TEST(window_nesting_inner_end_keeps_it_open, EXPECT_PASS)
{
	need_begin_end();
	rare_write_begin();
	rare_write_begin();
	rare_write_begin();
	counters[0] = 1;
	rare_write_end();
	counters[1] = 2;
	rare_write_end();
	counters[2] = 3;
	rare_write_end();
	CHECK(counters[0] == 1 && counters[1] == 2 && counters[2] == 3);
	expect_segv(store_long, &counters[3]);
}

TEST(window_nesting_outer_end_closes, EXPECT_SEGV)
{
	need_begin_end();
	rare_write_begin();
	rare_write_begin();
	rare_write_end();
	rare_write_end();
	*(volatile long *)&counters[0] = 2;
}

TEST(window_before_init_is_plain, EXPECT_PASS)
{
	rare_write_begin();
	counters[0] = 5;
	rare_write_end();
	counters[1] = 6; /* no window needed before init */
	init();
	CHECK(counters[0] == 5 && counters[1] == 6);
}

static void do_begin(void *unused)
{
	(void)unused;
	rare_write_begin();
}

TEST(window_begin_without_cap_aborts, EXPECT_PASS)
{
	init();
	if (backend_has(RARE_WRITE_CAP_BEGIN_END))
		SKIP("backend has begin/end");
	expect_abort_addr(do_begin, NULL, "rare_write_begin", NULL, false);
}

static void do_end(void *unused)
{
	(void)unused;
	rare_write_end();
}

static void do_begin_end_end(void *unused)
{
	(void)unused;
	rare_write_begin();
	rare_write_end();
	rare_write_end();
}

TEST(window_unbalanced_end_aborts, EXPECT_PASS)
{
	expect_abort_addr(do_end, NULL, "rare_write_end", NULL, false);
	expect_abort_addr(do_begin_end_end, NULL, "rare_write_end", NULL,
			  false);
	init();
	expect_abort_addr(do_end, NULL, "rare_write_end", NULL, false);
	if (backend_has(RARE_WRITE_CAP_BEGIN_END))
		expect_abort_addr(do_begin_end_end, NULL, "rare_write_end",
				  NULL, false);
}

static void *end_on_other_thread(void *unused)
{
	(void)unused;
	rare_write_end();
	return NULL;
}

static void do_end_on_other_thread(void *unused)
{
	pthread_t t;

	(void)unused;
	rare_write_begin();
	pthread_create(&t, NULL, end_on_other_thread, NULL);
	pthread_join(t, NULL);
}

/* Windows are per thread: another thread cannot close mine. */
TEST(window_end_on_other_thread_aborts, EXPECT_PASS)
{
	need_begin_end();
	expect_abort_addr(do_end_on_other_thread, NULL, "rare_write_end", NULL,
			  false);
}

static void do_init_in_window(void *unused)
{
	(void)unused;
	rare_write_begin();
	rare_write_init();
}

static void do_pool_in_window(void *unused)
{
	(void)unused;
	rare_write_begin();
	rare_pool_create(4096);
}

TEST(window_init_or_pool_create_inside_aborts, EXPECT_PASS)
{
	expect_abort_addr(do_init_in_window, NULL, "rare_write_init", NULL,
			  false);
	need_begin_end();
	expect_abort_addr(do_pool_in_window, NULL, "rare_pool_create", NULL,
			  false);
}

static volatile sig_atomic_t got_signal;

static void on_usr1(int sig)
{
	(void)sig;
	got_signal = 1;
}

/* A signal that arrives while a window is open runs at once, with the
 * window closed for it and back afterwards; the signal mask is never
 * touched (tests/test_signal_window.c has the handler's own writes). */
TEST(window_signals_run_inside, EXPECT_PASS)
{
	struct sigaction sa = {.sa_handler = on_usr1};
	sigset_t before, after;

	need_begin_end();
	sigemptyset(&sa.sa_mask);
	CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);
	/* a signal the caller blocked stays blocked afterwards */
	sigemptyset(&before);
	sigaddset(&before, SIGUSR2);
	CHECK(pthread_sigmask(SIG_BLOCK, &before, NULL) == 0);
	CHECK(pthread_sigmask(SIG_BLOCK, NULL, &before) == 0);

	rare_write_begin();
	counters[0] = 1;
	CHECK(kill(getpid(), SIGUSR1) == 0);
	CHECK(got_signal);
	CHECK(pthread_sigmask(SIG_BLOCK, NULL, &after) == 0);
	for (int sig = 1; sig < 65; sig++) /* the kernel's 64 bits only */
		CHECK(sigismember(&before, sig) == sigismember(&after, sig));
	rare_write_begin(); /* nested */
	rare_write_end();
	counters[1] = 2;
	rare_write_end();
	CHECK(pthread_sigmask(SIG_BLOCK, NULL, &after) == 0);
	CHECK(sigismember(&after, SIGUSR2) && !sigismember(&after, SIGUSR1));
	CHECK(counters[0] == 1 && counters[1] == 2);
}

/* Same through a map (a window on mprotect/pkey). */
TEST(window_signals_run_inside_map, EXPECT_PASS)
{
	struct sigaction sa = {.sa_handler = on_usr1};
	struct rare_write_mapping m;

	need_begin_end();
	sigemptyset(&sa.sa_mask);
	CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);
	m = rare_write_map(&counters[5], sizeof(long));
	CHECK(kill(getpid(), SIGUSR1) == 0);
	CHECK(got_signal);
	*(long *)m.addr = 7;
	rare_write_unmap(m);
	CHECK(counters[5] == 7);
}

/* Who can write while a window is open: exactly what THREAD_LOCAL says. */
static volatile bool window_open;

static void *other_thread_store(void *unused)
{
	(void)unused;
	*(volatile long *)&counters[10] = 99;
	return NULL;
}

static void window_with_other_thread(void *unused)
{
	pthread_t t;

	(void)unused;
	rare_write_begin();
	CHECK(pthread_create(&t, NULL, other_thread_store, NULL) == 0);
	pthread_join(t, NULL);
	rare_write_end();
	_exit(counters[10] == 99 ? 0 : 3);
}

TEST(window_other_threads_per_caps, EXPECT_PASS)
{
	int status;

	need_begin_end();
	status = run_in_child(window_with_other_thread, NULL);
	if (backend_has(RARE_WRITE_CAP_THREAD_LOCAL))
		CHECK(child_killed_by(status) == SIGSEGV);
	else
		CHECK(status == CHILD_OK);
}

/* Many threads opening and closing windows and writing at the same time:
 * no window is closed under a thread still inside its own. */
#define WIN_THREADS 8
#define WIN_ROUNDS 3000

static void *window_hammer(void *arg)
{
	long id = (long)(intptr_t)arg;

	for (long i = 1; i <= WIN_ROUNDS; i++) {
		if (id % 2) {
			rare_write_begin();
			counters[id] = i;
			counters[id + 32] = i;
			rare_write_end();
		} else {
			rare_write(counters[id], i);
			rare_write(counters[id + 32], i);
		}
	}
	return NULL;
}

TEST(window_concurrent_windows_and_writes, EXPECT_PASS)
{
	pthread_t t[WIN_THREADS];

	need_begin_end();
	for (long i = 0; i < WIN_THREADS; i++)
		CHECK(pthread_create(&t[i], NULL, window_hammer,
				     (void *)(intptr_t)i) == 0);
	for (int i = 0; i < WIN_THREADS; i++)
		pthread_join(t[i], NULL);
	for (int i = 0; i < WIN_THREADS; i++)
		CHECK(counters[i] == WIN_ROUNDS &&
		      counters[i + 32] == WIN_ROUNDS);
	expect_segv(store_long, &counters[0]);
}
