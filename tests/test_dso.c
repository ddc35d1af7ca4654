// SPDX-License-Identifier: MIT
/* The __wr_rare section of a shared library (tests/dso_lib.c, linked in). */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "testutil.h"

/* tests/dso_lib.c */
long *dso_protected_addr(void);
void dso_rare_set(long v);
extern long dso_plain;
int dso_seal_self(void);

/* --- a library sealing itself ------------------------- */

static void dso_rare_set_99(void *unused)
{
	(void)unused;
	dso_rare_set(99);
	CHECK(*dso_protected_addr() == 99);
}

static long program_own __wr_rare = 3;

TEST(dso_seal_self_seals_only_the_library, EXPECT_PASS)
{
	long *p = dso_protected_addr();

	CHECK(dso_seal_self() == 0);
	CHECK(dso_seal_self() == 0); /* idempotent */
	/* No init yet, but the seal chose the backend. */
	CHECK(strcmp(rare_write_backend(), "none"));
	CHECK(rare_write_caps() == 0);
	/* The library's data: sealed now; rare_write() gets in. */
	expect_segv(store_long, p);
	dso_rare_set(72);
	CHECK(*p == 72);
	rare_write(*p, 73L);
	CHECK(*p == 73);
	/* The program's own section stays plain until its init. */
	*(volatile long *)&program_own = 4;
	CHECK(program_own == 4);
	/* fork: the child's writes stay in the child */
	CHECK(run_in_child(dso_rare_set_99, NULL) == CHILD_OK);
	CHECK(*p == 73);
	init(); /* seals everything left */
	CHECK(program_own == 4 && *p == 73);
	expect_segv(store_long, &program_own);
	expect_segv(store_long, p);
	rare_write(program_own, 5L);
	dso_rare_set(74);
	CHECK(program_own == 5 && *p == 74);
}

TEST(dso_seal_self_after_init_is_a_no_op, EXPECT_PASS)
{
	init();
	CHECK(dso_seal_self() == 0);
	dso_rare_set(75);
	CHECK(*dso_protected_addr() == 75);
	expect_segv(store_long, dso_protected_addr());
}

TEST(dso_seal_self_reports_stray_store, EXPECT_PASS)
{
	char msg[1024];
	int st;

	CHECK(dso_seal_self() == 0);
	st = run_captured(store_long, dso_protected_addr(), msg, sizeof(msg));
	CHECK(child_killed_by(st) == SIGSEGV);
	CHECK(strstr(msg, "(dso_protected+0x0 in libdso.so) by pc "));
}

TEST(dso_section_plain_before_init, EXPECT_PASS)
{
	long *p = dso_protected_addr();

	CHECK(*p == 7);
	*p = 70; /* ordinary data until init */
	dso_rare_set(71);
	CHECK(*p == 71);
	init();
	CHECK(*p == 71);
}

TEST(dso_section_protected_after_init, EXPECT_SEGV)
{
	init();
	CHECK(*dso_protected_addr() == 7);
	*(volatile long *)dso_protected_addr() = 1;
}

TEST(dso_rare_set_works, EXPECT_PASS)
{
	init();
	dso_rare_set(42);
	CHECK(*dso_protected_addr() == 42);
	/* and from the program, through the DSO's address */
	rare_write(*dso_protected_addr(), 43L);
	CHECK(*dso_protected_addr() == 43);
	expect_segv(store_long, dso_protected_addr());
	CHECK(*dso_protected_addr() == 43);
}

TEST(dso_plain_neighbour_writable, EXPECT_PASS)
{
	init();
	CHECK(dso_plain == 8);
	dso_plain = 80;
	CHECK(dso_plain == 80);
	/* page isolation inside the DSO: the neighbour is on another page */
	CHECK(((uintptr_t)&dso_plain ^ (uintptr_t)dso_protected_addr()) >=
	      page_size());
}

