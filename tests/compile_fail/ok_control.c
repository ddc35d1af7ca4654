// SPDX-License-Identifier: MIT
/* Control for the compile-fail checks: the right types compile cleanly. */
#include <rarewrite.h>

static long *slot __wr_rare;
static long value;

void set(void)
{
	rare_write(slot, &value);
}

/* A bitfield is written through its containing struct. */
struct bits {
	unsigned on : 1;
	unsigned level : 7;
};
static struct bits flags __wr_rare;

void set_bitfield(void)
{
	struct rare_write_mapping m = rare_write_map(&flags, sizeof(flags));
	struct bits copy = flags;

	((struct bits *)m.addr)->on = 1;
	rare_write_unmap(m);
	copy.level = 5;
	rare_write(flags, copy);
}

/* Read-modify-write of a protected counter. */
static unsigned short hits __wr_rare;

unsigned short count(void)
{
	return rare_write_add(hits, 1);
}
