// SPDX-License-Identifier: MIT
/* A library built against libc alone: its pthread_create and sigaction
 * references carry glibc's versions; check-abi.sh checks they bind to
 * librarewrite's unversioned interposers all the same. */
#include <pthread.h>
#include <signal.h>

static void *nothing(void *arg)
{
	return arg;
}

int libc_only_spawn(void)
{
	struct sigaction old;
	pthread_t t;

	if (sigaction(SIGUSR1, NULL, &old))
		return -1;
	if (pthread_create(&t, NULL, nothing, NULL))
		return -1;
	return pthread_join(t, NULL);
}
