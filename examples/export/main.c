// SPDX-License-Identifier: MIT
/*
 * A PIE program that names libfoo's protected policy: reads are plain
 * loads through the accessor, writes go through rare_write(), and an
 * attacker's plain store (tried in a child) dies by SIGSEGV. Exit 0 when
 * all of that holds.
 */
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "foo.h"

int main(void)
{
	int status;
	pid_t pid;

	if (foo_init() < 0 || rare_write_init() < 0)
		return 1;
	if (foo_policy.level != 1 || foo_policy.allowed != 0x3)
		return 2;
	rare_write(foo_policy.level, 2);
	if (foo_policy.level != 2)
		return 3;
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		/* the attacker: a plain store, as check mode would flag */
		*(volatile int *)&foo_policy.level = 99;
		_exit(0);
	}
	waitpid(pid, &status, 0);
	if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGSEGV)
		return 4;
	printf("foo_policy.level %d, plain store killed by SIGSEGV\n",
	       foo_policy.level);
	return 0;
}
