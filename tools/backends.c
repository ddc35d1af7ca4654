// SPDX-License-Identifier: MIT
/*
 * backends.c - print the library's backends, one a line, as
 * rare_write_backends(3) lists them: the build's BACKENDS variable and
 * tests/check-deb.sh loop over this, so that no script names a backend.
 */
#include <stdio.h>

#include <rarewrite.h>

int main(void)
{
	const char *name;

	for (unsigned i = 0; (name = rare_write_backends(i, NULL)); i++)
		puts(name);
	return 0;
}
