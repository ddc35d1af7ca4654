/* SPDX-License-Identifier: MIT */
/*
 * attack.c - an attacker with an arbitrary-write primitive aims at SQLite's
 * global state: one plain store of the address of attacker code.
 *
 *   attack vfs               the unix VFS's xOpen, via sqlite3_vfs_find()
 *   attack autoext ADDR      aExt[0], read from sqlite3Autoext at ADDR
 *   attack NAME ADDR OFF     the word at ADDR+OFF (ADDR from nm)
 *
 * Built twice, non-PIE so that nm's addresses are the run-time ones: with
 * the protected SQLite and rare_write_init() (-DSEAL), where the store must
 * die by SIGSEGV with the library's message, and with the unprotected SQLite
 * as the control, where the same store lands and SQLite then runs the
 * attacker's code: proof that the protected case can fail.
 *
 * Prints "armed" just before the store, so a crash anywhere earlier is not
 * mistaken for a blocked attack, and "store landed" after it.
 */
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef SEAL
#include <rarewrite.h>
#endif

static void evil(void)
{
	static const char msg[] = "attacker code ran\n";

	(void)!write(1, msg, sizeof(msg) - 1);
	_exit(0);
}

static int ext_init(sqlite3 *db, char **err, const void *api)
{
	(void)db;
	(void)err;
	(void)api;
	return SQLITE_OK;
}

/* Open a database and run a statement; 0 on success. */
static int use_sqlite(const char *path)
{
	sqlite3 *db;
	int rc = sqlite3_open(path, &db);

	if (rc == SQLITE_OK)
		rc = sqlite3_exec(db,
				  "CREATE TABLE IF NOT EXISTS t(x);"
				  "INSERT INTO t VALUES (upper('x'));"
				  "SELECT count(*) FROM t;",
				  NULL, NULL, NULL);
	sqlite3_close(db);
	return rc;
}

int main(int argc, char **argv)
{
	volatile uintptr_t *slot;
	char path[64];
	int trigger = 1;

	if (argc < 2)
		return 2;
	/*
	 * Registered before the seal, as programs do at start-up: the pool
	 * holding the array is created before rare_write_init(), which must
	 * seal it in place (the shell's workload registers one after).
	 */
	if (sqlite3_auto_extension((void (*)(void))ext_init) != SQLITE_OK) {
		fprintf(stderr, "attack: sqlite3_auto_extension failed\n");
		return 2;
	}
#ifdef SEAL
	if (rare_write_init() < 0) {
		fprintf(stderr, "attack: rare_write_init failed\n");
		return 2;
	}
#endif
	/* SQLite in use: a connection that runs the auto-extension. */
	if (use_sqlite(":memory:") != SQLITE_OK) {
		fprintf(stderr, "attack: SQLite does not work\n");
		return 2;
	}

	if (!strcmp(argv[1], "vfs")) {
		slot = (volatile uintptr_t *)&sqlite3_vfs_find(NULL)->xOpen;
	} else if (!strcmp(argv[1], "autoext") && argc == 3) {
		/* struct { u32 nExt; void (**aExt)(void); ... } */
		uintptr_t list = strtoull(argv[2], NULL, 16);

		slot = *(uintptr_t *volatile *)(list + sizeof(void *));
	} else if (argc == 4) {
		slot = (volatile uintptr_t *)(strtoull(argv[2], NULL, 16) +
					      strtoull(argv[3], NULL, 0));
		/* Only function-pointer slots are worth calling through. */
		trigger = !strcmp(argv[1], "config") ||
			  !strcmp(argv[1], "syscall");
	} else {
		return 2;
	}

	printf("armed %s at %p\n", argv[1], (void *)slot);
	fflush(stdout);
	*slot = (uintptr_t)evil; /* the attack */
	printf("store landed\n");
	fflush(stdout);

	if (trigger) {
		snprintf(path, sizeof(path), "/tmp/rarewrite-attack-%d.db",
			 (int)getpid());
		use_sqlite(path);
		unlink(path);
	}
	return 0;
}
