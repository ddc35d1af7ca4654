/* SPDX-License-Identifier: MIT */
/*
 * testutil.h - helpers shared by the test files: misuse that must abort with
 * one line on stderr naming the call and the address, stores that must
 * fault, and small timing helpers.
 */
#ifndef RAREWRITE_TEST_UTIL_H
#define RAREWRITE_TEST_UTIL_H

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

struct capture_arg {
	void (*fn)(void *);
	void *arg;
	int fd; /* write end of the pipe that becomes stderr */
};

static inline void capture_child(void *p)
{
	struct capture_arg *c = p;

	dup2(c->fd, STDERR_FILENO);
	close(c->fd);
	c->fn(c->arg);
	_exit(0);
}

/* Run @fn(@arg) in a sub-child with stderr captured into @msg. */
static inline int run_captured(void (*fn)(void *), void *arg, char *msg,
			       size_t cap)
{
	struct capture_arg c = {fn, arg, -1};
	size_t got = 0;
	int p[2], status;

	CHECK(pipe(p) == 0);
	c.fd = p[1];
	status = run_in_child(capture_child, &c);
	close(p[1]);
	for (;;) {
		ssize_t n = read(p[0], msg + got, cap - 1 - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(p[0]);
	msg[got] = 0;
	return status;
}

/*
 * Run @fn(@arg) in a sub-child with stderr captured; the sub-child must die
 * by SIGABRT after printing exactly one line "rarewrite: @call(@addr): ...".
 * @addr is checked only when @check_addr is set (the library prints it as
 * %p). Fails the case otherwise.
 */
static inline void expect_abort_addr(void (*fn)(void *), void *arg,
				     const char *call, const void *addr,
				     bool check_addr)
{
	char msg[1024], want[128];
	int status = run_captured(fn, arg, msg, sizeof(msg));
	size_t got = strlen(msg);

	if (child_killed_by(status) != SIGABRT)
		fprintf(stderr,
			"expected SIGABRT from %s, got status %#x: %s\n", call,
			status, msg);
	CHECK(child_killed_by(status) == SIGABRT);
	snprintf(want, sizeof(want), "rarewrite: %s(", call);
	if (strncmp(msg, want, strlen(want)))
		fprintf(stderr, "abort message does not name %s: '%s'\n", call,
			msg);
	CHECK(strncmp(msg, want, strlen(want)) == 0);
	/* one line, whole */
	CHECK(got > 0 && msg[got - 1] == '\n');
	CHECK(strchr(msg, '\n') == msg + got - 1);
	if (check_addr) {
		snprintf(want, sizeof(want), "rarewrite: %s(%p)", call, addr);
		if (strncmp(msg, want, strlen(want)))
			fprintf(stderr, "abort message lacks '%s': '%s'\n",
				want, msg);
		CHECK(strncmp(msg, want, strlen(want)) == 0);
	}
}

static inline void expect_abort(void (*fn)(void *), void *arg, const char *call,
				const void *addr)
{
	expect_abort_addr(fn, arg, call, addr, true);
}

/* The sub-child running @fn(@arg) must die by SIGSEGV. Its stderr (the
 * library's fault report) is shown only if it does not. */
static inline void expect_segv(void (*fn)(void *), void *arg)
{
	char msg[1024];
	int status = run_captured(fn, arg, msg, sizeof(msg));

	if (child_killed_by(status) != SIGSEGV)
		fprintf(stderr, "expected SIGSEGV, got status %#x: %s\n",
			status, msg);
	CHECK(child_killed_by(status) == SIGSEGV);
}

/* Plain 8-byte store to @arg; for expect_segv(). */
static inline void store_long(void *arg)
{
	*(volatile long *)arg = 0x5a5a5a5a;
}

static inline double now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static inline bool backend_has(unsigned cap)
{
	return (rare_write_caps() & cap) != 0;
}

static inline size_t page_size(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

/*
 * The pid of this process's process-backend helper, or 0: the helper
 * writes it into its answer page, the program's one read-only mapping of
 * the memfd "rarewrite-answer" (src/backend/process_ring.h: struct
 * prw_answer, pid at offset 12). The helper is not our child, so its place
 * in /proc says nothing.
 */
static inline pid_t find_helper(void)
{
	char line[512];
	pid_t found = 0;
	FILE *f = fopen("/proc/self/maps", "r");

	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f)) {
		unsigned long lo;

		if (strstr(line, "/memfd:rarewrite-answer") &&
		    sscanf(line, "%lx-", &lo) == 1)
			memcpy(&found, (const char *)lo + 12, sizeof(found));
	}
	fclose(f);
	return found;
}

/* In a child: init, send the helper's pid down the pipe end at @arg, and
 * exit, leaving the helper to end with the program. */
static inline void init_report_helper_exit(void *arg)
{
	int *fd = arg;
	pid_t helper;

	init();
	helper = find_helper();
	CHECK(write(*fd, &helper, sizeof(helper)) == sizeof(helper));
	_exit(0);
}

#endif /* RAREWRITE_TEST_UTIL_H */
