// SPDX-License-Identifier: MIT
/* rare_write_memcpy() is nonnull: a NULL source is a compile-time warning
 * (it would abort at run time). */
#include <rarewrite.h>

static __wr_rare char name[8];

void set(void)
{
	rare_write_memcpy(name, (const void *)0, sizeof(name));
}
