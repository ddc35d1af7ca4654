// SPDX-License-Identifier: MIT
/*
 * backends.c - the one list of the library's backends: which there are, in
 * which order the manual lists them, which one "auto" tries first, and
 * (from each ops table) their names and capabilities. Everything else asks
 * it: the core (RAREWRITE_BACKEND, auto, the table's per-backend slots),
 * programs through rare_write_backends(), and through that the test runner,
 * the attack matrix, the benchmark and the build's BACKENDS variable
 * (tools/backends.c). A new backend is one line here plus its own file.
 */
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "rarewrite.h"
#include "internal.h"

extern const struct rw_backend rw_backend_pkey RW_HIDDEN;
extern const struct rw_backend rw_backend_pwrite RW_HIDDEN;
extern const struct rw_backend rw_backend_shadow RW_HIDDEN;
extern const struct rw_backend rw_backend_mprotect RW_HIDDEN;
extern const struct rw_backend rw_backend_process RW_HIDDEN;

/*
 * In the order of the manual and the attack matrix's columns. @preference:
 * auto tries 0 first: pkey, then pwrite, which has no windows, then
 * mprotect, which has; so a program that needs windows gets pkey where the
 * CPU has it, else mprotect. @auto_last: without needed capabilities auto
 * stops here (pwrite needs nothing a Linux kernel lacks: its failure is
 * said, not hidden behind a weaker backend).
 */
static const struct {
	const struct rw_backend *ops;
	unsigned preference;
	bool auto_last;
} registry[] = {
	[RW_BACKEND_PKEY] = {&rw_backend_pkey, 0, false},
	[RW_BACKEND_PWRITE] = {&rw_backend_pwrite, 1, true},
	[RW_BACKEND_SHADOW] = {&rw_backend_shadow, 3, false},
	[RW_BACKEND_MPROTECT] = {&rw_backend_mprotect, 2, false},
	[RW_BACKEND_PROCESS] = {&rw_backend_process, 4, false},
};

#define NR_BACKENDS (sizeof(registry) / sizeof(registry[0]))
_Static_assert(NR_BACKENDS == RW_NR_BACKENDS,
	       "enum rw_backend_id names every backend of the list");
_Static_assert(NR_BACKENDS <= RW_MAX_BACKENDS,
	       "more backends than the core's table has slots for");

/* The ops tables by slot, read-only data: the core reads a pool's backend
 * from here with a load, no call (core.c, pool creation: 27m). */
const struct rw_backend *const rw_backends_ops[RW_NR_BACKENDS] = {
	[RW_BACKEND_PKEY] = &rw_backend_pkey,
	[RW_BACKEND_PWRITE] = &rw_backend_pwrite,
	[RW_BACKEND_SHADOW] = &rw_backend_shadow,
	[RW_BACKEND_MPROTECT] = &rw_backend_mprotect,
	[RW_BACKEND_PROCESS] = &rw_backend_process,
};

const struct rw_backend *rw_backend_at(unsigned i)
{
	return i < NR_BACKENDS ? registry[i].ops : NULL;
}

const struct rw_backend *rw_backend_preferred(unsigned rank, bool *last)
{
	for (size_t i = 0; i < NR_BACKENDS; i++)
		if (registry[i].preference == rank) {
			*last = registry[i].auto_last;
			return registry[i].ops;
		}
	return NULL;
}

int rw_backend_index(const struct rw_backend *b)
{
	for (size_t i = 0; i < NR_BACKENDS; i++)
		if (registry[i].ops == b)
			return (int)i;
	return -1;
}

const struct rw_backend *rw_backend_find(const char *name)
{
	for (size_t i = 0; i < NR_BACKENDS; i++)
		if (!strcmp(name, registry[i].ops->name))
			return registry[i].ops;
	return NULL;
}

const char *rare_write_backends(unsigned i, unsigned *caps)
{
	const struct rw_backend *b = rw_backend_at(i);

	if (b && caps)
		*caps = b->caps;
	return b ? b->name : NULL;
}
