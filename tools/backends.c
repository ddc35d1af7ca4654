// SPDX-License-Identifier: MIT
/*
 * backends.c - print the library's backends, one a line, as
 * rare_write_backends(3) lists them: the build's BACKENDS variable and
 * tests/check-deb.sh loop over this, so that no script names a backend.
 *
 * With --available, only those rare_write_init(3) can start on this
 * machine (pkey needs a CPU with protection keys): each is tried in a
 * child of its own, since init cannot be undone in one process.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rarewrite.h>

static int starts(const char *name)
{
	int status;
	pid_t pid = fork();

	if (pid < 0) {
		perror("backends: fork");
		exit(1);
	}
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		/* init's own line says why it failed; the list is enough here.
		 */
		if (null >= 0)
			dup2(null, STDERR_FILENO);
		setenv("RAREWRITE_BACKEND", name, 1);
		_exit(rare_write_init() ? 1 : 0);
	}
	if (waitpid(pid, &status, 0) < 0) {
		perror("backends: waitpid");
		exit(1);
	}
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

int main(int argc, char **argv)
{
	int available = argc > 1 && !strcmp(argv[1], "--available");
	const char *name;

	if (argc > 2 || (argc == 2 && !available)) {
		fprintf(stderr, "usage: backends [--available]\n");
		return 2;
	}
	for (unsigned i = 0; (name = rare_write_backends(i, NULL)); i++)
		if (!available || starts(name))
			puts(name);
	return 0;
}
