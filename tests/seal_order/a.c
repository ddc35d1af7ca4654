// SPDX-License-Identifier: MIT
/* Linked first into libsealorder.so, and without <rarewrite.h>: its
 * constructor (default priority) starts the library, which seals itself
 * from b.c. The header's registration constructor in b.c must have run
 * already (it has priority 101), whatever the link order. */
void b_init(void);

__attribute__((constructor)) static void a_start(void)
{
	b_init();
}
