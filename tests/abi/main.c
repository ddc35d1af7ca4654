// SPDX-License-Identifier: MIT
/* Linked against librarewrite (and libc_only.so): calls the interposed
 * functions itself and through a library that knows only libc. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <rarewrite.h>

int libc_only_spawn(void);

static void *nothing(void *arg)
{
	return arg;
}

int main(void)
{
	struct sigaction old;
	pthread_t t;

	if (rare_write_init() < 0 || sigaction(SIGUSR1, NULL, &old) ||
	    pthread_create(&t, NULL, nothing, NULL) || pthread_join(t, NULL) ||
	    libc_only_spawn()) {
		fprintf(stderr, "abi-main: a call failed\n");
		return 1;
	}
	return 0;
}
