// SPDX-License-Identifier: MIT
/*
 * attack_fork_alias.c - scenarios 4 and 5: a forked child trying to reach
 * the parent's protected memory, and writable aliases: a stale one kept
 * after rare_write_unmap(), a live one found through /proc/self/maps.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "attack.h"

static uint64_t fvictim __wr_rare;
static uint64_t avictim[2] __wr_rare __attribute__((aligned(16)));

/* Overwrite every inherited memfd (but the one called @spare) with 0x41
 * bytes. */
static unsigned smash_memfds_but(const char *spare)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	unsigned n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d))) {
		char path[64], target[256];
		struct stat st;
		ssize_t len;
		int fd = atoi(e->d_name);

		if (e->d_name[0] == '.' || fd == dirfd(d))
			continue;
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		len = readlink(path, target, sizeof(target) - 1);
		if (len <= 0)
			continue;
		target[len] = 0;
		if (strncmp(target, "/memfd:", 7) || fstat(fd, &st) ||
		    st.st_size > (64 << 20) || (spare && strstr(target, spare)))
			continue;
		for (off_t off = 0; off < st.st_size; off += 4096) {
			static char buf[4096];

			memset(buf, 0x41, sizeof(buf));
			if (pwrite(fd, buf, sizeof(buf), off) > 0)
				n++;
		}
	}
	closedir(d);
	return n;
}

static unsigned smash_memfds(void)
{
	return smash_memfds_but(NULL);
}

ATTACK("4", fork_child_writes,
       "a forked child writes: through the API, every inherited memfd, its "
       "own mprotect")
{
	struct rare_pool *pool = rare_pool_create(1 << 16);
	uint64_t *obj = pool ? rare_alloc(pool, 64) : NULL;
	int status;
	pid_t pid;

	if (!obj)
		attack_report(ATTACK_ERROR, "pool setup failed");
	attack_begin();
	pid = fork();
	if (pid < 0)
		attack_report(ATTACK_ERROR, "fork failed");
	if (!pid) {
		uintptr_t page = (uintptr_t)&fvictim & ~(uintptr_t)4095;

		rare_write(fvictim, ATTACK_MARKER);
		rare_write(*obj, ATTACK_MARKER);
		smash_memfds();
		if (!mprotect((void *)page, 4096, PROT_READ | PROT_WRITE))
			attack_try_store64(&fvictim, ATTACK_MARKER);
		_exit(0);
	}
	waitpid(pid, &status, 0);
	attack_verdict(attack_load64(&fvictim) == ATTACK_MARKER ||
			       attack_load64(obj) == ATTACK_MARKER,
		       "the child's writes in the parent");
}

/* A child made by the raw system call: no fork handler runs in it. */
static pid_t raw_fork(void)
{
	return (pid_t)syscall(SYS_fork);
}

ATTACK("4b", raw_fork_child,
       "a child made by raw `syscall(SYS_fork)` (no fork handlers) writes "
       "the parent's data: views, every inherited memfd, mprotect")
{
	struct rare_pool *pool = rare_pool_create(1 << 16);
	uint64_t *obj = pool ? rare_alloc(pool, 64) : NULL;
	int status;
	pid_t pid;

	if (!obj)
		attack_report(ATTACK_ERROR, "pool setup failed");
	attack_begin();
	pid = raw_fork();
	if (pid < 0)
		attack_report(ATTACK_ERROR, "fork failed");
	if (!pid) {
		uintptr_t page = (uintptr_t)&fvictim & ~(uintptr_t)4095;

		/* The library's table memfd is row 4c. */
		smash_memfds_but("rarewrite-table");
		attack_try_store64(&fvictim, ATTACK_MARKER);
		attack_try_store64(obj, ATTACK_MARKER);
		if (!mprotect((void *)page, 4096, PROT_READ | PROT_WRITE))
			attack_try_store64(&fvictim, ATTACK_MARKER);
		_exit(0);
	}
	waitpid(pid, &status, 0);
	attack_verdict(attack_load64(&fvictim) == ATTACK_MARKER ||
			       attack_load64(obj) == ATTACK_MARKER ||
			       attack_load64(&fvictim) == 0x4141414141414141ULL,
		       "the raw child's writes in the parent");
}

