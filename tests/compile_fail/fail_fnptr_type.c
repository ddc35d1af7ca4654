// SPDX-License-Identifier: MIT
/* rare_write() of a function pointer of another signature must not compile
 * cleanly: handler tables are the main use. */
#include <rarewrite.h>

static int (*handler)(int) __wr_rare;
static void other(void)
{
}

void set(void)
{
	rare_write(handler, other);
}
