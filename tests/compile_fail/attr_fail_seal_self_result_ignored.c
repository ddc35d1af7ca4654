// SPDX-License-Identifier: MIT
/* rare_write_seal_self() is warn_unused_result as rare_write_init() is. */
#include <rarewrite.h>

static __wr_rare long state;

long lib_ready(void)
{
	rare_write_seal_self();
	return state;
}
