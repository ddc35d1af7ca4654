// SPDX-License-Identifier: MIT
/*
 * driver_sites.c as C++ (tests/check-driver.sh): it compiles cleanly as
 * it is; rarewrite-cc's check pass must name exactly the lines marked
 * UNCONVERTED, with g++ and clang++, for every spelling of the annotation,
 * definitions without an initialiser included (a const object needs one
 * in C++), in a namespace and in a class; ADDRESS_ONLY lines are notes.
 */
#include <cstring>
#include <pthread.h>

#include <rarewrite.h>

namespace app
{

struct handler {
	int (*fn)(int);
};
struct config {
	int verbose;
	char name[16];
};

static const handler *handlers[8] __wr_rare;
static int *WR_RARE ptrs[4];
static config cfg __wr_rare = {1, "x"};
static int (*hook)(int) __wr_rare;
static WR_RARE unsigned long generation, epoch;
static pthread_t workers[2] __wr_rare;
extern long lib_counters[4] __wr_rare_extern;
extern WR_RARE_EXTERN int lib_level;

struct command {
	const char *name;
	command *sub;
};
static command subcommands[2] __wr_rare;
static command commands[] = {
	{"config", subcommands},    /* ADDRESS_ONLY */
	{"debug", &subcommands[1]}, /* ADDRESS_ONLY */
};

static int twice(int x)
{
	return 2 * x;
}
static const handler doubler = {twice};

static void *work(void *arg)
{
	return arg;
}

static int link_commands(command *from, command *to)
{
	return from == to;
}

void setup()
{
	rare_write_before_init(generation, 1UL);
	rare_write_before_init(subcommands[0].name, "get");
}

int port(const char *name, int *p)
{
	rare_write(handlers[0], &doubler);
	rare_write(ptrs[0], p);
	rare_write(cfg.verbose, 2);
	rare_write(hook, twice);
	rare_write_add(generation, 1);
	rare_write(lib_counters[0], 1L);
	rare_write_memcpy(cfg.name, name, 4);

	handlers[1] = &doubler;	      /* UNCONVERTED */
	ptrs[1] = p;		      /* UNCONVERTED */
	cfg.verbose = 0;	      /* UNCONVERTED */
	hook = nullptr;		      /* UNCONVERTED */
	epoch++;		      /* UNCONVERTED */
	lib_counters[1] = 2;	      /* UNCONVERTED */
	lib_level = 4;		      /* UNCONVERTED */
	std::strcpy(cfg.name, name);  /* UNCONVERTED */
	long *derived = lib_counters; /* UNCONVERTED */
	derived[2] = 5;
	link_commands(&commands[0], subcommands);	     /* UNCONVERTED */
	pthread_create(&workers[0], nullptr, work, nullptr); /* UNCONVERTED */
	return handlers[0]->fn(cfg.verbose) + (hook != nullptr) +
	       (commands[0].sub != nullptr) + *ptrs[0];
}

} // namespace app
