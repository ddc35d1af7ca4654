// SPDX-License-Identifier: MIT
/* protected_value<T>: nor does a store to a member through ->. */
#include <rarewrite.hpp>

struct cfg {
	int level;
};
static __wr_rare rarewrite::protected_value<cfg> conf;

void set(void)
{
	conf->level = 2;
}
