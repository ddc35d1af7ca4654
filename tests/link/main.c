// SPDX-License-Identifier: MIT
/*
 * link/main.c - one program, linked every way a user may link it (shared or
 * static librarewrite, -z lazy, -z now, -static; tests/tests.mk), run by
 * tests/test_process_link.c on every backend: init, a section write, a pool,
 * a write larger than one process-backend message, a fork child's write.
 * Exit 0, or 1 with a line on stderr.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rarewrite.h>

static long counter __wr_rare = 1;
static unsigned char big[300 << 10] __wr_rare;

static int fail(const char *what)
{
	fprintf(stderr, "link-%s: %s failed\n", getenv("RAREWRITE_BACKEND"),
		what);
	return 1;
}

int main(void)
{
	static unsigned char src[sizeof(big)];
	struct rare_pool *pool;
	long *obj;
	int err = rare_write_init(), status;
	pid_t pid;

	if (err) {
		fprintf(stderr, "link: rare_write_init: %s\n", strerror(-err));
		return 1;
	}
	rare_write(counter, 2L);
	pool = rare_pool_create(1 << 16);
	obj = pool ? rare_alloc(pool, 64) : NULL;
	if (counter != 2 || !obj)
		return fail("section write or pool");
	rare_write(*obj, 3L);
	memset(src, 0x5a, sizeof(src));
	rare_write_memcpy(big, src, sizeof(big));
	if (*obj != 3 || memcmp(big, src, sizeof(big)))
		return fail("pool write or large write");
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return fail("fork");
	if (!pid) {
		rare_write(counter, 4L);
		_exit(counter == 4 ? 0 : 1);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status) || counter != 2)
		return fail("fork child's write");
	rare_pool_destroy(pool);
	return 0;
}
