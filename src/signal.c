// SPDX-License-Identifier: MIT
/*
 * signal.c - the library's SIGSEGV handler stays first; the program's
 * handlers run behind it.
 *
 * From rare_write_init() on, the kernel's SIGSEGV action is the library's
 * handler: a store to protected memory is reported (fault.c) before the
 * process dies, a fault a backend repairs (pkey reads) is retried, and
 * every other fault goes to the handler the program had, unchanged. A
 * crash reporter that installs its handler after init would replace ours,
 * so sigaction(), signal(), bsd_signal() and sysv_signal() are interposed
 * (like pthread_create() in backend/pkey.c): for a signal the library
 * wraps, the program's action is kept here, the kernel gets the library's
 * entry point with the program's mask and flags, and sigaction() reports
 * the program's action back as if nothing stood between.
 *
 * On a backend with a signal_enter hook (pkey) every handler of the
 * program, for any signal, is wrapped: a handler starts with the kernel's
 * init_pkru, which denies even reads of protected data, and the hook gives
 * it "read yes, write no" before the program's code runs. Signals the
 * library does not wrap go straight to the C library.
 *
 * The real sigaction is glibc's __sigaction, exported under that name by
 * both libc.so and libc.a (sigaction itself is a weak alias there).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "rarewrite.h"
#include "internal.h"

extern int __sigaction(int sig, const struct sigaction *act,
		       struct sigaction *old);

/*
 * The program's action per wrapped signal. Handlers read it without a lock:
 * writers fill the slot not in use and then flip the index, so a handler
 * sees one whole action or the other.
 */
static struct {
	unsigned idx;
	struct sigaction slot[2];
} actions[NSIG];
static bool wrapped[NSIG]; /* the kernel's action is ours */
static bool wrap_segv, wrap_all;
static pthread_mutex_t signal_lock = PTHREAD_MUTEX_INITIALIZER;

static bool wrappable(int sig)
{
	return sig > 0 && sig < NSIG && sig != SIGKILL && sig != SIGSTOP;
}

static bool should_wrap(int sig)
{
	return wrappable(sig) && ((sig == SIGSEGV && wrap_segv) || wrap_all);
}

static struct sigaction program_action(int sig)
{
	return actions[sig]
		.slot[__atomic_load_n(&actions[sig].idx, __ATOMIC_ACQUIRE) & 1];
}

static void set_program_action(int sig, const struct sigaction *sa)
{
	unsigned next = (actions[sig].idx + 1) & 1;

	actions[sig].slot[next] = *sa;
	__atomic_store_n(&actions[sig].idx, next, __ATOMIC_RELEASE);
}

static bool is_function(const struct sigaction *sa)
{
	return (sa->sa_flags & SA_SIGINFO)
		       ? sa->sa_sigaction != NULL
		       : sa->sa_handler != SIG_DFL && sa->sa_handler != SIG_IGN;
}

/* Die by @sig with the default action: unblock it, send it to ourselves. */
static __attribute__((noreturn)) void die_by(int sig)
{
	struct sigaction dfl = {.sa_handler = SIG_DFL};
	sigset_t set;

	sigemptyset(&dfl.sa_mask);
	__sigaction(sig, &dfl, NULL);
	sigemptyset(&set);
	sigaddset(&set, sig);
	for (;;) {
		syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), sig);
		sigprocmask(SIG_UNBLOCK, &set, NULL);
	}
}

/* Run the program's action for @sig. */
static void call_program(int sig, siginfo_t *si, void *uc, bool fault)
{
	struct sigaction sa = program_action(sig);

	if (is_function(&sa)) {
		if (sa.sa_flags & SA_RESETHAND) { /* one-shot, as asked */
			struct sigaction dfl = {.sa_handler = SIG_DFL};

			set_program_action(sig, &dfl);
		}
		if (sa.sa_flags & SA_SIGINFO)
			sa.sa_sigaction(sig, si, uc);
		else
			sa.sa_handler(sig);
		return;
	}
	/* SIG_IGN ignores a sent signal; a fault cannot be ignored (the
	 * kernel would force the default action on it). */
	if (sa.sa_handler == SIG_IGN && !fault)
		return;
	die_by(sig);
}

