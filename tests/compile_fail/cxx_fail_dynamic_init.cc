// SPDX-License-Identifier: MIT
/* protected_value<T>: a T whose constructor is not constexpr would be
 * constructed at start-up, a store to memory that rare_write_init() may
 * already have sealed: it does not build (built with -c: the error comes
 * from code generation, not from -fsyntax-only). */
#include <rarewrite.hpp>

struct counters {
	long hits;
	counters() : hits(1) // not constexpr
	{
	}
};

static __wr_rare rarewrite::protected_value<counters> stats;

long hits()
{
	return stats->hits;
}
