// SPDX-License-Identifier: MIT
/*
 * Threads the C library starts itself (src/libc_threads.c, attack 22c):
 * each entry that starts one aborts, naming itself, on a thread that holds
 * a window (on pkey also a map); outside windows, and where no thread is
 * started, it works as before.
 */
#define _GNU_SOURCE
#include <aio.h>
#include <errno.h>
#include <fcntl.h>
#include <mqueue.h>
#include <netdb.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "harness.h"
#include "testutil.h"

static long tvalue __wr_rare = 1;

/* The loader's table of this program: none in a static one, which links
 * librarewrite.a, where the C library's entries are not interposed. */
extern char _DYNAMIC[] __attribute__((weak));

static void need_interposed(void)
{
	if (!_DYNAMIC)
		SKIP("static program: the C library's entries are its own");
}

static void need_windows(void)
{
	need_interposed();
	if (!backend_has(RARE_WRITE_CAP_BEGIN_END))
		SKIP("no begin/end windows");
}

static volatile int fired;

static void on_timer(union sigval v)
{
	(void)v;
	__atomic_store_n(&fired, 1, __ATOMIC_RELEASE);
}

static void timer_thread(void *arg)
{
	struct sigevent ev = {.sigev_notify = SIGEV_THREAD};
	timer_t t;

	(void)arg;
	ev.sigev_notify_function = on_timer;
	rare_write_begin();
	(void)timer_create(CLOCK_MONOTONIC, &ev, &t);
	rare_write_end();
}

TEST(libc_timer_create_thread_in_window_aborts, EXPECT_PASS)
{
	init();
	need_windows();
	expect_abort_addr(timer_thread, NULL, "timer_create", NULL, false);
}

static void timer_thread_in_map(void *arg)
{
	struct sigevent ev = {.sigev_notify = SIGEV_THREAD};
	struct rare_write_mapping m = rare_write_map(&tvalue, sizeof(tvalue));
	timer_t t;

	(void)arg;
	ev.sigev_notify_function = on_timer;
	(void)timer_create(CLOCK_MONOTONIC, &ev, &t);
	rare_write_unmap(m);
}

/* pkey: a map opens the key on this thread, as a window does. */
TEST(libc_timer_create_thread_in_map_aborts_on_pkey, EXPECT_PASS)
{
	init();
	need_interposed();
	if (strcmp(rare_write_backend(), "pkey"))
		SKIP("not the pkey backend");
	expect_abort_addr(timer_thread_in_map, NULL, "timer_create", NULL,
			  false);
}

/* The control: outside windows a SIGEV_THREAD timer fires; inside one a
 * timer that signals starts no thread and is let through. */
TEST(libc_timer_create_outside_window_fires, EXPECT_PASS)
{
	struct sigevent ev = {.sigev_notify = SIGEV_THREAD};
	struct itimerspec its = {.it_value = {0, 1000 * 1000}};
	struct sigevent sig = {.sigev_notify = SIGEV_SIGNAL,
			       .sigev_signo = SIGUSR1};
	timer_t t, s;

	init();
	ev.sigev_notify_function = on_timer;
	CHECK(timer_create(CLOCK_MONOTONIC, &ev, &t) == 0);
	CHECK(timer_settime(t, 0, &its, NULL) == 0);
	for (int i = 0; i < 30000 && !__atomic_load_n(&fired, __ATOMIC_ACQUIRE);
	     i++)
		usleep(1000);
	CHECK(fired);
	CHECK(timer_delete(t) == 0);
	if (backend_has(RARE_WRITE_CAP_BEGIN_END)) {
		rare_write_begin();
		CHECK(timer_create(CLOCK_MONOTONIC, &sig, &s) == 0);
		rare_write_end();
		CHECK(timer_delete(s) == 0);
	}
}

static char buf[16];

static void aio_in_window(void *arg)
{
	struct aiocb cb = {.aio_fildes = *(int *)arg,
			   .aio_buf = buf,
			   .aio_nbytes = sizeof(buf)};

	rare_write_begin();
	(void)aio_read(&cb);
	rare_write_end();
}

TEST(libc_aio_read_in_window_aborts, EXPECT_PASS)
{
	int fd;

	init();
	need_windows();
	fd = open("/dev/zero", O_RDONLY);
	CHECK(fd >= 0);
	expect_abort_addr(aio_in_window, &fd, "aio_read", NULL, false);
}

/* The control: outside windows the request completes. */
TEST(libc_aio_read_outside_window_works, EXPECT_PASS)
{
	struct aiocb cb = {.aio_buf = buf, .aio_nbytes = sizeof(buf)};
	const struct aiocb *list[1] = {&cb};

	init();
	memset(buf, 1, sizeof(buf));
	cb.aio_fildes = open("/dev/zero", O_RDONLY);
	CHECK(cb.aio_fildes >= 0);
	CHECK(aio_read(&cb) == 0);
	while (aio_error(&cb) == EINPROGRESS)
		CHECK(aio_suspend(list, 1, NULL) == 0 || errno == EINTR);
	CHECK(aio_return(&cb) == (ssize_t)sizeof(buf) && buf[0] == 0);
}

static void mq_in_window(void *arg)
{
	struct sigevent ev = {.sigev_notify = SIGEV_THREAD};

	ev.sigev_notify_function = on_timer;
	rare_write_begin();
	(void)mq_notify(*(mqd_t *)arg, &ev);
	rare_write_end();
}

TEST(libc_mq_notify_thread_in_window_aborts, EXPECT_PASS)
{
	struct mq_attr a = {.mq_maxmsg = 1, .mq_msgsize = 8};
	char name[64];
	mqd_t q;

	init();
	need_windows();
	snprintf(name, sizeof(name), "/rarewrite-test-%d", (int)getpid());
	q = mq_open(name, O_RDWR | O_CREAT | O_EXCL, 0600, &a);
	if (q == (mqd_t)-1)
		SKIP("no POSIX message queues here");
	mq_unlink(name);
	expect_abort_addr(mq_in_window, &q, "mq_notify", NULL, false);
}

static void gai_in_window(void *arg)
{
	struct gaicb req = {.ar_name = "localhost"};
	struct gaicb *list[1] = {&req};

	(void)arg;
	rare_write_begin();
	(void)getaddrinfo_a(GAI_NOWAIT, list, 1, NULL);
	rare_write_end();
}

TEST(libc_getaddrinfo_a_in_window_aborts, EXPECT_PASS)
{
	init();
	need_windows();
	expect_abort_addr(gai_in_window, NULL, "getaddrinfo_a", NULL, false);
}
