/* SPDX-License-Identifier: MIT */
/* The second of two tests never returns (suites.conf: a 2 s timeout). */
#define _POSIX_C_SOURCE 200809L
#include <unistd.h>

#include "fixture.h"

static void hangs(void **state)
{
	(void)state;
	for (;;)
		pause();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(passes),
		cmocka_unit_test(hangs),
	};
	return RUN_GROUP("hang", tests);
}
