// SPDX-License-Identifier: MIT
/*
 * stripped_main.c - a program built stripped (-s: no .symtab) that makes a
 * plain store to its own protected data; tests/test_dso.c runs it and
 * checks that the fault report falls back to the region and the file when
 * no symbol names them.
 */
#include <stdio.h>
#include <string.h>

#include <rarewrite.h>

static long hidden_table[4] __wr_rare;

int main(void)
{
	int err = rare_write_init();

	if (err) {
		fprintf(stderr, "rare_write_init: %s\n", strerror(-err));
		return 2;
	}
	*(volatile long *)&hidden_table[2] = 1;
	return 0;
}
