// SPDX-License-Identifier: MIT
/* protected_value<T>: with clang++, nor does an initial value that is not a
 * constant expression (built with -c, as cxx_fail_dynamic_init.cc); g++
 * needs RAREWRITE_CONSTINIT for it (cxx_fail_constinit_value.cc). */
#include <rarewrite.hpp>

int limit_from_config(); // run at start-up, not at compile time

static __wr_rare rarewrite::protected_value<int> limit{limit_from_config()};

int get_limit()
{
	return *limit;
}
