// SPDX-License-Identifier: MIT
/* Backend selection by RAREWRITE_BACKEND: names, errors, capabilities. */
#include <errno.h>

#include "harness.h"
#include "testutil.h"

static long value __wr_rare = 1;

/* What a rejected init must leave behind: nothing in force, nothing
 * protected. */
static void check_nothing_in_force(void)
{
	CHECK(strcmp(rare_write_backend(), "none") == 0);
	CHECK(rare_write_caps() == 0);
	value = 2; /* still ordinary memory */
	CHECK(value == 2);
}

TEST(backend_bogus_name_is_einval, EXPECT_PASS)
{
	static const char *const bogus[] = {
		"bogus",     "PWRITE", "pwrite ", " shadow",	 "mprotec",
		"mprotectx", "autox",  "none",	  "pkey,pwrite", "-1",
	};

	for (size_t i = 0; i < sizeof(bogus) / sizeof(bogus[0]); i++) {
		setenv("RAREWRITE_BACKEND", bogus[i], 1);
		int err = rare_write_init();

		if (err != -EINVAL)
			fprintf(stderr, "'%s': %d\n", bogus[i], err);
		CHECK(err == -EINVAL);
		check_nothing_in_force();
	}
}

TEST(backend_retry_after_failed_init, EXPECT_SEGV)
{
	const char *want = test_backend();

	setenv("RAREWRITE_BACKEND", "no-such-backend", 1);
	CHECK(rare_write_init() == -EINVAL);
	check_nothing_in_force();
	setenv("RAREWRITE_BACKEND", want, 1);
	init();
	CHECK(rare_write(value, 3L) == 3);
	*(volatile long *)&value = 4;
}

/* pkey and process exist or say -ENOTSUP; never another backend. */
static void check_optional(const char *name)
{
	int err;

	setenv("RAREWRITE_BACKEND", name, 1);
	err = rare_write_init();
	if (err == 0) {
		CHECK(strcmp(rare_write_backend(), name) == 0);
		return;
	}
	if (err != -ENOTSUP)
		fprintf(stderr, "%s: %d\n", name, err);
	CHECK(err == -ENOTSUP);
	check_nothing_in_force();
}

TEST(backend_pkey_available_or_enotsup, EXPECT_PASS)
{
	check_optional("pkey");
}

TEST(backend_process_available_or_enotsup, EXPECT_PASS)
{
	check_optional("process");
}

TEST(backend_empty_name_means_auto, EXPECT_PASS)
{
	setenv("RAREWRITE_BACKEND", "", 1);
	init();
	CHECK(strcmp(rare_write_backend(), "pkey") == 0 ||
	      strcmp(rare_write_backend(), "pwrite") == 0);
}

TEST(backend_unset_means_auto, EXPECT_PASS)
{
	unsetenv("RAREWRITE_BACKEND");
	init();
	CHECK(strcmp(rare_write_backend(), "pkey") == 0 ||
	      strcmp(rare_write_backend(), "pwrite") == 0);
}

/* The backend in force is the one named: never silently another. */
TEST(backend_named_is_in_force, EXPECT_PASS)
{
	const char *name = test_backend();

	CHECK(strcmp(rare_write_backend(), "none") == 0);
	CHECK(rare_write_caps() == 0);
	init();
	if (!strcmp(name, "auto"))
		CHECK(strcmp(rare_write_backend(), "pkey") == 0 ||
		      strcmp(rare_write_backend(), "pwrite") == 0);
	else
		CHECK(strcmp(rare_write_backend(), name) == 0);
	/* changing the variable later changes nothing */
	setenv("RAREWRITE_BACKEND", "bogus", 1);
	CHECK(rare_write_init() == 0);
	CHECK(strcmp(rare_write_backend(), "none") != 0);
	if (strcmp(name, "auto"))
		CHECK(strcmp(rare_write_backend(), name) == 0);
}

TEST(backend_caps_match_the_backend, EXPECT_PASS)
{
	const char *name;
	unsigned caps;

	init();
	name = rare_write_backend();
	caps = rare_write_caps();
	CHECK(!(caps &
		~(RARE_WRITE_CAP_BEGIN_END | RARE_WRITE_CAP_THREAD_LOCAL)));
	if (!strcmp(name, "pkey"))
		CHECK(caps ==
		      (RARE_WRITE_CAP_BEGIN_END | RARE_WRITE_CAP_THREAD_LOCAL));
	else if (!strcmp(name, "mprotect"))
		/* the window is visible to every thread */
		CHECK(caps == RARE_WRITE_CAP_BEGIN_END);
	else if (!strcmp(name, "shadow"))
		/* the alias is visible to every thread */
		CHECK(caps == 0);
	else
		CHECK(!(caps & RARE_WRITE_CAP_BEGIN_END));
}
