// SPDX-License-Identifier: MIT
/*
 * A missed write site says what happened (rarewrite-porting(7), step 7): a
 * store to protected memory prints one line naming the address, the object as
 * symbol+offset (static symbols included), the pc as symbol+offset and the
 * fix, and the process still dies by SIGSEGV. Faults the library does not
 * own reach the program's handler unchanged, whether it was installed
 * before or after rare_write_init(), with sigaction() or signal().
 */
#define _GNU_SOURCE
#include <errno.h>
#include <execinfo.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>

#include "harness.h"
#include "testutil.h"

struct fault_cfg {
	long a;
	long b; /* the store hits b: offset 0x8 */
};
static struct fault_cfg fault_target __wr_rare __attribute__((aligned(4096)));

static volatile long fault_target_value;

/* Not inlined, static: the pc must be named from .symtab. */
static __attribute__((noinline)) void fault_store_fn(void *arg)
{
	(void)arg;
	*(volatile long *)&fault_target.b = 0x77;
}

static const char prefix[] = "rarewrite: write to protected memory at 0x";
static const char fix[] = ": write it with rare_write() or inside a window\n";

/* One line: the prefix, then the address, ..., then the fix. */
static void check_report(const char *msg, const void *addr, const char *object,
			 const char *pc)
{
	char want[128];

	char obj[128];

	/* The object is named with the base name of the file holding it:
	 * "run" here, "run-static" in the VM. */
	snprintf(obj, sizeof(obj), object, program_invocation_short_name);
	object = obj;
	if (strncmp(msg, prefix, strlen(prefix)) || !strstr(msg, object) ||
	    !strstr(msg, pc))
		fprintf(stderr, "report: '%s' (want %s, %s)\n", msg, object,
			pc);
	CHECK(strncmp(msg, prefix, strlen(prefix)) == 0);
	snprintf(want, sizeof(want), "at %p (", addr);
	CHECK(strstr(msg, want));
	CHECK(strstr(msg, object));
	CHECK(strstr(msg, pc));
	CHECK(strlen(msg) > strlen(fix));
	CHECK(!strcmp(msg + strlen(msg) - strlen(fix), fix));
	CHECK(strchr(msg, '\n') == msg + strlen(msg) - 1);
}

TEST(fault_report_names_section_object_and_pc, EXPECT_PASS)
{
	char msg[1024];
	int status;

	init();
	status = run_captured(fault_store_fn, NULL, msg, sizeof(msg));
	CHECK(child_killed_by(status) == SIGSEGV);
	check_report(msg, &fault_target.b, "(fault_target+0x8 in %s) by pc ",
		     "by pc fault_store_fn+0x");
}

static void *pool_obj;

static void pool_store(void *arg)
{
	(void)arg;
	((volatile long *)pool_obj)[2] = 1;
}

TEST(fault_report_names_pool, EXPECT_PASS)
{
	struct rare_pool *pool;
	char msg[1024], want[64];
	int status;

	init();
	pool = rare_pool_create(1 << 16);
	CHECK(pool);
	pool_obj = rare_alloc(pool, 64);
	CHECK(pool_obj);
	status = run_captured(pool_store, NULL, msg, sizeof(msg));
	CHECK(child_killed_by(status) == SIGSEGV);
	snprintf(want, sizeof(want), "(pool %p+0x", (void *)pool);
	check_report(msg, (long *)pool_obj + 2, want, "by pc pool_store+0x");
}

/* Stores the library does not own: a read-only page of the program's. */
static void *foreign_page(void)
{
	void *p = mmap(NULL, page_size(), PROT_READ,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	CHECK(p != MAP_FAILED);
	return p;
}

TEST(fault_not_ours_is_silent_default_death, EXPECT_PASS)
{
	char msg[1024];
	int status;

	init();
	status = run_captured(store_long, foreign_page(), msg, sizeof(msg));
	CHECK(child_killed_by(status) == SIGSEGV);
	CHECK(msg[0] == 0);
}

static void *handler_expects;

static void exiting_handler(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	/* 42: the fault it was meant for; 43: another */
	_exit(sig == SIGSEGV && si->si_addr == handler_expects ? 42 : 43);
}

static void install_exiting(void)
{
	struct sigaction sa = {.sa_sigaction = exiting_handler,
			       .sa_flags = SA_SIGINFO};

	sigemptyset(&sa.sa_mask);
	CHECK(sigaction(SIGSEGV, &sa, NULL) == 0);
}

static void expect_handler_exit(void (*fn)(void *), void *arg, int code,
				bool reported)
{
	char msg[1024];
	int status = run_captured(fn, arg, msg, sizeof(msg));

	if (!WIFEXITED(status) || WEXITSTATUS(status) != code)
		fprintf(stderr, "status %#x, want exit %d: '%s'\n", status,
			code, msg);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == code);
	CHECK(reported ? strncmp(msg, prefix, strlen(prefix)) == 0
		       : msg[0] == 0);
}

TEST(fault_handler_before_init_gets_foreign_faults, EXPECT_PASS)
{
	handler_expects = foreign_page();
	install_exiting();
	init();
	expect_handler_exit(store_long, handler_expects, 42, false);
}

TEST(fault_handler_after_init_gets_foreign_faults, EXPECT_PASS)
{
	init();
	handler_expects = foreign_page();
	install_exiting();
	expect_handler_exit(store_long, handler_expects, 42, false);
}

/* A crash reporter installed after init still runs for a protected
 * store, after the library's line. */
