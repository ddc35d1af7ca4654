// SPDX-License-Identifier: MIT
/* A shared library with a __wr_rare section of its own, for the DSO tests. */
#include <rarewrite.h>

long dso_protected __wr_rare = 7;
long dso_plain = 8;

long *dso_protected_addr(void)
{
	return &dso_protected;
}

void dso_rare_set(long v)
{
	rare_write(dso_protected, v);
}

/* The library seals itself once ready (rarewrite-porting(7), step 6). */
int dso_seal_self(void)
{
	return rare_write_seal_self();
}
