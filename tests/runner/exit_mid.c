/* SPDX-License-Identifier: MIT */
/* The second of four tests calls exit(0): one passed, three never report. */
#include "fixture.h"

static void exits(void **state)
{
	(void)state;
	exit(0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(passes),
		cmocka_unit_test(exits),
		cmocka_unit_test(passes),
		cmocka_unit_test(passes),
	};
	return RUN_GROUP("exit_mid", tests);
}
