/* SPDX-License-Identifier: MIT */
/*
 * core_setuid.h - running build/tests/core-setuid set-user-ID root as
 * nobody (tests/test_core_setuid.c), for the test and scenario 13a.
 */
#ifndef RAREWRITE_TEST_CORE_SETUID_H
#define RAREWRITE_TEST_CORE_SETUID_H

#include <stdbool.h>
#include <stddef.h>

/* A set-user-ID-root copy in a new directory @dir: NULL, or why not. */
const char *core_setuid_prepare(char *dir, size_t dir_len, char *prog,
				size_t prog_len);
void core_setuid_cleanup(const char *dir, const char *prog);
/* Run @prog with exactly @env, as nobody (AT_SECURE) or as root; its
 * output line in @out. The wait status. */
int core_setuid_run(const char *prog, char *const env[], bool as_root,
		    char *out, size_t out_len);

#endif