static void entry(int sig, siginfo_t *si, void *uc)
{
	int saved_errno = errno;
	bool fault = sig == SIGSEGV && si && si->si_code > 0;

	if (sig == SIGSEGV && rw_backends_fault(si, uc)) {
		errno = saved_errno;
		return; /* repaired: the access is retried */
	}
	rw_backends_signal_enter();
	if (sig == SIGSEGV && rw_fault_report(si, uc)) {
		/* A crash reporter still runs, and may longjmp away; if it
		 * returns, the store would only fault again. */
		call_program(sig, si, uc, true);
		die_by(sig);
	}
	call_program(sig, si, uc, fault);
	errno = saved_errno;
}

/* Point the kernel at entry() for @sig with the program's mask and flags,
 * or give it the program's action when there is nothing to wrap. */
static int install(int sig, const struct sigaction *prog)
{
	struct sigaction k = *prog;

	if (sig != SIGSEGV && !is_function(prog)) {
		wrapped[sig] = false;
		return __sigaction(sig, prog, NULL);
	}
	k.sa_sigaction = entry;
	k.sa_flags |= SA_SIGINFO;
	if (sig == SIGSEGV) /* ours even when the program's is one-shot */
		k.sa_flags = (k.sa_flags & ~SA_RESETHAND) | SA_ONSTACK;
	wrapped[sig] = true;
	return __sigaction(sig, &k, NULL);
}

static void lock_signals(sigset_t *saved)
{
	sigset_t all;

	/* A handler on this thread must not find the lock taken. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, saved);
	pthread_mutex_lock(&signal_lock);
}

static void unlock_signals(const sigset_t *saved)
{
	pthread_mutex_unlock(&signal_lock);
	pthread_sigmask(SIG_SETMASK, saved, NULL);
}

/* Take over @sig: remember the program's current action, install ours. */
static void take_over(int sig)
{
	struct sigaction cur;

	if (__sigaction(sig, NULL, &cur))
		return;
	if (wrapped[sig] ||
	    (cur.sa_flags & SA_SIGINFO && cur.sa_sigaction == entry))
		return;
	set_program_action(sig, &cur);
	if (install(sig, &cur))
		rw_die("rare_write_init", NULL,
		       "cannot install the signal %d handler", sig);
}

void rw_signal_activate(void)
{
	sigset_t saved;

	rw_symbolize_prepare();
	lock_signals(&saved);
	wrap_segv = true;
	take_over(SIGSEGV);
	if (rw_backends_wrap_signals() && !wrap_all) {
		wrap_all = true;
		for (int sig = 1; sig < NSIG; sig++)
			if (wrappable(sig) && sig != SIGSEGV)
				take_over(sig);
	}
	unlock_signals(&saved);
}

__attribute__((visibility("default"))) int
sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	sigset_t saved;
	int err = 0;

	if (!should_wrap(sig))
		return __sigaction(sig, act, old);
	lock_signals(&saved);
	if (!should_wrap(sig)) {
		unlock_signals(&saved);
		return __sigaction(sig, act, old);
	}
	if (!wrapped[sig] && sig != SIGSEGV) {
		/* Not taken over yet (a race with activation): now. */
		struct sigaction cur;

		if (!__sigaction(sig, NULL, &cur))
			set_program_action(sig, &cur);
	}
	if (old)
		*old = program_action(sig);
	if (act) {
		set_program_action(sig, act);
		err = install(sig, act);
	}
	unlock_signals(&saved);
	return err;
}

static sighandler_t set_handler(int sig, sighandler_t h, int flags)
{
	struct sigaction sa = {.sa_handler = h, .sa_flags = flags}, old;

	if (h == SIG_ERR || !wrappable(sig)) {
		errno = EINVAL;
		return SIG_ERR;
	}
	sigemptyset(&sa.sa_mask);
	if (!(flags & SA_NODEFER))
		sigaddset(&sa.sa_mask, sig);
	if (sigaction(sig, &sa, &old))
		return SIG_ERR;
	return old.sa_handler;
}

/* glibc's signal() has BSD semantics: persistent, restarting, masked. */
__attribute__((visibility("default"))) sighandler_t signal(int sig,
							   sighandler_t h)
{
	return set_handler(sig, h, SA_RESTART);
}

__attribute__((visibility("default"))) sighandler_t bsd_signal(int sig,
							       sighandler_t h)
{
	return set_handler(sig, h, SA_RESTART);
}

__attribute__((visibility("default"))) sighandler_t sysv_signal(int sig,
								sighandler_t h)
{
	return set_handler(sig, h, SA_RESETHAND | SA_NODEFER);
}
