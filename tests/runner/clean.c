/* SPDX-License-Identifier: MIT */
/* Two groups that run to the end: 3 passed, 1 skipped (suites.conf: 2
 * groups). Built a second time as "undeclared", which suites.conf does not
 * list: one group expected, two ran, a failure. */
#include "fixture.h"

static void skips(void **state)
{
	(void)state;
	skip();
}

int main(void)
{
	const struct CMUnitTest one[] = {
		cmocka_unit_test(passes),
		cmocka_unit_test(skips),
	};
	const struct CMUnitTest two[] = {
		cmocka_unit_test(passes),
		cmocka_unit_test(passes),
	};
	return RUN_GROUP("one", one) + RUN_GROUP("two", two);
}
