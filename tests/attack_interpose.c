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

/* The kernel's handler for @sig, as rt_sigaction(2) reports it, and its
 * flags into @flags if not NULL. */
static void *kernel_action(int sig, unsigned long *flags)
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
	if (flags)
		*flags = k.flags;
	return k.handler;
}

static void *kernel_handler(int sig)
{
	return kernel_action(sig, NULL);
}

static void program_handler(int sig)
{
	(void)sig;
}

typedef void (*handler_fn)(int);
extern handler_fn ssignal(int, handler_fn);
extern handler_fn bsd_signal(int, handler_fn);
/* signal() under -std=c11 (<signal.h> renames it). */
extern handler_fn __sysv_signal(int, handler_fn);
extern int sigignore(int);
extern int siginterrupt(int, int);

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
static handler_fn by_sigset(int sig, handler_fn h)
{
	return sigset(sig, h);
}
#pragma GCC diagnostic pop

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
static handler_fn by_sigignore(int sig, handler_fn h)
{
	(void)h;
	return sigignore(sig) ? SIG_ERR : SIG_IGN;
}

static int interrupt(int sig, int flag)
{
	return siginterrupt(sig, flag);
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

static handler_fn by_c11_signal(int sig, handler_fn h)
{
	return __sysv_signal(sig, h);
}

/* @ignores: installs SIG_IGN, which a wrapped signal other than SIGSEGV
 * passes to the kernel as it is. */
static const struct {
	const char *name;
	handler_fn (*install)(int, handler_fn);
	bool ignores;
} installers[] = {
	{"signal", by_signal, false},
	{"bsd_signal", by_bsd_signal, false},
	{"sysv_signal", by_sysv_signal, false},
	{"sigset", by_sigset, false},
	{"ssignal", by_ssignal, false},
	{"__sysv_signal", by_c11_signal, false},
	{"sigignore", by_sigignore, true},
};

/* siginterrupt() changes SA_RESTART of the current action: the flags the
 * library reports (and keeps for the program) must be the kernel's. */
static void check_siginterrupt(int sig)
{
	for (int flag = 1; flag >= 0; flag--) {
		struct sigaction old;
		unsigned long kflags;
		bool kept, kernel;

		if (interrupt(sig, flag) || sigaction(sig, NULL, &old))
			attack_report(ATTACK_ERROR, "siginterrupt: %s",
				      strerror(errno));
		kernel_action(sig, &kflags);
		kept = old.sa_flags & SA_RESTART;
		kernel = kflags & SA_RESTART;
		if (kept != kernel || kept == (bool)flag)
			attack_report(ATTACK_OPEN,
				      "siginterrupt(%d, %d): the library "
				      "keeps SA_RESTART %s, the kernel %s",
				      sig, flag, kept ? "on" : "off",
				      kernel ? "on" : "off");
	}
}

ATTACK("22a", sigset_bypass,
       "a handler installed after init with `sigset()`, `ssignal()`, "
       "`signal()`, `bsd_signal()`, `sysv_signal()`, `__sysv_signal()` "
       "(`signal()` under `-std=c11`) or `sigignore()` replaces the "
       "library's entry point in the kernel (no fault report; on pkey an "
       "unwrapped handler); `siginterrupt()` leaves the flags the library "
       "keeps stale")
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
		if (!wraps_all || installers[i].ignores)
			continue;
		installers[i].install(SIGUSR1, program_handler);
		if (kernel_handler(SIGUSR1) != entry)
			attack_report(ATTACK_OPEN, "%s() unwrapped SIGUSR1",
				      installers[i].name);
	}
	installers[0].install(SIGSEGV, program_handler);
	check_siginterrupt(SIGSEGV);
	if (wraps_all) {
		installers[0].install(SIGUSR1, program_handler);
		check_siginterrupt(SIGUSR1);
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
