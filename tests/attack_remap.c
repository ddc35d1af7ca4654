// SPDX-License-Identifier: MIT
/*
 * attack_remap.c - scenario 6: an attacker who can make system calls
 * re-opens the read-only view of the sealed section with mprotect (or
 * pkey_mprotect), munmap + mmap, or mremap. mseal(2) stops all three.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "attack.h"

static uint64_t rvictim[2] __wr_rare __attribute__((aligned(16))) = {7, 8};

static void *victim_page(void)
{
	return (void *)((uintptr_t)&rvictim[0] & ~(uintptr_t)4095);
}

ATTACK("6a", reprotect, "`mprotect` (or `pkey_mprotect`) the view writable")
{
	void *page = victim_page();
	int e1 = 0, e2 = 0;

	attack_begin();
	if (mprotect(page, 4096, PROT_READ | PROT_WRITE))
		e1 = errno;
	else if (attack_try_store64(&rvictim[0], ATTACK_MARKER))
		attack_verdict(attack_load64(&rvictim[0]) == ATTACK_MARKER,
			       "store after mprotect");
#ifdef SYS_pkey_mprotect
	if (syscall(SYS_pkey_mprotect, page, 4096, PROT_READ | PROT_WRITE, 0))
		e2 = errno;
	else if (attack_try_store64(&rvictim[0], ATTACK_MARKER))
		attack_verdict(attack_load64(&rvictim[0]) == ATTACK_MARKER,
			       "store after pkey_mprotect");
#endif
	attack_report(ATTACK_BLOCKED, "mprotect: %s, pkey_mprotect: %s",
		      e1 ? strerror(e1) : "ok but store faulted",
		      e2 ? strerror(e2) : "ok but store faulted");
}

/* Put a private writable copy where the view was. */
static void replace_with_copy(void *page, const void *contents)
{
	void *p = mmap(page, 4096, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);

	if (p == MAP_FAILED)
		attack_report(ATTACK_BLOCKED, "mmap over the view: %s",
			      strerror(errno));
	memcpy(page, contents, 4096);
	attack_store64(&rvictim[0], ATTACK_MARKER);
	attack_verdict(attack_load64(&rvictim[0]) == ATTACK_MARKER,
		       "store to the replacement");
}

ATTACK("6b", remap_over, "`munmap` + `mmap` a writable copy over the view")
{
	static char copy[4096];
	void *page = victim_page();

	memcpy(copy, page, sizeof(copy));
	attack_begin();
	if (munmap(page, 4096))
		attack_report(ATTACK_BLOCKED, "munmap: %s", strerror(errno));
	replace_with_copy(page, copy);
}

ATTACK("6c", mremap_away, "`mremap` the view away, map a writable copy")
{
	void *page = victim_page();
	void *scratch =
		mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (scratch == MAP_FAILED)
		attack_report(ATTACK_ERROR, "mmap scratch failed");
	attack_begin();
	if (mremap(page, 4096, 4096, MREMAP_MAYMOVE | MREMAP_FIXED, scratch) ==
	    MAP_FAILED)
		attack_report(ATTACK_BLOCKED, "mremap: %s", strerror(errno));
	replace_with_copy(page, scratch);
}
