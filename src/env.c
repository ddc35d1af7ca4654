// SPDX-License-Identifier: MIT
/*
 * env.c - what the environment asks of rare_write_init(); what it cannot
 * give is said in one line on stderr (say.c), then an error code.
 *
 * RAREWRITE_NEED lists the capabilities the program relies on, so that a
 * port that wraps code in rare_write_begin()/rare_write_end() can run with
 * RAREWRITE_BACKEND unset: "auto" then picks a backend that has them.
 *
 * Both variables are read with secure_getenv(): in a set-user-ID,
 * set-group-ID or file-capability program (AT_SECURE) they are ignored, so
 * whoever starts it cannot choose a weaker backend for it, nor make its
 * init fail with a bogus value. Such a program says what it needs with
 * rare_write_init_caps().
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rarewrite.h"
#include "internal.h"

static const struct {
	const char *name;
	unsigned cap;
} cap_names[] = {
	{"begin_end", RARE_WRITE_CAP_BEGIN_END},
	{"thread_local", RARE_WRITE_CAP_THREAD_LOCAL},
};

int rw_env_need(unsigned *need)
{
	const char *env = secure_getenv("RAREWRITE_NEED");

	while (env && *env) {
		size_t len = strcspn(env, ",");
		size_t i;

		for (i = 0; i < sizeof(cap_names) / sizeof(cap_names[0]); i++)
			if (len == strlen(cap_names[i].name) &&
			    !strncmp(env, cap_names[i].name, len))
				break;
		if (i == sizeof(cap_names) / sizeof(cap_names[0])) {
			rw_say("rare_write_init",
			       "unknown capability \"%.*s\" in RAREWRITE_NEED "
			       "(begin_end, thread_local)",
			       (int)(len > 32 ? 32 : len), env);
			return -EINVAL;
		}
		*need |= cap_names[i].cap;
		env += len + (env[len] == ',');
	}
	return 0;
}
