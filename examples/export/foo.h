/* SPDX-License-Identifier: MIT */
/*
 * foo.h - the public header of libfoo, a library with a protected policy
 * that programs name directly: the recipe of __wr_rare(3), "Exported
 * protected variables". Programs read foo_policy and write it with
 * rare_write(); a plain store dies by SIGSEGV at run time and is a write
 * site in check mode (the accessor returns a pointer to const there).
 */
#ifndef FOO_H
#define FOO_H

#include <rarewrite.h>

struct foo_policy {
	int level;
	unsigned long allowed;
};

/* An accessor, exported in libfoo's node FOO_1.1 (foo.map). */
RARE_WRITE_EXPORT_DECLARE(struct foo_policy, foo_policy);
#ifndef FOO_BUILDING
#define foo_policy (*foo_policy_rare_ref())
#endif

/* libfoo's own use of it: seals its section once the policy is set. */
int foo_init(void);

#endif /* FOO_H */
