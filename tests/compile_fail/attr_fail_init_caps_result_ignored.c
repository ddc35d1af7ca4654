// SPDX-License-Identifier: MIT
/* rare_write_init_caps() is warn_unused_result as rare_write_init() is. */
#include <rarewrite.h>

int main(void)
{
	rare_write_init_caps(RARE_WRITE_CAP_BEGIN_END);
	return 0;
}
