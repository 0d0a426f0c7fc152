/* SPDX-License-Identifier: MIT */
/* The group's setup fails: none of its three tests runs. */
#include "fixture.h"

static int fails(void **state)
{
	(void)state;
	return -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(passes),
		cmocka_unit_test(passes),
		cmocka_unit_test(passes),
	};
	return _cmocka_run_group_tests("setup_fails", tests, 3, fails, NULL);
}
