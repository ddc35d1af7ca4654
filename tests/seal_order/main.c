// SPDX-License-Identifier: MIT
/*
 * libsealorder.so sealed itself from a constructor in a file linked before
 * the file that includes <rarewrite.h>: the seal must have worked (0), the
 * state must be protected before the program's rare_write_init(), and a
 * plain store must die by SIGSEGV. Exit 0 when all holds.
 */
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rarewrite.h>

int b_sealed(void);
long *b_state_addr(void);

int main(void)
{
	long *state = b_state_addr();
	int status;
	pid_t pid;

	if (b_sealed() != 0) {
		fprintf(stderr, "seal-order: rare_write_seal_self() said %d\n",
			b_sealed());
		return 1;
	}
	if (*state != 2 || !rare_write_is_protected(state, sizeof(*state)))
		return 2;
	pid = fork();
	if (pid == 0) {
		*(volatile long *)state = 3;
		_exit(0);
	}
	waitpid(pid, &status, 0);
	if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGSEGV)
		return 3;
	return rare_write_init() < 0 ? 4 : 0;
}
