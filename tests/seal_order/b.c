// SPDX-License-Identifier: MIT
/* The library's protected state and its sealing call (rare_write_seal_self(3),
 * "Constructor order" and "Abort or go on"). */
#include <rarewrite.h>

static __wr_rare long b_state = 1;
/* the library goes on when sealing fails, and says so when asked */
static int b_seal_err = 1;

void b_init(void)
{
	rare_write(b_state, 2); /* before sealing: through rare_write() too */
	b_seal_err = rare_write_seal_self();
}

int b_sealed(void)
{
	return b_seal_err;
}

long *b_state_addr(void)
{
	return &b_state;
}
