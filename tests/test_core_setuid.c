// SPDX-License-Identifier: MIT
/*
 * test_core_setuid.c - a set-user-ID program ignores RAREWRITE_BACKEND and
 * RAREWRITE_NEED: whoever starts it must not choose a
 * weaker backend for it, nor make its init fail.
 *
 * The runner runs as root: a copy of build/tests/core-setuid is made
 * set-user-ID root in a fresh directory, and a forked child drops to
 * nobody before it execs the copy, so the kernel sets AT_SECURE. The
 * reference is the same program, same user, with a clean environment.
 */
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "testutil.h"
#include "core_setuid.h"

/* What the caller's environment asks: this case's backend, and windows. */
static void hostile_env(char *backend, size_t len, char **env)
{
	snprintf(backend, len, "RAREWRITE_BACKEND=%s", test_backend());
	env[0] = backend;
	env[1] = "RAREWRITE_NEED=begin_end";
	env[2] = NULL;
}

TEST(core_setuid_ignores_environment, EXPECT_PASS)
{
	char dir[64], prog[128], backend[64], got[256], want[256], ctl[256];
	char *env[3], *clean[] = {NULL};
	const char *why =
		core_setuid_prepare(dir, sizeof(dir), prog, sizeof(prog));
	int s1, s2, s3;

	if (why)
		SKIP(why);
	hostile_env(backend, sizeof(backend), env);
	s1 = core_setuid_run(prog, env, false, got, sizeof(got));
	s2 = core_setuid_run(prog, clean, false, want, sizeof(want));
	/* Control: without AT_SECURE the same environment is obeyed. */
	s3 = core_setuid_run(prog, env, true, ctl, sizeof(ctl));
	core_setuid_cleanup(dir, prog);
	fprintf(stderr, "hostile: %sclean:   %scontrol: %s", got, want, ctl);
	CHECK(s1 == 0 && s2 == 0 && s3 == 0);
	CHECK(strstr(want, "secure=1 init=0 "));
	CHECK(strstr(ctl, "secure=0 "));
	/* The hostile environment changed nothing: not the backend, not
	 * the capabilities, and init did not fail. */
	CHECK(!strcmp(got, want));
}
