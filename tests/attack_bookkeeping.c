// SPDX-License-Identifier: MIT
/*
 * attack_bookkeeping.c - scenario 7: an arbitrary-write primitive aimed at
 * the library's own state, so that a later legitimate write lands somewhere
 * else or a window stays open. The objects are file-local to the library;
 * the test finds them in its ELF symbol table (attack_lib_sym), as an
 * attacker with the binary would.
 */
#define _GNU_SOURCE
#include <stdio.h>

#include "attack.h"
#include "../src/internal.h"

static uint64_t bvictim[2] __wr_rare __attribute__((aligned(16)));

/* The region table's entry for this program's __wr_rare section. */
static struct rw_region *section_entry(void)
{
	char *table = attack_lib_sym("rw_table");
	uintptr_t start = (uintptr_t)__start_rarewrite_data;

	if (!table)
		attack_report(ATTACK_ERROR, "no symbol 'rw_table' in the library");
	for (size_t off = 0; off < 64 * 1024; off += sizeof(void *)) {
		struct rw_region *r = (struct rw_region *)(table + off);

		if (r->kind == RW_REGION_SECTION && r->start == start &&
		    r->user_start == start)
			return r;
	}
	attack_report(ATTACK_ERROR, "section not found in the region table");
}

ATTACK("7a", region_table, "overwrite the region table at rest")
{
	struct rw_region *r = section_entry();
	uintptr_t before = r->start;

	attack_begin();
	attack_try_store64(&r->start, before + 4096);
	attack_verdict(r->start != before, "redirecting the section's entry");
}

static void pool_cycle(void *arg)
{
	(void)arg;
	rare_pool_destroy(rare_pool_create(4096));
}

ATTACK("7b", region_table_race,
       "overwrite the region table while another thread creates pools")
{
	/* A slot well past the high-water mark: harmless if it lands. */
	struct rw_region *spare = section_entry() + 32;

	attack_begin();
	attack_verdict(
		attack_race(&spare->priv, ATTACK_MARKER, pool_cycle, NULL, 5.0),
		"racing store into the region table");
}

/* The count is the first word of mprotect.c's control page, a static
 * object (no pointer to it: attack 12a). */
static unsigned long *mprotect_control(void)
{
	unsigned long *control;

	if (strcmp(rare_write_backend(), "mprotect"))
		attack_report(ATTACK_NA, "no mprotect control page");
	control = attack_lib_sym("control");
	if (!control)
		attack_report(ATTACK_ERROR, "no symbol 'control'");
	return control;
}

ATTACK("7c", window_count, "raise mprotect's window count at rest")
{
	unsigned long *count = mprotect_control();

	attack_begin();
	attack_try_store64(count, 5);
	attack_verdict(*count == 5, "raising the count");
}

ATTACK("7d", window_count_open,
       "raise mprotect's window count during a window, so `end` keeps it "
       "open")
{
	unsigned long *count = mprotect_control();

	rare_write_begin();
	attack_begin();
	attack_try_store64(count, *count + 1);
	rare_write_end();
	attack_verdict(attack_try_store64(&bvictim[0], ATTACK_MARKER) &&
			       attack_load64(&bvictim[0]) == ATTACK_MARKER,
		       "store after rare_write_end");
}

ATTACK("7e", pool_meta, "overwrite a pool's allocator bookkeeping")
{
	struct rare_pool *pool = rare_pool_create(1 << 16);
	uint64_t *meta = (uint64_t *)pool + 3;

	if (!pool || !rare_alloc(pool, 32))
		attack_report(ATTACK_ERROR, "pool setup failed");
	attack_begin();
	attack_try_store64(meta, ATTACK_MARKER);
	attack_verdict(attack_load64(meta) == ATTACK_MARKER,
		       "store to the pool header");
}

ATTACK("7f", window_depth,
       "raise the thread-local window depth during a window, so `end` keeps "
       "it open")
{
	volatile unsigned *depth;

	if (!(rare_write_caps() & RARE_WRITE_CAP_BEGIN_END))
		attack_report(ATTACK_NA, "no begin/end windows");
	depth = attack_lib_sym("rw_window_depth");
	if (!depth)
		attack_report(ATTACK_ERROR, "no symbol 'window_depth'");
	rare_write_begin();
	attack_begin();
	*depth += 1;
	rare_write_end();
	attack_verdict(attack_try_store64(&bvictim[0], ATTACK_MARKER) &&
			       attack_load64(&bvictim[0]) == ATTACK_MARKER,
		       "store after rare_write_end");
}

/* core.c's record of an open map, in its table. */
struct open_map_copy {
	uintptr_t start, end, view;
	unsigned long token;
};

static struct open_map_copy *open_map_record(const struct rare_write_mapping *m)
{
	char *table = attack_lib_sym("rw_table");

	if (!table)
		attack_report(ATTACK_ERROR, "no symbol 'rw_table' in the library");
	for (size_t off = 0; off < 256 * 1024; off += sizeof(void *)) {
		struct open_map_copy *e = (struct open_map_copy *)(table + off);

		if (e->token == m->token && e->start == (uintptr_t)m->target &&
		    e->end == e->start + m->len)
			return e;
	}
	attack_report(ATTACK_ERROR, "open map not found in the table");
}

ATTACK("7g", open_maps,
       "rewrite the open-maps list and the mapping handle so `unmap` commits "
       "elsewhere")
{
	struct rare_write_mapping m;
	struct open_map_copy *e;

	m = rare_write_map(&bvictim[0], sizeof(bvictim[0]));
	*(uint64_t *)m.addr = ATTACK_MARKER; /* the program's own update */
	e = open_map_record(&m);
	attack_begin();
	/* The record first (each store recovers if it faults), then the
	 * handle, so that both name the other object. */
	attack_try_store64(&e->start, (uintptr_t)&bvictim[1]);
	attack_try_store64(&e->end,
			   (uintptr_t)&bvictim[1] + sizeof(bvictim[1]));
	m.target = &bvictim[1];
	rare_write_unmap(m);
	attack_verdict(attack_load64(&bvictim[1]) == ATTACK_MARKER,
		       "redirected commit");
}
