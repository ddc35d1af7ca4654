// SPDX-License-Identifier: MIT
/*
 * The process backend's helper is not a child of the program: a server that
 * manages its children (reaps everything with waitpid(-1), kills every
 * child it finds) neither sees nor harms it, and no helper is ever left a
 * zombie: not when it is killed, not when the program exec()s or exits.
 * Cases skip on other backends.
 *
 * Each case runs the "program" in a child of the case, and makes the case
 * a child subreaper first, so that what the program leaves behind comes to
 * the case (not to a PID 1 that may not reap, as in some containers) and
 * what is left a zombie can be seen.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include "harness.h"
#include "testutil.h"

static long flags_word __wr_rare = 1;

static void need_process(void)
{
	if (strcmp(test_backend(), "process"))
		SKIP("process backend only");
}

/* The children of @pid, as the kernel lists them (every thread's list),
 * into @out (at most @max); their number. */
static int children_of(pid_t pid, pid_t *out, int max)
{
	char path[64];
	int n = 0;
	FILE *f;

	/* The tests are single-threaded: the main thread's list is all. */
	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid,
		 (int)pid);
	f = fopen(path, "r");
	CHECK(f);
	while (n < max && fscanf(f, "%d", &out[n]) == 1)
		n++;
	fclose(f);
	return n;
}

/* 'Z' if @pid is a zombie, 0 if it is gone, else its state letter. */
static char proc_state(pid_t pid)
{
	char path[64], buf[512], *end, state = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (fgets(buf, sizeof(buf), f) && (end = strrchr(buf, ')')))
		state = end[2];
	fclose(f);
	return state;
}

/* Reap what comes to the case (it is a subreaper) until @pid is gone or
 * 30 s have passed; false if @pid is still there (alive or a zombie).
 * Generous: a loaded machine (CI runs the kernel lane beside this) may
 * not run the dying helper for a while; a pass waits only as long as the
 * helper takes. */
static bool gone_within(pid_t pid)
{
	for (int i = 0; i < 3000; i++) {
		while (waitpid(-1, NULL, WNOHANG | __WALL) > 0)
			;
		if (!proc_state(pid))
			return true;
		usleep(10000);
	}
	return false;
}

static void become_subreaper(void)
{
	CHECK(!prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0));
}

/* The program: after init it has no child the kernel would list. */
static void program_sees_no_helper(void *unused)
{
	pid_t kids[16];

	(void)unused;
	init();
	rare_write(flags_word, 2L);
	CHECK(find_helper() > 0);
	CHECK(children_of(getpid(), kids, 16) == 0);
	/* Nothing to reap, nothing to wait for, whatever the flags. */
	errno = 0;
	CHECK(waitpid(-1, NULL, WNOHANG | __WALL) < 0 && errno == ECHILD);
	errno = 0;
	CHECK(waitid(P_ALL, 0, &(siginfo_t){0}, WEXITED | WNOHANG | __WALL) <
		      0 &&
	      errno == ECHILD);
	rare_write(flags_word, 3L);
	CHECK(flags_word == 3);
}

TEST(process_helper_is_not_the_programs_child, EXPECT_PASS)
{
	need_process();
	become_subreaper();
	CHECK(run_in_child(program_sees_no_helper, NULL) == CHILD_OK);
}

/*
 * A server's child management: start workers, kill every child the kernel
 * lists, then reap with a blocking waitpid(-1, __WALL) until ECHILD (an
 * alarm turns a wait for the helper into a failure), and keep writing.
 */