TEST(fault_handler_after_init_runs_after_report, EXPECT_PASS)
{
	init();
	handler_expects = &fault_target.b;
	install_exiting();
	expect_handler_exit(fault_store_fn, NULL, 42, true);
}

static void plain_handler(int sig)
{
	_exit(sig == SIGSEGV ? 44 : 45);
}

TEST(fault_signal_after_init_is_chained, EXPECT_PASS)
{
	init();
	CHECK(signal(SIGSEGV, plain_handler) != SIG_ERR);
	expect_handler_exit(store_long, foreign_page(), 44, false);
	expect_handler_exit(fault_store_fn, NULL, 44, true);
}

/* A handler that returns from a protected store: the process still dies
 * by SIGSEGV (the store would only fault again), reported once. */
static void returning_handler(int sig)
{
	(void)sig;
}

TEST(fault_returning_handler_still_dies, EXPECT_PASS)
{
	char msg[1024];
	int status;

	init();
	CHECK(signal(SIGSEGV, returning_handler) != SIG_ERR);
	status = run_captured(fault_store_fn, NULL, msg, sizeof(msg));
	CHECK(child_killed_by(status) == SIGSEGV);
	check_report(msg, &fault_target.b, "(fault_target+0x8 in %s)",
		     "by pc fault_store_fn+0x");
}

/* sigaction() reports the program's own actions, not the library's. */
TEST(fault_sigaction_reports_program_action, EXPECT_PASS)
{
	struct sigaction sa = {.sa_sigaction = exiting_handler,
			       .sa_flags = SA_SIGINFO},
			 old;
	char msg[1024];

	sigemptyset(&sa.sa_mask);
	init();
	CHECK(sigaction(SIGSEGV, NULL, &old) == 0);
	CHECK(!(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_DFL);
	CHECK(sigaction(SIGSEGV, &sa, &old) == 0);
	CHECK(old.sa_handler == SIG_DFL);
	CHECK(sigaction(SIGSEGV, NULL, &old) == 0);
	CHECK((old.sa_flags & SA_SIGINFO) &&
	      old.sa_sigaction == exiting_handler);
	CHECK((void *)signal(SIGSEGV, SIG_DFL) == (void *)exiting_handler);
	CHECK(signal(SIGSEGV, SIG_IGN) == SIG_DFL);
	/* A sent SIGSEGV follows SIG_IGN; a fault cannot be ignored. */
	CHECK(kill(getpid(), SIGSEGV) == 0);
	expect_segv(store_long, foreign_page());
	CHECK(child_killed_by(run_captured(fault_store_fn, NULL, msg,
					   sizeof(msg))) == SIGSEGV);
	check_report(msg, &fault_target.b, "(fault_target+0x8 in %s)",
		     "by pc fault_store_fn+0x");
}

/* The kernel's rule: a handler of 1 is SIG_IGN whatever the flags say; the
 * library called address 1 for {SIG_IGN, SA_SIGINFO} (a fresh review of
 * e13c7a3). */
TEST(fault_ignored_with_siginfo_is_ignored, EXPECT_PASS)
{
	struct sigaction sa = {.sa_handler = SIG_IGN, .sa_flags = SA_SIGINFO};

	sigemptyset(&sa.sa_mask);
	init();
	CHECK(sigaction(SIGSEGV, &sa, NULL) == 0);
	CHECK(kill(getpid(), SIGSEGV) == 0);
	CHECK(raise(SIGSEGV) == 0);
}

/*
 * The kernel's action for a wrapped signal returns through the library's
 * own restorer (signal.c): an unwinder must still walk from the handler
 * through the signal frame to the function the signal interrupted, as it
 * does through glibc's, whose bytes the restorer has.
 */
static volatile int unwound;
/* The return address into the test from the function that raises: where
 * the walk must arrive. */
static void *volatile raise_return;

static void backtrace_handler(int sig)
{
	void *frames[32];
	int n = backtrace(frames, 32);

	(void)sig;
	for (int i = 0; i < n; i++)
		if (frames[i] == raise_return)
			unwound = 1;
}

static __attribute__((noinline)) void raise_segv(void)
{
	raise_return = __builtin_return_address(0);
	raise(SIGSEGV);
}

TEST(fault_backtrace_unwinds_through_restorer, EXPECT_PASS)
{
	struct sigaction sa = {.sa_handler = backtrace_handler};
	void *warm[2];

	backtrace(warm, 2); /* loads the unwinder outside the handler */
	sigemptyset(&sa.sa_mask);
	init();
	CHECK(sigaction(SIGSEGV, &sa, NULL) == 0);
	raise_segv();
	CHECK(unwound);
}

/* Handlers of other signals keep working, and may read protected data
 * (on pkey they start with reads denied: the library's entry opens them). */
static volatile sig_atomic_t usr1_seen;

static void usr1_reader(int sig)
{
	(void)sig;
	usr1_seen = (sig_atomic_t)fault_target.a;
}

static void usr1_then_exit(void *arg)
{
	(void)arg;
	CHECK(signal(SIGSEGV, plain_handler) != SIG_ERR); /* no repair... */
	CHECK(signal(SIGUSR1, usr1_reader) != SIG_ERR);
	raise(SIGUSR1);
	_exit(usr1_seen == 31 ? 0 : 46);
}

TEST(fault_handler_after_init_reads_protected, EXPECT_PASS)
{
	init();
	rare_write(fault_target.a, 31L);
	CHECK(run_in_child(usr1_then_exit, NULL) == CHILD_OK);
}
