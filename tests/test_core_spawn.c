// SPDX-License-Identifier: MIT
/*
 * test_core_spawn.c - posix_spawn() and system() run no fork handlers on
 * glibc 2.36 (they clone with CLONE_VM|CLONE_VFORK and exec at once), so
 * what keeps the library's descriptors (table memfd, region memfds, the
 * process helper's socket) out of the new program is close-on-exec alone
 * (docs/backends.md, fork()). The spawned shell lists
 * its descriptors; none may be the library's.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "testutil.h"

extern char **environ;

static long spawn_var __wr_rare = 1;

/* The targets of the shell's descriptors, as it lists them. */
static const char list_fds[] =
	"for f in /proc/$$/fd/*; do readlink \"$f\"; done; true";

static void check_listing(const char *path)
{
	char line[512];
	FILE *f = fopen(path, "r");
	unsigned n = 0;

	CHECK(f);
	while (fgets(line, sizeof(line), f)) {
		n++;
		/* every memfd of the library is named rarewrite-something */
		if (strstr(line, "memfd:rarewrite"))
			fprintf(stderr, "spawned program holds %s", line);
		CHECK(!strstr(line, "memfd:rarewrite"));
	}
	fclose(f);
	CHECK(n >= 3); /* it did list something: stdin, stdout, stderr */
	unlink(path);
}

TEST(core_spawn_inherits_no_descriptor, EXPECT_PASS)
{
	char out[64], cmd[256];
	struct rare_pool *pool;
	char *argv[] = {"sh", "-c", cmd, NULL};
	posix_spawn_file_actions_t fa;
	pid_t pid;
	int status;

	init();
	pool = rare_pool_create(4096);
	CHECK(pool);
	rare_write(spawn_var, 2L);
	snprintf(out, sizeof(out), "/tmp/rw-spawn-%d", getpid());
	snprintf(cmd, sizeof(cmd), "%s", list_fds);
	CHECK(!posix_spawn_file_actions_init(&fa));
	CHECK(!posix_spawn_file_actions_addopen(
		&fa, STDOUT_FILENO, out, O_WRONLY | O_CREAT | O_TRUNC, 0600));
	CHECK(!posix_spawn(&pid, "/bin/sh", &fa, NULL, argv, environ));
	posix_spawn_file_actions_destroy(&fa);
	CHECK(waitpid(pid, &status, 0) == pid && status == 0);
	check_listing(out);
	snprintf(cmd, sizeof(cmd), "{ %s; } >%s", list_fds, out);
	CHECK(system(cmd) == 0);
	check_listing(out);
	CHECK(spawn_var == 2);
	rare_pool_destroy(pool);
}
