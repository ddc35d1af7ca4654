// SPDX-License-Identifier: MIT
/*
 * attack_core_preinit.c - scenarios 13b-13d: the library's state before
 * init (a library that sealed itself first, a map opened before init) and
 * the fault report's own state.
 *
 * Scenarios run after rare_write_init(); 13b and 13c need a process that
 * has not run it. They re-execute this very program (the runner or the
 * attack-matrix binary both link this file) with RW_CORE_PREINIT set: a
 * constructor here then plays the scenario before main() and ends the
 * process, by exit status 1 when the attack landed, by the signal that
 * stopped it otherwise.
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
#include <time.h>
#include <unistd.h>

#include "attack.h"
#include "../src/internal.h"

static long preinit_var __wr_rare = 1;

/* The table's entry for this program's __wr_rare section. */
static struct rw_region *own_entry(void)
{
	char *table = attack_lib_sym("rw_table");
	uintptr_t start = (uintptr_t)__start_rarewrite_data;

	if (!table)
		_exit(2);
	for (size_t off = 0; off < 64 * 1024; off += sizeof(void *)) {
		struct rw_region *r = (struct rw_region *)(table + off);

		if (r->kind == RW_REGION_SECTION && r->start == start &&
		    r->user_start == start)
			return r;
	}
	_exit(2);
}

/* 13b: the program seals its own section first (as a library does), then
 * one store redirects the section's entry. */
static void preinit_table(void)
{
	struct rw_region *r;
	uintptr_t before;

	if (rare_write_seal_self())
		_exit(2);
	r = own_entry();
	before = r->start;
	attack_store64(&r->start, before + 4096);
	_exit(r->start != before ? 1 : 2);
}

/* 13c: a map opened on plain memory; init must not go ahead under it
 * (after init, unmap would release a view the backend never made). */
static void preinit_map(void)
{
	struct rare_write_mapping m =
		rare_write_map(&preinit_var, sizeof(preinit_var));

	*(long *)m.addr = 2;
	_exit(rare_write_init() == 0 ? 1 : 2);
}

/* 14e: before the first seal, a backend of the attacker's goes into the
 * table's default (the head of the table as core.c lays it out) and into
 * the record of a pool created before init. Lands if any of its functions
 * runs. */
static volatile int fake_calls;

static int fake_setup(void)
{
	fake_calls++;
	return 0;
}

static int fake_region(struct rw_region *r)
{
	(void)r;
	fake_calls++;
	return 0;
}

static void fake_write(const struct rw_seg *seg)
{
	(void)seg;
	fake_calls++;
}

static void preinit_backend(void)
{
	static const struct rw_backend fake = {
		.name = "pwrite",
		.setup = fake_setup,
		.adopt = fake_region,
		.create = fake_region,
		.write = fake_write,
	};
	struct table_head {
		bool initialised;
		int vault_fd;
		const struct rw_backend *backend;
	} *head = attack_lib_sym("rw_table");
	struct rare_pool *pool = rare_pool_create(1 << 12);
	struct rw_region *r = NULL;

	if (!head || !pool)
		_exit(2);
	for (size_t off = 0; off < 64 * 1024; off += sizeof(void *)) {
		struct rw_region *e = (struct rw_region *)((char *)head + off);

		if (e->kind == RW_REGION_POOL && e->start == (uintptr_t)pool) {
			r = e;
			break;
		}
	}
	if (!r || head->backend)
		_exit(2);
	attack_store64(&head->backend, (uint64_t)(uintptr_t)&fake);
	attack_store64(&r->backend, (uint64_t)(uintptr_t)&fake);
	if (rare_write_init())
		_exit(2);
	rare_write(preinit_var, 5L);
	_exit(fake_calls || preinit_var != 5 ? 1 : 2);
}

__attribute__((constructor)) static void core_preinit_child(void)
{
	const char *which = getenv("RW_CORE_PREINIT");

	if (!which)
		return;
	/* This object's constructor may not have run yet. */
	rare_write_register_section_(__start_rarewrite_data,
				     __stop_rarewrite_data);
	if (!strcmp(which, "13b"))
		preinit_table();
	if (!strcmp(which, "13c"))
		preinit_map();
	if (!strcmp(which, "14e"))
		preinit_backend();
	_exit(2);
}

