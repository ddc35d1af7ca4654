/* SPDX-License-Identifier: MIT */
/*
 * examples.h - what the examples of the manual and the README take for
 * granted (the types and objects they use without declaring), so that
 * man/check-examples.sh can compile each of them as written. An example
 * needing more says so in a roff comment before it:
 * .\" cc-context: <C declarations>
 */
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <rarewrite.h>
#include <rarewrite/list.h>

struct handler {
	int (*fn)(int);
};
extern const struct handler builtin, default_handler, other, evil;

struct config {
	int verbose;
	char name[16];
	int timeout;
	int retries;
};

extern struct rare_pool *pool;
void use(const void *obj);
