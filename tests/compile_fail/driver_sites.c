// SPDX-License-Identifier: MIT
/*
 * A half-ported file for rarewrite-cc (tests/check-driver.sh): it compiles
 * cleanly as it is; the driver's check pass must name exactly the lines
 * marked UNCONVERTED, with gcc and clang, whichever spelling declares the
 * object: after the declarator, where const goes, on a line of its own,
 * a function pointer, an extern declaration seen only as in a library's
 * public header, and stores made by a called function. Initialisers that
 * only take a protected table's address (marked ADDRESS_ONLY) are said as
 * notes, not sites; rare_write_before_init() is no site.
 */
#include <pthread.h>
#include <string.h>

#include <rarewrite.h>

struct handler {
	int (*fn)(int);
};
struct config {
	int verbose;
	char name[16];
};

static const struct handler *handlers[8] __wr_rare;
static const struct handler *__wr_rare spare[2];
/* the annotation on a line of its own, on purpose */
/* clang-format off */
static struct config cfg
	__wr_rare = {.verbose = 1};
/* clang-format on */
static int (*hook)(int) __wr_rare;
static WR_RARE unsigned long generation;
static pthread_t workers[2] __wr_rare;
/* as a library's public header declares it; defined elsewhere */
extern long lib_counters[4] __wr_rare_extern;
extern WR_RARE_EXTERN int lib_level;

static int twice(int x)
{
	return 2 * x;
}

static const struct handler doubler = {twice};

/* a command table pointing into protected subcommand tables */
struct command {
	const char *name;
	struct command *sub;
};
static struct command config_subcommands[2] __wr_rare = {{"get", NULL}};
static struct command commands[] = {
	{.name = "config", .sub = config_subcommands}, /* ADDRESS_ONLY */
	{.sub = &config_subcommands[1], .name = "x"},  /* ADDRESS_ONLY */
	{"debug", config_subcommands},		       /* ADDRESS_ONLY */
};

static int link_commands(struct command *from, struct command *to)
{
	return from == to;
}

/* start-up code: plain stores meant for before rare_write_init() */
void setup(int verbose)
{
	rare_write_before_init(cfg.verbose, verbose);
	rare_write_before_init(spare[1], &doubler);
	rare_write_before_init(config_subcommands[1].name, "set");
}

static void *work(void *arg)
{
	return arg;
}

int port(const char *name)
{
	struct rare_write_mapping m;
	long *derived;

	rare_write(handlers[0], &doubler);
	rare_write(spare[0], &doubler);
	rare_write(cfg.verbose, 2);
	rare_write(hook, twice);
	rare_write_add(generation, 1);
	rare_write(lib_counters[0], 1);
	rare_write_memcpy(cfg.name, name, 4);
	m = rare_write_map(&lib_level, sizeof(lib_level));
	*(int *)m.addr = 3;
	rare_write_unmap(m);

	handlers[1] = &doubler; /* UNCONVERTED */
	spare[1] = &doubler;	/* UNCONVERTED */
	cfg.verbose = 0;	/* UNCONVERTED */
	hook = 0;		/* UNCONVERTED */
	generation++;		/* UNCONVERTED */
	lib_counters[1] = 2;	/* UNCONVERTED */
	lib_level = 4;		/* UNCONVERTED */
	strcpy(cfg.name, name); /* UNCONVERTED */
	derived = lib_counters; /* UNCONVERTED */
	derived[2] = 5;
	link_commands(&commands[0], config_subcommands); /* UNCONVERTED */
	pthread_create(&workers[0], NULL, work, NULL);	 /* UNCONVERTED */
	return handlers[0]->fn(cfg.verbose) + (hook != 0) + spare[0]->fn(1) +
	       (commands[0].sub != NULL);
}
