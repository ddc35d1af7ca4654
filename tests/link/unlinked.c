// SPDX-License-Identifier: MIT
/*
 * link/unlinked.c - a program linked without rarewrite.ld (tests/contracts.mk,
 * check-unlinked): its __wr_rare section is not page-aligned, so
 * rare_write_init() must refuse as rare_write_init(3) says, with -ENOEXEC
 * and one line saying how to link, and return: no abort. Exit 0, or 1 with
 * a line on stderr.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <rarewrite.h>

static long counter __wr_rare = 1;

int main(void)
{
	char said[512] = "";
	int p[2], saved = dup(2), err, again;
	ssize_t n;

	if (pipe(p) || saved < 0 || dup2(p[1], 2) < 0)
		return 1;
	err = rare_write_init();
	again = rare_write_init();
	dup2(saved, 2);
	close(p[1]);
	n = read(p[0], said, sizeof(said) - 1);
	said[n > 0 ? n : 0] = 0;
	if (err != -ENOEXEC || again != -ENOEXEC) {
		fprintf(stderr, "unlinked: rare_write_init returned %d, %d\n",
			err, again);
		return 1;
	}
	if (!strstr(said, "rare_write_init") || !strstr(said, "pkg-config")) {
		fprintf(stderr, "unlinked: the refusal said '%s'\n", said);
		return 1;
	}
	if (strchr(said, '\n'))
		strchr(said, '\n')[1] = 0; /* one of the two lines */
	counter = 2;			   /* nothing was protected */
	printf("ok   unlinked: rare_write_init() = -ENOEXEC: %s", said);
	return counter == 2 ? 0 : 1;
}
