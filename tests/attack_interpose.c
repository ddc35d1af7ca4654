// SPDX-License-Identifier: MIT
/*
 * attack_interpose.c - scenarios 22: entries of the C library that would go
 * around the library's interposition.
 *
 * 22a installs a SIGSEGV handler (and, where the library wraps every
 * handler, a SIGUSR1 one) with each function of the C library that
 * installs one: the kernel's action must stay the library's entry point,
 * or a store to protected memory dies without the report and, on pkey, a
 * handler runs with the PKRU of its signal frame unchecked. The raw
 * rt_sigaction(2) system call reads the kernel's action.
 *
 * 22b and 22c start a thread from inside a window with C11 thrd_create()
 * and through a SIGEV_THREAD timer (whose notifications run on threads the
 * C library starts itself); after rare_write_end() that thread stores into
 * protected memory.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <threads.h>
#include <time.h>
#include <unistd.h>

#include "attack.h"

static uint64_t ivictim[2] __wr_rare __attribute__((aligned(16)));

/* The kernel's handler for @sig, as rt_sigaction(2) reports it. */
static void *kernel_handler(int sig)
{
	struct {
		void *handler;
		unsigned long flags;
		void *restorer;
		uint64_t mask;
	} k;

	if (syscall(SYS_rt_sigaction, sig, NULL, &k, 8))
		attack_report(ATTACK_ERROR, "rt_sigaction: %s",
			      strerror(errno));
	return k.handler;
}

static void program_handler(int sig)
{
	(void)sig;
}

typedef void (*handler_fn)(int);
extern handler_fn ssignal(int, handler_fn);
extern handler_fn bsd_signal(int, handler_fn);

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
static handler_fn by_sigset(int sig, handler_fn h)
{
	return sigset(sig, h);
}
#pragma GCC diagnostic pop

static handler_fn by_ssignal(int sig, handler_fn h)
{
	return ssignal(sig, h);
}

static handler_fn by_signal(int sig, handler_fn h)
{
	return signal(sig, h);
}

static handler_fn by_bsd_signal(int sig, handler_fn h)
{
	return bsd_signal(sig, h);
}

static handler_fn by_sysv_signal(int sig, handler_fn h)
{
	return sysv_signal(sig, h);
}

static const struct {
	const char *name;
	handler_fn (*install)(int, handler_fn);
} installers[] = {
	{"signal", by_signal},		 {"bsd_signal", by_bsd_signal},
	{"sysv_signal", by_sysv_signal}, {"sigset", by_sigset},
	{"ssignal", by_ssignal},
};

ATTACK("22a", sigset_bypass,
       "a handler installed after init with `sigset()`, `ssignal()`, "
       "`signal()`, `bsd_signal()` or `sysv_signal()` replaces the "
       "library's entry point in the kernel (no fault report; on pkey an "
       "unwrapped handler)")
{
	void *entry = attack_lib_func("entry");
	bool wraps_all;

	if (!entry)
		attack_report(ATTACK_ERROR, "no entry() in the library");
	if (kernel_handler(SIGSEGV) != entry)
		attack_report(ATTACK_ERROR, "control: SIGSEGV is not ours");
	/* Whether this backend wraps every handler: the control is the
	 * interposed sigaction(). */
	struct sigaction sa = {.sa_handler = program_handler};

	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	wraps_all = kernel_handler(SIGUSR1) == entry;
	attack_begin();
	for (size_t i = 0; i < sizeof(installers) / sizeof(installers[0]);
	     i++) {
		installers[i].install(SIGSEGV, program_handler);
		if (kernel_handler(SIGSEGV) != entry)
			attack_report(ATTACK_OPEN, "%s() took SIGSEGV",
				      installers[i].name);
		if (!wraps_all)
			continue;
		installers[i].install(SIGUSR1, program_handler);
		if (kernel_handler(SIGUSR1) != entry)
			attack_report(ATTACK_OPEN, "%s() unwrapped SIGUSR1",
				      installers[i].name);
	}
	attack_report(ATTACK_BLOCKED, "the kernel's actions stayed ours");
}

/* ---- 22b, 22c: threads started inside a window ------------------------- */

static volatile int stage;

/* Wait for the window to end, then store: 42 is "the store went
 * through". */
static int store_after_end(void)
{
	while (__atomic_load_n(&stage, __ATOMIC_ACQUIRE) < 1)
		;
	return attack_try_store64(&ivictim[1], ATTACK_MARKER) &&
			       attack_load64(&ivictim[1]) == ATTACK_MARKER
		       ? 42
		       : 0;
}

static int c11_thread(void *arg)
{
	(void)arg;
	return store_after_end();
}

static bool needs_begin_end(void)
{
	if (!(rare_write_caps() & RARE_WRITE_CAP_BEGIN_END))
		return false;
	return true;
}

ATTACK("22b", thrd_create_window,
       "a thread started with C11 `thrd_create()` inside a window stores "
       "after `rare_write_end()`")
{
	thrd_t t;
	int res = 0;

	if (!needs_begin_end())
		attack_report(ATTACK_NA, "no begin/end windows");
	attack_begin();
	rare_write_begin();
	if (thrd_create(&t, c11_thread, NULL) != thrd_success)
		attack_report(ATTACK_ERROR, "thrd_create failed");
	rare_write_end();
	__atomic_store_n(&stage, 1, __ATOMIC_RELEASE);
	thrd_join(t, &res);
	attack_verdict(res == 42, "store from a C11 thread");
}

static volatile int timer_result = -1;

static void timer_fired(union sigval v)
{
	(void)v;
	__atomic_store_n(&timer_result, store_after_end(), __ATOMIC_RELEASE);
}

ATTACK("22c", timer_thread_window,
       "a SIGEV_THREAD timer created inside a window: its notification "
       "thread stores after `rare_write_end()`")
{
	struct sigevent sev = {.sigev_notify = SIGEV_THREAD};
	struct itimerspec its = {.it_value = {0, 1000 * 1000}};
	timer_t timer;

	if (!needs_begin_end())
		attack_report(ATTACK_NA, "no begin/end windows");
	sev.sigev_notify_function = timer_fired;
	attack_begin();
	rare_write_begin();
	if (timer_create(CLOCK_MONOTONIC, &sev, &timer))
		attack_report(ATTACK_ERROR, "timer_create: %s",
			      strerror(errno));
	rare_write_end();
	__atomic_store_n(&stage, 1, __ATOMIC_RELEASE);
	if (timer_settime(timer, 0, &its, NULL))
		attack_report(ATTACK_ERROR, "timer_settime: %s",
			      strerror(errno));
	for (int i = 0;
	     i < 5000 && __atomic_load_n(&timer_result, __ATOMIC_ACQUIRE) < 0;
	     i++)
		usleep(1000);
	if (timer_result < 0)
		attack_report(ATTACK_ERROR, "the timer never fired");
	attack_verdict(timer_result == 42, "store from a timer's thread");
}
