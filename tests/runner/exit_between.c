/* SPDX-License-Identifier: MIT */
/* exit(0) between two groups (suites.conf: 2 groups): the first group is
 * clean, the second never starts and prints nothing. */
#include "fixture.h"

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(passes),
		cmocka_unit_test(passes),
	};
	RUN_GROUP("first", tests);
	exit(0);
	return RUN_GROUP("second", tests);
}
