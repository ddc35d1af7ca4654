// SPDX-License-Identifier: MIT
/* rare_alloc() is alloc_size(2): the compiler knows how large the object
 * is, so a store past its end is a -Warray-bounds error at -O2 (gcc). */
#include <rarewrite.h>

char overrun(struct rare_pool *pool)
{
	char *p = rare_alloc(pool, 4);

	return p ? p[8] : 0;
}
