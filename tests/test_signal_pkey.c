// SPDX-License-Identifier: MIT
/*
 * pkey and signal frames: the saved PKRU that sigreturn restores is made,
 * when the handler returns, what the library's record says the interrupted
 * code held, whatever another thread wrote there while the handler ran
 * (issue 19.4; the race after that check is attack 11b). pkey only: make
 * check-vm runs it.
 */
#define _GNU_SOURCE
#include <cpuid.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <ucontext.h>

#include "harness.h"
#include "testutil.h"

static long fp_value __wr_rare;

static unsigned pkru_off;
static ucontext_t *volatile published;
static volatile int forged; /* 0 waiting, 1 frame published, 2 forged */

static void *forger(void *unused)
{
	(void)unused;
	while (forged != 1)
		;
	{
		unsigned char *fx =
			(unsigned char *)published->uc_mcontext.fpregs;

		*(uint64_t *)(fx + 512) |= 1ULL << 9; /* PKRU in use */
		*(uint32_t *)(fx + pkru_off) = 0;     /* every key open */
	}
	forged = 2;
	return NULL;
}

static void waiting_handler(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	published = uc;
	forged = 1;
	while (forged != 2)
		;
}

static void forge_once(void)
{
	pthread_t t;

	forged = 0;
	CHECK(!pthread_create(&t, NULL, forger, NULL));
	raise(SIGUSR1);
	pthread_join(t, NULL);
	CHECK(forged == 2);
}

TEST(signal_forged_frame_pkru_is_corrected, EXPECT_PASS)
{
	struct sigaction sa = {.sa_sigaction = waiting_handler,
			       .sa_flags = SA_SIGINFO};
	unsigned a, b, c, d;

	init();
	if (strcmp(rare_write_backend(), "pkey"))
		SKIP("no PKRU: not the pkey backend");
	__cpuid_count(0xd, 9, a, b, c, d);
	(void)a;
	(void)c;
	(void)d;
	pkru_off = b;
	sigemptyset(&sa.sa_mask);
	CHECK(!sigaction(SIGUSR1, &sa, NULL));
	/* At rest: the frame is made "nothing open" (a forked child keeps
	 * its parent's PKRU). */
	forge_once();
	CHECK(child_killed_by(run_in_child(store_long, &fp_value)) == SIGSEGV);
	rare_write(fp_value, 1L);
	CHECK(child_killed_by(run_in_child(store_long, &fp_value)) == SIGSEGV);
	/* In a map: its key comes back open, the others shut. */
	{
		struct rare_write_mapping m =
			rare_write_map(&fp_value, sizeof(fp_value));

		forge_once();
		*(long *)m.addr = 2;
		rare_write_unmap(m);
	}
	CHECK(fp_value == 2);
	CHECK(child_killed_by(run_in_child(store_long, &fp_value)) == SIGSEGV);
	/* In a window: every key of the library open, the state key not. */
	rare_write_begin();
	forge_once();
	fp_value = 3;
	rare_write_end();
	CHECK(fp_value == 3);
	CHECK(child_killed_by(run_in_child(store_long, &fp_value)) == SIGSEGV);
}
