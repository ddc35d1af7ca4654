// SPDX-License-Identifier: MIT
/*
 * attack_sigtable.c - scenarios 13e, 13f and 14g: a vault's descriptor
 * written before its seal, and a child made without fork handlers that
 * writes the parent's signal table.
 *
 * 13e and 13f store a descriptor of the program's (an open log file) into
 * the "fd" field of the signal table, or the region table, before init.
 * Were that taken for "already sealed", the table would stay plain memory
 * after init and the library would pwrite() its records into the log
 * file. They re-execute this program (as attack_core_preinit.c does) with
 * RW_SIGTABLE_PREINIT set; a constructor plays the scenario before main()
 * and exits 1 when the attack landed (a store into the table after init
 * went through, or the log file received the table's bytes).
 *
 * 14g: a one-shot (SA_RESETHAND) SIGSEGV handler fires in a child made by
 * _Fork(), which runs no fork handlers and so shares the parent's signal
 * table memfd: the parent's action must stay.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "attack.h"
#include "../src/internal.h"
#include "../src/table.h"

extern pid_t _Fork(void);

static long sigtable_var __wr_rare = 1;

/* The log file's bytes beyond what the program wrote: the library's. */
#define LOG_LINE "the program's log\n"

/* The log the pre-init process keeps open: its path is in
 * RW_SIGTABLE_LOG; the scenario reads it after the process ended (however
 * it ended: with its table writes going to the log, init may crash). */
static int open_log(void)
{
	const char *path = getenv("RW_SIGTABLE_LOG");
	int fd = path ? open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)
		      : -1;

	if (fd < 0 ||
	    write(fd, LOG_LINE, strlen(LOG_LINE)) != (ssize_t)strlen(LOG_LINE))
		_exit(2);
	return fd;
}

static bool log_grew(int fd)
{
	struct stat st;

	return !fstat(fd, &st) && st.st_size != (off_t)strlen(LOG_LINE);
}

/* 13e: the signal table's fd (its first field). After init, the program's
 * SIGSEGV action in it is pointed at rare_write_begin. */
static void preinit_signal_fd(void)
{
	int *sv = attack_lib_sym("sv");
	int fd;

	if (!sv)
		_exit(2);
	fd = open_log();
	sv[0] = fd; /* the attacker's one store */
	if (rare_write_init())
		_exit(2);
	if (log_grew(fd))
		_exit(1);
	/* The table after init: a store into it (the SIGSEGV action's
	 * first slot, far from the header) must fault. */
	attack_store64((char *)sv + 4096,
		       (uint64_t)(uintptr_t)rare_write_begin);
	_exit(1);
}

/* 13f: the region table's vault_fd and owner. */
static void preinit_table_fd(void)
{
	struct rw_table *t = attack_lib_sym("rw_table");
	const char *name = getenv("RAREWRITE_BACKEND");
	char sym[64];
	const struct rw_backend *b;
	int fd;

	snprintf(sym, sizeof(sym), "rw_backend_%s", name ? name : "");
	b = attack_lib_sym(sym);

	if (!t)
		_exit(2);
	fd = open_log();
	t->vault_fd = fd;
	t->owner.pid = getpid();
	/* The table's own writes would go to the log: the backend in force
	 * goes into it by hand (the review's proof of concept did so). */
	if (b)
		t->backend = b;
	if (rare_write_init())
		_exit(2);
	rare_write(sigtable_var, 2L);
	if (log_grew(fd))
		_exit(1);
	attack_store64(&t->nr_regions, t->nr_regions);
	_exit(1);
}

__attribute__((constructor)) static void sigtable_preinit_child(void)
{
	const char *which = getenv("RW_SIGTABLE_PREINIT");

	if (!which)
		return;
	rare_write_register_section_(__start_rarewrite_data,
				     __stop_rarewrite_data);
	if (!strcmp(which, "13e"))
		preinit_signal_fd();
	if (!strcmp(which, "13f"))
		preinit_table_fd();
	_exit(2);
}

static void run_preinit(const char *id)
{
	char *argv[] = {"preinit", NULL};
	char log[64];
	int status, fd;
	bool grew;
	pid_t pid;

	snprintf(log, sizeof(log), "/tmp/rarewrite-%s-%d", id, getpid());
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		attack_report(ATTACK_ERROR, "fork: %s", strerror(errno));
	if (!pid) {
		setenv("RW_SIGTABLE_PREINIT", id, 1);
		setenv("RW_SIGTABLE_LOG", log, 1);
		execv("/proc/self/exe", argv);
		_exit(3);
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	fd = open(log, O_RDONLY | O_CLOEXEC);
	unlink(log);
	if (fd < 0)
		attack_report(ATTACK_ERROR, "no log: %s", strerror(errno));
	grew = log_grew(fd);
	close(fd);
	if (grew)
		attack_report(ATTACK_OPEN, "the library wrote its table into "
					   "the program's log");
	if (WIFEXITED(status) && WEXITSTATUS(status) == 1)
		attack_report(ATTACK_OPEN, "the table stayed writable after "
					   "init, or wrote into the log");
	if (WIFSIGNALED(status) &&
	    (WTERMSIG(status) == SIGSEGV || WTERMSIG(status) == SIGABRT))
		attack_report(ATTACK_BLOCKED, "pre-init process killed by %s",
			      strsignal(WTERMSIG(status)));
	attack_report(ATTACK_ERROR, "pre-init process ended with %#x", status);
}

ATTACK("13e", preinit_signal_fd,
       "a descriptor of the program's (a log file) stored into the signal "
       "table's `fd` before init: the table stays writable after init (a "
       "store points the SIGSEGV action at `rare_write_begin`), its bytes "
       "go into the log")
{
	attack_begin();
	run_preinit("13e");
}

ATTACK("13f", preinit_table_fd,
       "a descriptor of the program's stored into the region table's "
       "`vault_fd` (and the owner) before init: the table stays "
       "writable, its records go into the log")
{
	attack_begin();
	run_preinit("13f");
}

/* --- 14g: a _Fork() child and the parent's signal table ----------------- */

static void one_shot(int sig)
{
	(void)sig;
}

ATTACK("14g", fork_one_shot,
       "a one-shot (`SA_RESETHAND`) SIGSEGV handler fires in a child made "
       "by `_Fork()` (no fork handlers: it shares the parent's signal "
       "table): the parent's action is reset")
{
	struct sigaction sa = {.sa_handler = one_shot}, cur;
	int status;
	pid_t pid;

	sa.sa_flags = SA_RESETHAND;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGSEGV, &sa, NULL))
		attack_report(ATTACK_ERROR, "sigaction: %s", strerror(errno));
	attack_begin();
	fflush(NULL);
	pid = _Fork();
	if (pid < 0)
		attack_report(ATTACK_ERROR, "_Fork: %s", strerror(errno));
	if (!pid) {
		raise(SIGSEGV); /* the one-shot handler runs, once */
		_exit(0);
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (sigaction(SIGSEGV, NULL, &cur))
		attack_report(ATTACK_ERROR, "sigaction: %s", strerror(errno));
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT)
		attack_report(ATTACK_ERROR, "the child aborted");
	attack_verdict(cur.sa_handler != one_shot,
		       "the child reset the parent's SIGSEGV action");
}
