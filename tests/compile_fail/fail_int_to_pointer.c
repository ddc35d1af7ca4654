// SPDX-License-Identifier: MIT
/* rare_write() of an integer into a pointer must not compile cleanly. */
#include <rarewrite.h>

static void (*handler)(void) __wr_rare;

void set(long attacker_controlled)
{
	rare_write(handler, attacker_controlled);
}
