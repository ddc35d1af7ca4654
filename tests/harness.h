/* SPDX-License-Identifier: MIT */
/*
 * harness.h - the test harness: every case runs in a forked child, once per
 * available backend, and is judged by how the child ends.
 *
 *	TEST(pool_zeroed, EXPECT_PASS) { ... CHECK(x == 0); ... }
 *	TEST(store_after_init_faults, EXPECT_SEGV) { init(); prot = 1; }
 *
 * A case that needs something the backend lacks calls SKIP(). The runner
 * (runner.c) sets RAREWRITE_BACKEND before calling the case; the case calls
 * init() itself, so cases can also test what happens before init.
 */
#ifndef RAREWRITE_TEST_HARNESS_H
#define RAREWRITE_TEST_HARNESS_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rarewrite.h>

enum expect {
	EXPECT_PASS,  /* exit status 0 */
	EXPECT_SEGV,  /* killed by SIGSEGV: a store to sealed memory */
	EXPECT_ABORT, /* killed by SIGABRT: misuse detected */
};

struct test_case {
	const char *name;
	void (*fn)(void);
	enum expect expect;
	const char *file;
};

#define TEST(name_, expect_)                                                   \
	static void name_(void);                                               \
	static const struct test_case test_case_##name_ = {#name_, name_,      \
							   expect_, __FILE__}; \
	__attribute__((used,                                                   \
		       section("rw_tests"))) static const struct test_case     \
		*const test_case_ptr_##name_ = &test_case_##name_;             \
	static void name_(void)

#define TEST_EXIT_SKIP 77

/* Fail the case with a message naming the file and line. */
#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, \
				__LINE__, #cond);                              \
			_exit(1);                                              \
		}                                                              \
	} while (0)

#define SKIP(why)                                                              \
	do {                                                                   \
		fprintf(stderr, "skip: %s\n", why);                            \
		_exit(TEST_EXIT_SKIP);                                         \
	} while (0)

/* rare_write_init() that must succeed. */
static inline void init(void)
{
	int err = rare_write_init();

	if (err) {
		fprintf(stderr, "rare_write_init: %s\n", strerror(-err));
		_exit(1);
	}
}

/* The backend this case runs against (RAREWRITE_BACKEND). */
static inline const char *test_backend(void)
{
	const char *b = getenv("RAREWRITE_BACKEND");

	return b ? b : "auto";
}

/*
 * Run @fn in a forked child of the case and return how it ended, encoded as
 * for the runner: 0 exit 0, otherwise the wait status. For cases that
 * attack from a child and need the parent to survive and check.
 */
int run_in_child(void (*fn)(void *), void *arg);
#define CHILD_OK 0
int child_killed_by(int status); /* signal number, or 0 */

/* Built with -fsanitize=address,undefined (make check-asan): a child the
 * sanitizer stops exits 1 where a plain build would crash. */
static inline bool sanitized_build(void)
{
#ifdef __SANITIZE_ADDRESS__
	return true;
#else
	return false;
#endif
}

#endif /* RAREWRITE_TEST_HARNESS_H */
