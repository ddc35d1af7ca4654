// SPDX-License-Identifier: MIT
/*
 * owner.c - is this the process that owns the table? Asked before every
 * write on the backends whose views a raw fork() child would share.
 *
 * A child made by a raw fork() (no fork handler ran) shares the parent's
 * table memfd and memfd-backed views: a record it committed would redirect
 * the parent's later writes (attack 14c), a write through the API would
 * land in the parent's data. getpid() answers that, but costs a system call
 * per write (glibc no longer caches the pid). So the owner holds a token
 * page instead: private anonymous memory, MADV_WIPEONFORK, read-only and
 * mseal()ed where the kernel has it. Its address and the token it holds
 * are in the table, which no store reaches (vault.c). Any child the kernel
 * makes, with or without fork handlers, finds the page zero-filled, so it
 * fails the check; the owner finds its token there, with one load.
 *
 * No store recreates the token in a child: the page is read-only, and only
 * mprotect() (a system call, and refused for a sealed page) could change
 * that; the address is the table's, not one a store can move. The fork
 * child's handler (core.c) claims a new page of its own while its private
 * table copy is still writable. A thread shares the page (and the address
 * space), as does a clone(CLONE_VM) child such as vfork()'s: those write
 * the same memory the owner would, so they may.
 *
 * Kernels without MADV_WIPEONFORK (before 4.14) keep the table's owner pid
 * instead and ask getpid() per write, as before.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"
#include "table.h" /* struct rw_owner */

#ifndef MADV_WIPEONFORK
#define MADV_WIPEONFORK 18 /* Linux 4.14 */
#endif
#ifndef SYS_mseal
#define SYS_mseal 462 /* Linux 6.10 */
#endif

/* A read-only, sealed page holding @token that every child sees zeroed, or
 * NULL where the kernel cannot wipe it on fork. */
static const uint64_t *token_page(uint64_t token)
{
	size_t len = rw_page_size;
	uint64_t *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	*p = token;
	if (madvise(p, len, MADV_WIPEONFORK) || mprotect(p, len, PROT_READ) ||
	    (syscall(SYS_mseal, p, len, 0UL) && errno != ENOSYS)) {
		munmap(p, len);
		return NULL;
	}
	return p;
}

/*
 * Make the calling process @o's owner: at the first seal, and in the fork
 * child, while @o is writable by stores.
 */
void rw_owner_claim(struct rw_owner *o)
{
	pid_t pid = getpid();
	/* Never 0, which is what a child reads; a new one per owner. */
	uint64_t token = (uint64_t)(uint32_t)pid << 32 | 1;

	o->pid = pid;
	o->token = token;
	/* The parent's page stays, zeroed (sealed, it could not go; and
	 * before the first seal the old address is a store's to choose). */
	o->token_page = token_page(token);
}

bool rw_owner_is_me(const struct rw_owner *o)
{
	const volatile uint64_t *page = o->token_page;

	if (page)
		return *page == o->token;
	return (int64_t)getpid() == o->pid;
}
