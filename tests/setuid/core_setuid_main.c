// SPDX-License-Identifier: MIT
/*
 * core_setuid_main.c - the program tests/test_core_setuid.c makes
 * set-user-ID root and runs as another user (AT_SECURE): it says what
 * rare_write_init() chose, so the test can tell whether RAREWRITE_BACKEND
 * or RAREWRITE_NEED from the caller's environment were obeyed.
 *
 * Static, with the library's sources compiled in: it runs from any
 * directory, and the loader ignores $ORIGIN in set-user-ID programs.
 */
#include <stdio.h>
#include <sys/auxv.h>
#include <unistd.h>

#include <rarewrite.h>

static long setuid_var __wr_rare = 1;

int main(void)
{
	int err = rare_write_init();

	if (!err)
		rare_write(setuid_var, 2L);
	printf("secure=%lu init=%d backend=%s caps=%u euid=%d uid=%d\n",
	       getauxval(AT_SECURE), err, rare_write_backend(),
	       rare_write_caps(), (int)geteuid(), (int)getuid());
	return 0;
}