/* Run scenario @id in a fresh execution of this program, before init. */
static void run_preinit(const char *id)
{
	char *argv[] = {"preinit", NULL};
	int status;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		attack_report(ATTACK_ERROR, "fork: %s", strerror(errno));
	if (!pid) {
		setenv("RW_CORE_PREINIT", id, 1);
		execv("/proc/self/exe", argv);
		_exit(3);
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 1)
		attack_report(ATTACK_OPEN, "the store landed before init");
	if (WIFSIGNALED(status) &&
	    (WTERMSIG(status) == SIGSEGV || WTERMSIG(status) == SIGABRT))
		attack_report(ATTACK_BLOCKED, "pre-init process killed by %s",
			      strsignal(WTERMSIG(status)));
	attack_report(ATTACK_ERROR, "pre-init process ended with %#x", status);
}

ATTACK("13b", preinit_table,
       "overwrite the region table after rare_write_seal_self(), before "
       "init")
{
	attack_begin();
	run_preinit("13b");
}

ATTACK("13c", preinit_map,
       "open a map before init, unmap it after (init accepts an open map)")
{
	attack_begin();
	run_preinit("13c");
}

/* --- 13d: the fault report's list of objects ----------------------------- */

/* The list's layout: a count, then {bias, lo, hi, path[256]} records. */
struct fake_object {
	uintptr_t bias, lo, hi;
	char path[256];
};

struct report_target {
	char *nr;		   /* the count */
	struct fake_object *first; /* the first record */
	char fifo[64];
};

static void redirect_report(void *arg)
{
	const struct report_target *t = arg;
	struct fake_object o = {0, 0, UINTPTR_MAX, {0}};
	const uint64_t *w = (const uint64_t *)&o;

	snprintf(o.path, sizeof(o.path), "%s", t->fifo);
	for (size_t i = 0; i < sizeof(o) / 8; i++)
		attack_store64((uint64_t *)t->first + i, w[i]);
	attack_store64(t->nr, 1);
	/* A stray store: the report now opens the FIFO and hangs. */
	attack_store64(&preinit_var, 3);
	_exit(0);
}

ATTACK("13d", fault_report_state,
       "redirect the fault report's list of objects to a FIFO, then fault")
{
	struct report_target t;
	char *list = attack_lib_sym("symbolize_objects");
	bool opened = false;
	int status = 0;
	pid_t pid;

	if (list) {
		t.nr = list;
		t.first = (struct fake_object *)(list + 8);
	} else { /* the older layout: two plain objects */
		t.nr = attack_lib_sym("nr_objects");
		t.first = attack_lib_sym("objects");
	}
	if (!t.nr || !t.first)
		attack_report(ATTACK_ERROR, "no fault report list found");
	snprintf(t.fifo, sizeof(t.fifo), "/tmp/rarewrite-13d-%d", getpid());
	unlink(t.fifo);
	if (mkfifo(t.fifo, 0600))
		attack_report(ATTACK_ERROR, "mkfifo: %s", strerror(errno));
	attack_begin();
	fflush(NULL);
	pid = fork();
	if (!pid)
		redirect_report(&t);
	/* The report opened the FIFO if a writer can open it now. */
	for (int i = 0; i < 500 && !opened; i++) {
		int fd = open(t.fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC);

		if (fd >= 0) {
			opened = true;
			close(fd);
			break;
		}
		if (waitpid(pid, &status, WNOHANG) == pid) {
			pid = 0;
			break;
		}
		nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
	}
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
	}
	unlink(t.fifo);
	if (opened)
		attack_report(
			ATTACK_OPEN,
			"the crashing process opened the attacker's FIFO");
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV)
		attack_report(ATTACK_BLOCKED,
			      "the list's store faulted, no FIFO opened");
	attack_report(ATTACK_ERROR, "child ended with %#x", status);
}

ATTACK("14e", preinit_backend,
       "store a backend of the attacker's into the table (its default and a "
       "pool's record) before the first seal, then init")
{
	attack_begin();
	run_preinit("14e");
}
