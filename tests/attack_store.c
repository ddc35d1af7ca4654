// SPDX-License-Identifier: MIT
/*
 * attack_store.c - scenarios 1 and 8: plain stores to sealed memory, and
 * rare_write() aimed outside protected memory or across its end.
 */
#include "attack.h"

static uint64_t sealed[2] __wr_rare = {1, 2};
static uint64_t plain_global = 3;

ATTACK("1a", store_sealed_section, "plain store to sealed `__wr_rare` data")
{
	attack_begin();
	attack_store64(&sealed[0], ATTACK_MARKER);
	attack_verdict(attack_load64(&sealed[0]) == ATTACK_MARKER,
		       "store to __wr_rare");
}

ATTACK("1b", store_pool, "plain store to `rare_alloc()` memory")
{
	struct rare_pool *pool = rare_pool_create(1 << 16);
	uint64_t *obj = pool ? rare_alloc(pool, 64) : NULL;

	if (!obj)
		attack_report(ATTACK_ERROR, "pool setup failed");
	attack_begin();
	attack_store64(obj, ATTACK_MARKER);
	attack_verdict(attack_load64(obj) == ATTACK_MARKER, "store to pool");
}

/* A call that must abort; surviving it is "open" (a silent misuse). */
static void must_not_write(void *dst, size_t len, const void *watch)
{
	uint64_t before = attack_load64(watch);
	unsigned char buf[64];

	memset(buf, 0x41, sizeof(buf));
	attack_begin();
	rare_write_memcpy(dst, buf, len);
	attack_report(ATTACK_OPEN, "rare_write_memcpy returned (%s)",
		      attack_load64(watch) != before ? "and wrote"
						     : "nothing written");
}

ATTACK("8a", api_outside, "`rare_write` aimed at plain (unprotected) memory")
{
	must_not_write(&plain_global, sizeof(plain_global), &plain_global);
}

ATTACK("8b", api_straddle,
       "`rare_write_memcpy` straddling the end of a protected region")
{
	/* Computed as an address: the compiler cannot bound it. */
	uintptr_t last = (uintptr_t)__stop_rarewrite_data - 8;

	must_not_write((void *)last, 16, (void *)last);
}

ATTACK("8c", api_pool_meta,
       "`rare_write_memcpy` aimed at a pool's own bookkeeping")
{
	struct rare_pool *pool = rare_pool_create(1 << 16);

	if (!pool)
		attack_report(ATTACK_ERROR, "pool setup failed");
	/* The pool handle is the first byte of its bookkeeping. */
	must_not_write((char *)pool + 8, 8, (char *)pool + 8);
}
