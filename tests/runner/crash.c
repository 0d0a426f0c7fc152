/* SPDX-License-Identifier: MIT */
/* The second of three tests aborts (CMocka catches SIGSEGV, not SIGABRT):
 * the process dies mid-group. */
#include "fixture.h"

static void aborts(void **state)
{
	(void)state;
	abort();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(passes),
		cmocka_unit_test(aborts),
		cmocka_unit_test(passes),
	};
	return RUN_GROUP("crash", tests);
}
