// SPDX-License-Identifier: MIT
/*
 * A half-ported file for check mode (-DRAREWRITE_CHECK_WRITES, step 2 of
 * rarewrite-porting(7)): it compiles cleanly as it is, and in check mode the
 * compiler must name exactly the lines marked UNCONVERTED (tests/tests.mk,
 * check-write-sites). Converted writes, stores marked for before init
 * (rare_write_before_init()) and reads must still compile there.
 */
#include <stddef.h>

#include <rarewrite.h>

struct handler {
	int (*fn)(int);
};

struct config {
	int verbose;
	size_t nr_handlers;
	char name[16];
};

static __wr_rare struct config cfg = {.verbose = 1};
static const struct handler *__wr_rare handlers[8];
static __wr_rare unsigned long generation;

static int twice(int x)
{
	return 2 * x;
}

static const struct handler doubler = {twice};

/* start-up code: a plain store meant for before rare_write_init() */
void setup(void)
{
	rare_write_before_init(cfg.nr_handlers, 0);
	rare_write_before_init(generation, 1);
}

int configure(int verbose, const char *name)
{
	rare_write(cfg.verbose, verbose);
	rare_write(handlers[0], &doubler);
	rare_write_memcpy(cfg.name, name, 4);
	rare_write_add(generation, 1);
	cfg.nr_handlers = 1; /* UNCONVERTED */
	return handlers[0]->fn(cfg.verbose);
}

void reset(void)
{
	struct rare_write_mapping m = rare_write_map(&cfg, sizeof(cfg));

	((struct config *)m.addr)->verbose = 0;
	rare_write_unmap(m);
	rare_write_memset(handlers, 0, sizeof(handlers));
	handlers[1] = &doubler; /* UNCONVERTED */
	generation++;		/* UNCONVERTED */
}