static void program_kills_and_reaps_all(void *unused)
{
	pid_t kids[16], helper;
	int n, reaped = 0;

	(void)unused;
	init();
	helper = find_helper();
	CHECK(helper > 0);
	for (int i = 0; i < 3; i++) {
		pid_t pid = fork();

		CHECK(pid >= 0);
		if (!pid) {
			pause();
			_exit(0);
		}
	}
	n = children_of(getpid(), kids, 16);
	CHECK(n == 3);
	for (int i = 0; i < n; i++) {
		CHECK(kids[i] != helper);
		CHECK(!kill(kids[i], SIGKILL));
	}
	alarm(10);
	for (;;) {
		pid_t got = waitpid(-1, NULL, __WALL);

		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			CHECK(errno == ECHILD);
			break;
		}
		CHECK(got != helper);
		reaped++;
	}
	alarm(0);
	CHECK(reaped == 3);
	rare_write(flags_word, 4L);
	CHECK(flags_word == 4);
	CHECK(find_helper() == helper);
}

TEST(process_helper_survives_kill_and_reap_of_all_children, EXPECT_PASS)
{
	need_process();
	become_subreaper();
	CHECK(run_in_child(program_kills_and_reaps_all, NULL) == CHILD_OK);
}

/* A program that is itself a child subreaper (a supervisor, a container's
 * init helper): the helper is still not its child, and it stays one. */
static void subreaper_program(void *unused)
{
	pid_t kids[16];
	int is = 0;

	(void)unused;
	become_subreaper();
	init();
	rare_write(flags_word, 5L);
	CHECK(children_of(getpid(), kids, 16) == 0);
	CHECK(!prctl(PR_GET_CHILD_SUBREAPER, &is, 0, 0, 0) && is == 1);
	errno = 0;
	CHECK(waitpid(-1, NULL, WNOHANG | __WALL) < 0 && errno == ECHILD);
	CHECK(flags_word == 5);
}

TEST(process_helper_is_not_a_subreapers_child, EXPECT_PASS)
{
	need_process();
	become_subreaper();
	CHECK(run_in_child(subreaper_program, NULL) == CHILD_OK);
}

/* Kill the helper, tell the case its pid, and live on without writing. */
static void program_kills_helper(void *arg)
{
	int *fd = arg;
	pid_t helper;

	init();
	helper = find_helper();
	CHECK(helper > 0);
	CHECK(!kill(helper, SIGKILL));
	CHECK(write(*fd, &helper, sizeof(helper)) == sizeof(helper));
	sleep(30); /* killed by the case */
	_exit(0);
}

TEST(process_killed_helper_is_no_zombie, EXPECT_PASS)
{
	pid_t helper = 0, program;
	int p[2], status;
	bool gone;

	need_process();
	become_subreaper();
	CHECK(!pipe(p));
	fflush(NULL);
	program = fork();
	CHECK(program >= 0);
	if (!program) {
		close(p[0]);
		program_kills_helper(&p[1]);
	}
	close(p[1]);
	CHECK(read(p[0], &helper, sizeof(helper)) == sizeof(helper));
	CHECK(helper > 0);
	/* Gone while the program still lives, and it did nothing. */
	gone = gone_within(helper);
	if (!gone)
		fprintf(stderr, "helper %d state %c\n", (int)helper,
			proc_state(helper));
	CHECK(gone);
	CHECK(proc_state(program) != 0 && proc_state(program) != 'Z');
	kill(program, SIGKILL);
	CHECK(waitpid(program, &status, 0) == program);
}

/*
 * A child of the program (fork: it gets a helper of its own) exec()s a
 * shell, which lists its own children: the child's helper, which ends when
 * exec closes the child's socket, must not be among them as a zombie.
 */
