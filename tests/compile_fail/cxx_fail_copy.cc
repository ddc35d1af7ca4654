// SPDX-License-Identifier: MIT
/* protected_value<T>: no copy (a copy would be unprotected memory that
 * looks protected), no assignment. */
#include <rarewrite.hpp>

static __wr_rare rarewrite::protected_value<int> limit{10};

void set(const rarewrite::protected_value<int> &other)
{
	limit = other;
}
