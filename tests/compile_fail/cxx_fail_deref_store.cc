// SPDX-License-Identifier: MIT
/* protected_value<T>: a read gives a const T, so a plain store does not
 * compile, in any build. */
#include <rarewrite.hpp>

static __wr_rare rarewrite::protected_value<int> limit{10};

void set(void)
{
	*limit = 20;
}
