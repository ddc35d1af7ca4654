// SPDX-License-Identifier: MIT
/* protected_value<T *>: -> reaches the object pointed to, but the pointer
 * itself still only changes through write(). */
#include <rarewrite.hpp>

struct metrics {
	int n;
};
static metrics m;
static __wr_rare rarewrite::protected_value<metrics *> g_metrics{&m};

void set(void)
{
	*g_metrics = nullptr;
}
