// SPDX-License-Identifier: MIT
/* rare_write() of a struct into a scalar must not compile. */
#include <rarewrite.h>

struct pair {
	int a, b;
};
static int slot __wr_rare;

void set(struct pair p)
{
	rare_write(slot, p);
}
