// SPDX-License-Identifier: MIT
/* rare_write() of a pointer of the wrong type must not compile cleanly. */
#include <rarewrite.h>

static long *slot __wr_rare;
static double value;

void set(void)
{
	rare_write(slot, &value);
}
