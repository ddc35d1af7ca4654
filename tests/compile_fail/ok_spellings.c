// SPDX-License-Identifier: MIT
/* The spellings beside __wr_rare compile cleanly (-Werror): WR_RARE (not a
 * reserved identifier), the declaration-side __wr_rare_extern and
 * WR_RARE_EXTERN, an exported protected variable, the version macros. */
#include <rarewrite.h>

extern __wr_rare_extern long counters[4];
extern WR_RARE_EXTERN int level;
static WR_RARE long *slot;
long counters[4] __wr_rare;
int level __wr_rare;

struct policy {
	int level;
};
RARE_WRITE_EXPORT_DECLARE(struct policy, lib_policy);
RARE_WRITE_EXPORT_DEFINE(struct policy, lib_policy) = {.level = 1};

#if RAREWRITE_VERSION_NUMBER(RAREWRITE_VERSION_MAJOR, RAREWRITE_VERSION_MINOR, \
			     RAREWRITE_VERSION_PATCH) <                        \
	RAREWRITE_VERSION_NUMBER(0, 2, 0)
#error version macros
#endif

int use(void)
{
	rare_write(slot, &counters[0]);
	rare_write(counters[1], 2);
	rare_write(level, 3);
	rare_write(lib_policy_rare_ref()->level, 2);
	return lib_policy_rare_ref()->level +
	       (rare_write_version() >= RAREWRITE_VERSION_NUMBER(0, 2, 0));
}
