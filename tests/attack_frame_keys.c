// SPDX-License-Identifier: MIT
/*
 * attack_frame_keys.c - scenario 24 (pkey): whose keys a signal frame
 * decides.
 *
 * On return from a handler the library sets its own keys in the frame's
 * saved PKRU from the thread's record; every other key keeps what the
 * frame says, since the library cannot know what the program meant for a
 * key it does not own (a handler of the program may open its own key in
 * the frame on purpose, as the library does for read repairs). 24 has a
 * handler write 0 (every key open) into its frame's PKRU: the library's
 * data must stay closed; a key the program allocated itself follows the
 * frame, which is what the cell records as open.
 */
#define _GNU_SOURCE
#include <cpuid.h>
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>

#include "attack.h"

#define XFEATURE_PKRU 9

static uint64_t kvictim[2] __wr_rare __attribute__((aligned(16)));
static unsigned frame_pkru_offset;

static void open_every_key(int sig, siginfo_t *si, void *p)
{
	ucontext_t *uc = p;
	unsigned char *fx = (unsigned char *)uc->uc_mcontext.fpregs;

	(void)sig;
	(void)si;
	*(uint64_t *)(fx + 512) |= 1ULL << XFEATURE_PKRU; /* XSTATE_BV */
	*(uint32_t *)(fx + frame_pkru_offset) = 0;
}

ATTACK("24", frame_other_keys,
       "a handler writes 0 (every key open) into its frame's saved PKRU: "
       "the library's keys are closed again on return; a key the program "
       "allocated itself takes what the frame says")
{
	struct sigaction sa = {.sa_sigaction = open_every_key,
			       .sa_flags = SA_SIGINFO};
	unsigned a, b, c, d;
	uint64_t *own;
	bool ours_open, own_open;
	int key;

	if (strcmp(rare_write_backend(), "pkey"))
		attack_report(ATTACK_NA, "no PKRU: not the pkey backend");
	__cpuid_count(0xd, XFEATURE_PKRU, a, b, c, d);
	(void)a;
	(void)c;
	(void)d;
	frame_pkru_offset = b;
	own = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	key = pkey_alloc(0, PKEY_DISABLE_WRITE);
	if (own == MAP_FAILED || key < 0 ||
	    pkey_mprotect(own, 4096, PROT_READ | PROT_WRITE, key))
		attack_report(ATTACK_ERROR, "the program's own key: %s",
			      strerror(errno));
	if (attack_try_store64(own, 1))
		attack_report(ATTACK_ERROR, "control: the program's key is "
					    "writable before the handler");
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	attack_begin();
	raise(SIGUSR1);
	/* The program's key first: a store that faults leaves by
	 * siglongjmp() with the handler's PKRU, which would hide what the
	 * frame restored. */
	own_open = attack_try_store64(own, ATTACK_MARKER);
	ours_open = attack_try_store64(&kvictim[1], ATTACK_MARKER) &&
		    attack_load64(&kvictim[1]) == ATTACK_MARKER;
	if (ours_open)
		attack_report(ATTACK_ERROR,
			      "the library's key stayed open (see 11b)");
	if (own_open)
		attack_report(ATTACK_OPEN,
			      "the library's keys closed; the "
			      "program's key %d open as the "
			      "frame said",
			      key);
	attack_report(ATTACK_BLOCKED, "every key closed");
}
