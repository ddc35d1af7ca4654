// SPDX-License-Identifier: MIT
/*
 * handlers.c - the seed's sock_diag example in user space: a table of
 * function pointers kept in __wr_rare, filled by legitimate registration
 * through rare_write(), and an attacker's overwrite tried in a child.
 *
 * Run: RAREWRITE_BACKEND=pwrite ./handlers   (or make demo: every backend)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rarewrite.h>

#define AF_MAX 16

struct diag_handler {
	const char *name;
	int (*dump)(int request);
};

/* The table an exploit wants: one pointer redirects every dump request. */
static const struct diag_handler *__wr_rare diag_handlers[AF_MAX];
static pthread_mutex_t diag_table_lock = PTHREAD_MUTEX_INITIALIZER;

static int inet_dump(int request)
{
	return request + 1;
}

static int unix_dump(int request)
{
	return request + 2;
}

static int evil_dump(int request)
{
	(void)request;
	puts("    !!! attacker's code ran");
	return -1;
}

static const struct diag_handler inet_handler = {"inet", inet_dump};
static const struct diag_handler unix_handler = {"unix", unix_dump};
static const struct diag_handler evil_handler = {"evil", evil_dump};

static int diag_register(int family, const struct diag_handler *h)
{
	int err = 0;

	pthread_mutex_lock(&diag_table_lock);
	if (diag_handlers[family])
		err = -1;
	else
		rare_write(diag_handlers[family], h);
	pthread_mutex_unlock(&diag_table_lock);
	return err;
}

static void diag_unregister(int family)
{
	pthread_mutex_lock(&diag_table_lock);
	rare_write(diag_handlers[family], NULL);
	pthread_mutex_unlock(&diag_table_lock);
}

/* The attacker holds an arbitrary-write primitive: a plain store. */
static void attack(void)
{
	*(volatile const struct diag_handler **)&diag_handlers[1] =
		&evil_handler;
	_exit(diag_handlers[1]->dump(0) < 0 ? 3 : 0);
}

int main(void)
{
	const char *asked = getenv("RAREWRITE_BACKEND");
	char label[32];
	int err, status;
	pid_t pid;

	/* Before init the table is ordinary data: built-in defaults. */
	diag_handlers[1] = &unix_handler;
	err = rare_write_init();
	if (err) {
		printf("%-16s rare_write_init: %s\n", asked ? asked : "auto",
		       strerror(-err));
		/* Only a backend this machine lacks is "not available"; one
		 * it has that cannot start is a failure. */
		return err == -ENOTSUP ? 2 : 1;
	}
	snprintf(label, sizeof(label), "%s%s%s", asked ? asked : "auto",
		 asked && !strcmp(asked, rare_write_backend()) ? "" : "->",
		 asked && !strcmp(asked, rare_write_backend())
			 ? ""
			 : rare_write_backend());
	if (diag_register(2, &inet_handler))
		return 1;
	printf("%-16s registered: AF 1 -> %s (%d), AF 2 -> %s (%d)\n", label,
	       diag_handlers[1]->name, diag_handlers[1]->dump(1),
	       diag_handlers[2]->name, diag_handlers[2]->dump(1));

	fflush(stdout);
	pid = fork();
	if (pid == 0)
		attack();
	waitpid(pid, &status, 0);
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV)
		printf("%-16s attack: overwrite of diag_handlers[1] BLOCKED "
		       "(attacker killed by SIGSEGV); table still -> %s\n",
		       label, diag_handlers[1]->name);
	else {
		printf("%-16s attack: NOT blocked (status %#x)\n", label,
		       status);
		return 1;
	}

	diag_unregister(2);
	printf("%-16s unregistered AF 2: %s\n", label,
	       diag_handlers[2] ? "still set?!" : "NULL");
	return diag_handlers[2] ? 1 : 0;
}
