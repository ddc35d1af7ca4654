/* SPDX-License-Identifier: MIT */
/*
 * main.c - the protected sqlite3 shell: seal first, then run SQLite's own
 * shell (shell.c, built with -Dmain=sqlite3_shell_main).
 *
 * Sealing before the shell touches SQLite means every store to SQLite's
 * protected state, including sqlite3_config() from the command line and
 * sqlite3_initialize() itself, takes the patched rare_write() path.
 */
#include <rarewrite.h>
#include <stdio.h>
#include <string.h>

int sqlite3_shell_main(int argc, char **argv);

int main(int argc, char **argv)
{
	int rc = rare_write_init();

	if (rc < 0) {
		fprintf(stderr, "sqlite3: rare_write_init: %s\n",
			strerror(-rc));
		return 1;
	}
	return sqlite3_shell_main(argc, argv);
}