static void program_forks_and_execs(void *arg)
{
	int *fd = arg;
	pid_t pid;
	int status;

	init();
	rare_write(flags_word, 6L);
	fflush(NULL);
	pid = fork();
	CHECK(pid >= 0);
	if (!pid) {
		rare_write(flags_word, 7L); /* the child's own helper serves */
		dup2(*fd, STDOUT_FILENO);
		execl("/bin/sh", "sh", "-c",
		      "sleep 0.3; read k < /proc/$$/task/$$/children; "
		      "echo \"[$k]\"",
		      (char *)NULL);
		_exit(127);
	}
	CHECK(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

TEST(process_exec_leaves_no_zombie_helper, EXPECT_PASS)
{
	char out[128] = {0};
	ssize_t n, got = 0;
	int p[2];

	need_process();
	become_subreaper();
	CHECK(!pipe(p));
	CHECK(run_in_child(program_forks_and_execs, &p[1]) == CHILD_OK);
	close(p[1]);
	while ((n = read(p[0], out + got, sizeof(out) - 1 - (size_t)got)) > 0)
		got += n;
	close(p[0]);
	if (strcmp(out, "[]\n"))
		fprintf(stderr, "the exec'd shell's children: %s", out);
	CHECK(!strcmp(out, "[]\n"));
}

/* The program exits: its helper (and whatever started it) are reaped by
 * the reaper above, not left zombies. */
TEST(process_helper_ends_and_is_reaped_after_program_exit, EXPECT_PASS)
{
	pid_t helper = 0, kids[16];
	int p[2];

	need_process();
	become_subreaper();
	CHECK(!pipe(p));
	CHECK(run_in_child(init_report_helper_exit, &p[1]) == CHILD_OK);
	CHECK(read(p[0], &helper, sizeof(helper)) == sizeof(helper));
	CHECK(helper > 0);
	CHECK(gone_within(helper));
	/* Nothing else of the program's is left with the case. */
	for (int i = 0; i < 3000 && children_of(getpid(), kids, 16); i++) {
		while (waitpid(-1, NULL, WNOHANG | __WALL) > 0)
			;
		usleep(10000);
	}
	CHECK(children_of(getpid(), kids, 16) == 0);
}

/* The parent of @pid, from /proc/<pid>/stat, or 0. */
static pid_t parent_of(pid_t pid)
{
	char path[64], buf[512], *end;
	int ppid = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (!fgets(buf, sizeof(buf), f) || !(end = strrchr(buf, ')')) ||
	    sscanf(end + 2, "%*c %d", &ppid) != 1)
		ppid = 0;
	fclose(f);
	return ppid;
}

/* Kill the helper (and with @arg its keeper too), then write. */
static void kill_then_write(void *arg)
{
	bool keeper_too = arg != NULL;
	pid_t helper, keeper;

	init();
	rare_write(flags_word, 8L);
	helper = find_helper();
	CHECK(helper > 0);
	keeper = parent_of(helper);
	CHECK(keeper > 1 && keeper != getpid());
	fprintf(stderr, "helper %d\n", (int)helper);
	if (keeper_too)
		CHECK(!kill(keeper, SIGKILL));
	CHECK(!kill(helper, SIGKILL));
	usleep(100000);
	rare_write(flags_word, 9L); /* must abort */
	fprintf(stderr, "write after helper death returned\n");
}

TEST(process_dead_helper_write_aborts_saying_how, EXPECT_PASS)
{
	char msg[1024], want[160];
	int status, helper = 0;

	need_process();
	become_subreaper();
	status = run_captured(kill_then_write, NULL, msg, sizeof(msg));
	CHECK(sscanf(msg, "helper %d", &helper) == 1);
	if (child_killed_by(status) != SIGABRT)
		fprintf(stderr, "status %#x: %s\n", status, msg);
	CHECK(child_killed_by(status) == SIGABRT);
	snprintf(want, sizeof(want),
		 "rarewrite: rare_write_memcpy(%p): the process backend's "
		 "helper (pid %d) was killed by signal 9; the write cannot be "
		 "applied\n",
		 (void *)&flags_word, helper);
	if (!strstr(msg, want))
		fprintf(stderr, "got: %swant: %s", msg, want);
	CHECK(strstr(msg, want));
	CHECK(!strstr(msg, "returned"));

	/* Keeper and helper killed: no word on how, still a clear abort. */
	status = run_captured(kill_then_write, "", msg, sizeof(msg));
	CHECK(child_killed_by(status) == SIGABRT);
	CHECK(strstr(msg, "helper (pid ") &&
	      strstr(msg, ") has died; the write cannot be applied\n"));
}
