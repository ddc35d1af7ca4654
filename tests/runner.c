// SPDX-License-Identifier: MIT
/*
 * runner.c - runs every TEST() against every available backend, each case in
 * its own child, and ends with "N passed, N failed, N skipped".
 *
 * Usage: run [substring...]   only cases whose name contains a substring;
 *                             !substring leaves out the cases whose name
 *                             contains it (run !attack_: all but those)
 * RAREWRITE_TEST_BACKENDS="pkey auto"   restrict the backends (default: all
 * that rare_write_init() accepts on this machine, then "auto").
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>

#include "harness.h"

extern const struct test_case *const __start_rw_tests[];
extern const struct test_case *const __stop_rw_tests[];

int run_in_child(void (*fn)(void *), void *arg)
{
	int status;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		fn(arg);
		_exit(0);
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return status;
}

int child_killed_by(int status)
{
	return WIFSIGNALED(status) ? WTERMSIG(status) : 0;
}

static void probe(void *unused)
{
	(void)unused;
	_exit(rare_write_init() ? 1 : 0);
}

static bool backend_available(const char *name)
{
	setenv("RAREWRITE_BACKEND", name, 1);
	return run_in_child(probe, NULL) == 0;
}

static void run_case(void *arg)
{
	const struct test_case *tc = arg;

	alarm(120); /* a hung case dies by SIGALRM and fails */
	/* Expected deaths print the library's abort line; keep the log
	 * readable unless asked (RAREWRITE_TEST_VERBOSE=1). */
	if (tc->expect != EXPECT_PASS && !getenv("RAREWRITE_TEST_VERBOSE")) {
		int null = open("/dev/null", O_WRONLY);

		if (null >= 0)
			dup2(null, STDERR_FILENO);
	}
	tc->fn();
	fflush(NULL);
	_exit(0);
}

/* 1 passed, 0 failed, -1 skipped */
static int judge(const struct test_case *tc, int status)
{
	if (WIFEXITED(status) && WEXITSTATUS(status) == TEST_EXIT_SKIP)
		return -1;
	switch (tc->expect) {
	case EXPECT_PASS:
		return WIFEXITED(status) && WEXITSTATUS(status) == 0;
	case EXPECT_SEGV:
		return child_killed_by(status) == SIGSEGV;
	case EXPECT_ABORT:
		return child_killed_by(status) == SIGABRT;
	}
	return 0;
}

/* Named by an argument, or by none but an exclusion ("!attack_"): a case
 * an exclusion names is left out whatever else names it. */
static bool selected(const struct test_case *tc, int argc, char **argv)
{
	bool named = false, any_name = false;

	for (int i = 1; i < argc; i++) {
		if (argv[i][0] == '!') {
			if (strstr(tc->name, argv[i] + 1))
				return false;
			continue;
		}
		any_name = true;
		named = named || strstr(tc->name, argv[i]);
	}
	return named || !any_name;
}

static const char *describe(int status, char *buf, size_t len)
{
	if (WIFEXITED(status))
		snprintf(buf, len, "exit %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, len, "signal %s", strsignal(WTERMSIG(status)));
	else
		snprintf(buf, len, "status %#x", status);
	return buf;
}

int main(int argc, char **argv)
{
	const char *backends[16];
	unsigned nr_backends = 0, passed = 0, failed = 0, skipped = 0;
	/* The failures again just above the summary: a log cut to its last
	 * lines (CI's, a package build's) still names them. */
	char *recap = NULL;
	size_t recap_len = 0;
	FILE *failures = open_memstream(&recap, &recap_len);
	const char *only = getenv("RAREWRITE_TEST_BACKENDS");
	char *list = only ? strdup(only) : NULL;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (list) {
		for (char *t = strtok(list, " ,"); t && nr_backends < 16;
		     t = strtok(NULL, " ,"))
			backends[nr_backends++] = t;
	} else {
		const char *name;

		/* The library's own list (rare_write_backends(3)). */
		for (unsigned i = 0;
		     (name = rare_write_backends(i, NULL)) && nr_backends < 15;
		     i++)
			if (backend_available(name))
				backends[nr_backends++] = name;
			else
				printf("# backend %s not available here\n",
				       name);
		backends[nr_backends++] = "auto";
	}
	for (unsigned b = 0; b < nr_backends; b++) {
		setenv("RAREWRITE_BACKEND", backends[b], 1);
		for (const struct test_case *const *t = __start_rw_tests;
		     t < __stop_rw_tests; t++) {
			char buf[64];
			int status, verdict;

			if (!selected(*t, argc, argv))
				continue;
			status = run_in_child(run_case, (void *)*t);
			verdict = judge(*t, status);
			if (verdict > 0) {
				passed++;
				printf("ok   %-9s %s\n", backends[b],
				       (*t)->name);
			} else if (verdict < 0) {
				skipped++;
				printf("skip %-9s %s\n", backends[b],
				       (*t)->name);
			} else {
				failed++;
				printf("FAIL %-9s %s (%s, %s)\n", backends[b],
				       (*t)->name,
				       describe(status, buf, sizeof(buf)),
				       (*t)->file);
				if (failures)
					fprintf(failures, "FAIL %-9s %s (%s)\n",
						backends[b], (*t)->name, buf);
			}
		}
	}
	/* A run that executed nothing proves nothing: it fails. */
	if (failures && !fclose(failures) && failed)
		printf("--- the %u failure%s again:\n%s", failed,
		       failed == 1 ? "" : "s", recap);
	free(recap);
	if (!passed && !failed) {
		printf("FAIL no test ran (%u skipped)\n", skipped);
		failed++;
	}
	printf("%u passed, %u failed, %u skipped\n", passed, failed, skipped);
	free(list);
	return failed ? 1 : 0;
}
