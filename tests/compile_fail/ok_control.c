// SPDX-License-Identifier: MIT
/* Control for the compile-fail checks: the right types compile cleanly. */
#include <rarewrite.h>

static long *slot __wr_rare;
static long value;

void set(void)
{
	rare_write(slot, &value);
}
