// SPDX-License-Identifier: MIT
/* RAREWRITE_CONSTINIT: an initial value that is not a constant expression
 * is refused by every compiler (g++ does not refuse it without). */
#include <rarewrite.hpp>

int limit_from_config(); // run at start-up, not at compile time

RAREWRITE_CONSTINIT static __wr_rare rarewrite::protected_value<int> limit{
	limit_from_config()};

int get_limit()
{
	return *limit;
}
