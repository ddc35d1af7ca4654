// SPDX-License-Identifier: MIT
/* libfoo: defines the protected policy and its accessor (built with
 * -DFOO_BUILDING -fvisibility=hidden and foo.map). */
#include "foo.h"

RARE_WRITE_EXPORT_DEFINE(struct foo_policy, foo_policy) = {.level = 1};

__attribute__((visibility("default"))) int foo_init(void)
{
	rare_write(foo_policy.allowed, 0x3UL);
	return rare_write_seal_self();
}