ATTACK("4c", raw_fork_table,
       "a child made by raw `syscall(SYS_fork)` rewrites the parent's region "
       "table with system calls of its own (`pwrite` on the inherited table "
       "memfd; through the API it aborts, 14c)")
{
	uint64_t *table = attack_lib_sym("rw_table");
	/* A word well past the regions in use: harmless if it lands. */
	uint64_t *spare = table ? table + 2048 : NULL;
	uint64_t before;
	int status;
	pid_t pid;

	if (!spare)
		attack_report(ATTACK_ERROR, "no symbol 'rw_table' in the library");
	before = attack_load64(spare);
	attack_begin();
	pid = raw_fork();
	if (pid < 0)
		attack_report(ATTACK_ERROR, "fork failed");
	if (!pid) {
		attack_try_store64(spare, ATTACK_MARKER);
		smash_memfds();
		_exit(0);
	}
	waitpid(pid, &status, 0);
	attack_verdict(attack_load64(spare) != before,
		       "the raw child's write in the parent's table");
}

ATTACK("5a", stale_alias, "store through a stale view after `rare_write_unmap`")
{
	struct rare_write_mapping m =
		rare_write_map(&avictim[0], sizeof(avictim[0]));
	void *stale = m.addr;

	*(uint64_t *)m.addr = 5;
	rare_write_unmap(m);
	if (attack_load64(&avictim[0]) != 5)
		attack_report(ATTACK_ERROR, "the legitimate map did not land");
	attack_begin();
	attack_try_store64(stale, ATTACK_MARKER);
	attack_verdict(attack_load64(&avictim[0]) == ATTACK_MARKER,
		       "store through the stale view");
}

struct alias_hunt {
	int state; /* 1: map open, 2: hunt done */
	unsigned tried;
};

/* Another thread reads /proc/self/maps and writes through every writable
 * mapping that holds avictim[1] or a memfd alias of its offset. */
static void *alias_hunter(void *p)
{
	struct alias_hunt *h = p;
	uintptr_t y = (uintptr_t)&avictim[1];
	uintptr_t y_off = y - (uintptr_t)__start_rarewrite_data;
	char line[512];
	FILE *f;

	while (__atomic_load_n(&h->state, __ATOMIC_ACQUIRE) != 1)
		;
	f = fopen("/proc/self/maps", "r");
	while (f && fgets(line, sizeof(line), f)) {
		unsigned long lo, hi, off;
		char perms[8];

		if (sscanf(line, "%lx-%lx %7s %lx", &lo, &hi, perms, &off) !=
			    4 ||
		    perms[1] != 'w')
			continue;
		if (y >= lo && y < hi) {
			h->tried++;
			attack_try_store64((void *)y, ATTACK_MARKER);
		} else if (strstr(line, "memfd:") && perms[3] == 's' &&
			   y_off >= off && y_off - off < hi - lo) {
			h->tried++;
			attack_try_store64((void *)(lo + y_off - off),
					   ATTACK_MARKER);
		}
	}
	if (f)
		fclose(f);
	__atomic_store_n(&h->state, 2, __ATOMIC_RELEASE);
	return NULL;
}

ATTACK("5b", live_alias,
       "another thread finds a live writable view via /proc/self/maps during "
       "a map")
{
	struct alias_hunt h = {0, 0};
	struct rare_write_mapping m;
	pthread_t t;

	if (pthread_create(&t, NULL, alias_hunter, &h))
		attack_report(ATTACK_ERROR, "pthread_create failed");
	attack_begin();
	m = rare_write_map(&avictim[0], sizeof(avictim[0]));
	__atomic_store_n(&h.state, 1, __ATOMIC_RELEASE);
	while (__atomic_load_n(&h.state, __ATOMIC_ACQUIRE) != 2)
		;
	rare_write_unmap(m);
	pthread_join(t, NULL);
	if (attack_load64(&avictim[1]) == ATTACK_MARKER)
		attack_report(ATTACK_OPEN, "found and wrote through (%u tries)",
			      h.tried);
	attack_report(ATTACK_BLOCKED, "%u writable candidates, none landed",
		      h.tried);
}
