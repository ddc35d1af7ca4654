// SPDX-License-Identifier: MIT
/* rare_write() cannot take a bitfield (it needs its address): write the
 * containing struct instead (see ok_control.c). */
#include <rarewrite.h>

static struct {
	unsigned on : 1;
	unsigned level : 7;
} flags __wr_rare;

void set(void)
{
	rare_write(flags.on, 1u);
}
