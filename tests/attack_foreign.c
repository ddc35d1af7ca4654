// SPDX-License-Identifier: MIT
/*
 * attack_foreign.c - scenarios 21: control taken from writable memory the
 * library does not own.
 *
 * 21a moves the C library's load bias in the loader's list of objects (a
 * plain store to the loader's heap) so that a lookup of pthread_create in
 * it lands on a function of the attacker's, then has the program create a
 * thread: the library must call the C library's pthread_create it found
 * before, not whatever a lookup finds now.
 *
 * 21b rewrites every copy of the library's fork prepare hook in writable
 * memory (the C library's at-fork list among them) to rare_write_begin,
 * then has the program fork: the parent must not come out of fork() with
 * a window open.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "attack.h"

static uint64_t fvictim[2] __wr_rare __attribute__((aligned(16)));

static volatile int gadget_ran;

static int gadget_create(pthread_t *t, const pthread_attr_t *a,
			 void *(*fn)(void *), void *arg)
{
	(void)t;
	(void)a;
	(void)fn;
	(void)arg;
	gadget_ran = 1;
	return EAGAIN;
}

static void *idle(void *arg)
{
	return arg;
}

/* libc's entry in the loader's list, or NULL in a static program. */
static struct link_map *libc_map(void)
{
	struct link_map *lm = NULL;
	void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);

	if (!libc || dlinfo(libc, RTLD_DI_LINKMAP, &lm))
		return NULL;
	return lm;
}

ATTACK("21a", dlsym_bias,
       "the C library's load bias in the loader's (writable) list of objects "
       "is moved so that a lookup of `pthread_create` finds the attacker's "
       "function; the program then creates a thread")
{
	struct link_map *lm = libc_map();
	void *real;
	uintptr_t delta;
	pthread_t t;
	int err;

	if (!lm)
		/* A static program links libc's pthread_create: no list. */
		attack_report(ATTACK_BLOCKED, "no loader list (static)");
	real = dlvsym(dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD),
		      "pthread_create", "GLIBC_2.34");
	if (!real)
		attack_report(ATTACK_ERROR, "no pthread_create in libc");
	delta = (uintptr_t)gadget_create - (uintptr_t)real;
	attack_begin();
	attack_store64(&lm->l_addr, (uint64_t)(lm->l_addr + delta));
	err = pthread_create(&t, NULL, idle, NULL);
	attack_store64(&lm->l_addr, (uint64_t)(lm->l_addr - delta));
	if (!err)
		pthread_join(t, NULL);
	attack_verdict(gadget_ran, "pthread_create through a moved load bias");
}

/* Every word equal to @from in the process's writable mappings (but the
 * stack of this scan, and reservations of 1 GiB and more: a sanitizer's
 * shadow) becomes @to; how many. Uninstrumented: under AddressSanitizer
 * a checked load of shadow memory faults. */
__attribute__((no_sanitize_address)) static unsigned
rewrite_everywhere(uintptr_t from, uintptr_t to)
{
	FILE *maps = fopen("/proc/self/maps", "r");
	char line[512];
	unsigned n = 0;

	if (!maps)
		attack_report(ATTACK_ERROR, "no /proc/self/maps");
	while (fgets(line, sizeof(line), maps)) {
		uintptr_t lo, hi;
		char perms[5];

		if (sscanf(line, "%lx-%lx %4s", &lo, &hi, perms) != 3 ||
		    perms[0] != 'r' || perms[1] != 'w' || strstr(line, "[v") ||
		    strstr(line, "[stack]") || hi - lo >= (1UL << 30))
			continue;
		for (uintptr_t *p = (uintptr_t *)lo; p < (uintptr_t *)hi; p++)
			if (*p == from) {
				attack_store64(p, to);
				n++;
			}
	}
	fclose(maps);
	return n;
}

ATTACK("21b", atfork_hook,
       "every copy of the library's fork prepare hook in writable memory "
       "(the C library's at-fork list) is pointed at `rare_write_begin`; "
       "after the program's `fork()` the parent stores")
{
	void *prepare = attack_lib_func("fork_prepare");
	int status;
	pid_t pid;

	if (!prepare)
		attack_report(ATTACK_ERROR, "no fork_prepare in the library");
	attack_begin();
	if (!rewrite_everywhere((uintptr_t)prepare,
				(uintptr_t)rare_write_begin))
		attack_report(ATTACK_BLOCKED,
			      "no writable copy of the prepare hook");
	fflush(NULL);
	pid = fork();
	if (!pid)
		_exit(0);
	if (pid > 0)
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
	attack_verdict(attack_try_store64(&fvictim[1], ATTACK_MARKER) &&
			       attack_load64(&fvictim[1]) == ATTACK_MARKER,
		       "store after a fork");
}
