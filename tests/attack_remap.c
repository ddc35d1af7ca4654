// SPDX-License-Identifier: MIT
/*
 * attack_remap.c - scenario 6: an attacker who can make system calls
 * re-opens the read-only view of the sealed section with mprotect (or
 * pkey_mprotect), munmap + mmap, or mremap. mseal(2) stops all three.
 * Or it writes the memfd behind the view through its descriptor, which
 * only closing (process) or having none (pkey, mprotect) stops.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

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

/* The inode behind the mapping that holds @addr, from /proc/self/maps
 * (0: anonymous, or not found). */
static unsigned long mapping_inode(const void *addr)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	unsigned long ino = 0;

	if (!f)
		attack_report(ATTACK_ERROR, "cannot read /proc/self/maps");
	while (fgets(line, sizeof(line), f)) {
		uintptr_t lo, hi;
		unsigned long i;

		if (sscanf(line, "%lx-%lx %*s %*s %*s %lu", &lo, &hi, &i) ==
			    3 &&
		    (uintptr_t)addr >= lo && (uintptr_t)addr < hi) {
			ino = i;
			break;
		}
	}
	fclose(f);
	return ino;
}

ATTACK("6d", write_memfd,
       "write the view's memfd through its descriptor (/proc/self/fd: "
       "`pwrite`, or `mmap` it writable)")
{
	uint64_t v = ATTACK_MARKER;
	unsigned long ino = mapping_inode(&rvictim[0]);
	off_t off = (off_t)((uintptr_t)&rvictim[0] -
			    (uintptr_t)__start_rarewrite_data);
	char path[64], link[256];
	int found = -1, e1 = 0, e2 = 0;

	attack_begin();
	/* Only the descriptor of the view's own memfd, so that a crash of
	 * the library cannot pass for a blocked attack. */
	for (int fd = 0; ino && fd < 1024 && found < 0; fd++) {
		struct stat st;
		ssize_t n;

		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		n = readlink(path, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = 0;
		if (!strncmp(link, "/memfd:", 7) && !fstat(fd, &st) &&
		    st.st_ino == ino)
			found = fd;
	}
	if (found < 0)
		attack_report(ATTACK_BLOCKED,
			      "no descriptor of the view's memfd");
	if (pwrite(found, &v, sizeof(v), off) == sizeof(v))
		attack_verdict(attack_load64(&rvictim[0]) == ATTACK_MARKER,
			       "pwrite on the memfd");
	e1 = errno;
	char *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, found,
		       off & ~(off_t)4095);
	if (p != MAP_FAILED) {
		attack_store64(p + (off & 4095), v);
		attack_verdict(attack_load64(&rvictim[0]) == ATTACK_MARKER,
			       "store through a writable mapping of the memfd");
	}
	e2 = errno;
	attack_report(ATTACK_BLOCKED, "pwrite: %s, mmap: %s", strerror(e1),
		      strerror(e2));
}
