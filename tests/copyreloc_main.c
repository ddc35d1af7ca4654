// SPDX-License-Identifier: MIT
/*
 * copyreloc_main.c - a program that refers to a shared library's __wr_rare
 * variable directly (tests/dso_lib.c's dso_protected), built apart from the
 * runner (tests/tests.mk) three ways:
 *
 *   copyreloc         PIE: the linker emits an R_X86_64_COPY relocation, so
 *   copyreloc-nopie   the live variable would sit in the program's writable
 *                     .bss; rare_write_init() must abort with one line.
 *   copyreloc-nocopy  -fPIC -Wl,-z,nocopyreloc: no copy, the variable stays
 *                     in the library's section; init succeeds, rare_write()
 *                     works and the plain store at the end must fault.
 *
 * Exit status: 2 init failed, 3 not bound to the library's variable,
 * 4 rare_write() lost, 5 the plain store went through (unprotected).
 * tests/test_dso.c runs them on every backend.
 */
#include <stdio.h>
#include <string.h>

#include <rarewrite.h>

extern long dso_protected;
long *dso_protected_addr(void);

int main(void)
{
	int err;

	/* the library's code uses the same object as the program */
	if (&dso_protected != dso_protected_addr() || dso_protected != 7)
		return 3;
	err = rare_write_init();
	if (err) {
		fprintf(stderr, "rare_write_init: %s\n", strerror(-err));
		return 2;
	}
	rare_write(dso_protected, 8L);
	if (dso_protected != 8 || *dso_protected_addr() != 8)
		return 4;
	*(volatile long *)&dso_protected = 9; /* SIGSEGV */
	fprintf(stderr, "copyreloc: a plain store to dso_protected went "
			"through after rare_write_init()\n");
	return 5;
}
