/* SPDX-License-Identifier: MIT */
/*
 * main.c - the sqlite3 shell: seal first, then run SQLite's own shell
 * (shell.c, built once with -Dmain=sqlite3_shell_main). Built with -DPLAIN
 * it is the unprotected shell: no librarewrite, SQLite's shell alone.
 *
 * Sealing before the shell touches SQLite means every store to SQLite's
 * protected state, including sqlite3_config() from the command line and
 * sqlite3_initialize() itself, takes the patched rare_write() path.
 */
#ifndef PLAIN
#include <rarewrite.h>
#endif
#include <stdio.h>
#include <string.h>

int sqlite3_shell_main(int argc, char **argv);

int main(int argc, char **argv)
{
#ifndef PLAIN
	int rc = rare_write_init();

	if (rc < 0) {
		fprintf(stderr, "sqlite3: rare_write_init: %s\n",
			strerror(-rc));
		return 1;
	}
#endif
	return sqlite3_shell_main(argc, argv);
}
