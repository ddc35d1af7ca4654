// SPDX-License-Identifier: MIT
/*
 * say.c - how the library speaks: one line "rarewrite: call: ..." on stderr,
 * and the abort that follows misuse. A leaf: every other file may call it,
 * it calls none of them.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "internal.h"

void rw_vsay(const char *head, const char *fmt, va_list ap)
{
	char msg[320];
	int n = snprintf(msg, sizeof(msg), "rarewrite: %s: ", head);

	n += vsnprintf(msg + n, sizeof(msg) - (size_t)n - 1, fmt, ap);
	if (n > (int)sizeof(msg) - 2)
		n = sizeof(msg) - 2;
	msg[n++] = '\n';
	/* One write(2): the line arrives whole even from a dying process. */
	if (write(STDERR_FILENO, msg, (size_t)n) < 0) {
		/* nothing better to do */
	}
}

void rw_say(const char *call, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	rw_vsay(call, fmt, ap);
	va_end(ap);
}

void rw_die(const char *call, const void *addr, const char *fmt, ...)
{
	char head[160];
	va_list ap;

	snprintf(head, sizeof(head), "%s(%p)", call, addr);
	va_start(ap, fmt);
	rw_vsay(head, fmt, ap);
	va_end(ap);
	abort();
}
