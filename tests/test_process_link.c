// SPDX-License-Identifier: MIT
/*
 * Every way a user may link the library works on every backend this
 * machine has: tests/link/main.c built shared or static, -z lazy or
 * -z now, and -static (tests/tests.mk). The process backend's helper once
 * failed in a lazily bound program linked with librarewrite.a: it dropped
 * the dynamic loader's memory and crashed at its first lazy symbol lookup.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "testutil.h"

static void exec_variant(void *name)
{
	char path[4096];
	ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 64);
	char *slash;

	if (n <= 0)
		_exit(126);
	path[n] = 0;
	slash = strrchr(path, '/');
	snprintf(slash + 1, sizeof(path) - (size_t)(slash + 1 - path),
		 "link-%s", (const char *)name);
	setenv("RAREWRITE_BACKEND", test_backend(), 1);
	execl(path, path, (char *)NULL);
	_exit(127);
}

static void expect_runs(const char *variant)
{
	char msg[1024];
	int status =
		run_captured(exec_variant, (void *)variant, msg, sizeof(msg));

	if (status != CHILD_OK)
		fprintf(stderr, "link-%s on %s: status %#x, stderr '%s'\n",
			variant, test_backend(), status, msg);
	CHECK(status == CHILD_OK);
}

TEST(link_shared_lazy_runs, EXPECT_PASS)
{
	expect_runs("shared-lazy");
}

TEST(link_shared_now_runs, EXPECT_PASS)
{
	expect_runs("shared-now");
}

TEST(link_static_lazy_runs, EXPECT_PASS)
{
	expect_runs("static-lazy");
}

TEST(link_static_now_runs, EXPECT_PASS)
{
	expect_runs("static-now");
}

TEST(link_static_full_runs, EXPECT_PASS)
{
#ifdef __SANITIZE_ADDRESS__
	SKIP("AddressSanitizer cannot link a fully static program");
#endif
	expect_runs("static-full");
}