TEST(dso_section_distinct_from_program_section, EXPECT_PASS)
{
	uintptr_t p = (uintptr_t)dso_protected_addr();

	CHECK(p < (uintptr_t)__start_rarewrite_data ||
	      p >= (uintptr_t)__stop_rarewrite_data);
	init();
	/* both sections sealed, both writable through the library */
	dso_rare_set(5);
	CHECK(*dso_protected_addr() == 5);
}

/*
 * Copy relocations (tests/copyreloc_main.c): a program that uses the DSO's
 * __wr_rare variable directly gets a copy of it in its own writable .bss.
 * rare_write_init() must refuse that with one line naming the variable and
 * the fix; built -fPIC -Wl,-z,nocopyreloc the same program is protected.
 */
static void exec_sibling(void *name)
{
	char path[4096];
	ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 64);
	char *slash;

	if (n <= 0)
		_exit(126);
	path[n] = 0;
	slash = strrchr(path, '/');
	snprintf(slash + 1, sizeof(path) - (size_t)(slash + 1 - path), "%s",
		 (const char *)name);
	execl(path, path, (char *)NULL);
	_exit(127);
}

/* Run a sibling of the runner; return its wait status and its stderr. */
static int run_sibling(const char *name, char *msg, size_t cap)
{
	return run_captured(exec_sibling, (void *)name, msg, cap);
}

static void expect_copy_refused(const char *prog)
{
	char msg[1024];
	int status = run_sibling(prog, msg, sizeof(msg));

	if (child_killed_by(status) != SIGABRT)
		fprintf(stderr, "%s: status %#x, stderr '%s'\n", prog, status,
			msg);
	CHECK(child_killed_by(status) == SIGABRT);
	CHECK(strncmp(msg, "rarewrite: rare_write_init(0x", 29) == 0);
	CHECK(strchr(msg, '\n') == msg + strlen(msg) - 1); /* one line */
	CHECK(strstr(msg, "dso_protected (__wr_rare, libdso.so)"));
	CHECK(strstr(msg, "copy-relocated"));
	CHECK(strstr(msg, "-Wl,-z,nocopyreloc\n"));
}

TEST(dso_copy_relocation_refused_pie, EXPECT_PASS)
{
	expect_copy_refused("copyreloc");
}

TEST(dso_copy_relocation_refused_no_pie, EXPECT_PASS)
{
	expect_copy_refused("copyreloc-nopie");
}

TEST(dso_no_copy_relocation_protected, EXPECT_PASS)
{
	char msg[1024];
	int status = run_sibling("copyreloc-nocopy", msg, sizeof(msg));

	if (child_killed_by(status) != SIGSEGV)
		fprintf(stderr, "copyreloc-nocopy: status %#x, stderr '%s'\n",
			status, msg);
	CHECK(child_killed_by(status) == SIGSEGV);
	/* The fault report names the library's variable and the program's
	 * function that stored to it. */
	CHECK(strncmp(msg, "rarewrite: write to protected memory at 0x", 42) ==
	      0);
	CHECK(strstr(msg, " (dso_protected+0x0 in libdso.so) by pc main+0x"));
	CHECK(strstr(msg, " in copyreloc-nocopy: write it with rare_write() "
			  "or inside a window\n"));
	CHECK(strchr(msg, '\n') == msg + strlen(msg) - 1);
}

/* Without .symtab (stripped), the report names the region and the file:
 * "section of fault-stripped+0x10", pc "0x... in fault-stripped". */
TEST(fault_report_stripped_program_names_region, EXPECT_PASS)
{
	char msg[1024];
	int status = run_sibling("fault-stripped", msg, sizeof(msg));

	if (child_killed_by(status) != SIGSEGV)
		fprintf(stderr, "fault-stripped: status %#x, stderr '%s'\n",
			status, msg);
	CHECK(child_killed_by(status) == SIGSEGV);
	CHECK(strncmp(msg, "rarewrite: write to protected memory at 0x", 42) ==
	      0);
	CHECK(strstr(msg, " (section of fault-stripped+0x10) by pc 0x"));
	CHECK(strstr(msg, " in fault-stripped: write it with rare_write() or "
			  "inside a window\n"));
	CHECK(strchr(msg, '\n') == msg + strlen(msg) - 1);
}
