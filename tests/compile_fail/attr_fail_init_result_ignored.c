// SPDX-License-Identifier: MIT
/* rare_write_init() is warn_unused_result: ignoring whether protection is
 * on must not compile with -Werror. */
#include <rarewrite.h>

int main(void)
{
	rare_write_init();
	return 0;
}
