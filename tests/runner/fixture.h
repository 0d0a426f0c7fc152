/* SPDX-License-Identifier: MIT */
/* The runner's fixtures (tests/runner/check.sh): tiny CMocka programs, each
 * ending in one way mk/run-tests.sh must report. */
#ifndef WEFT_RUNNER_FIXTURE_H
#define WEFT_RUNNER_FIXTURE_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

static inline void passes(void **state)
{
	(void)state;
	assert_int_equal(1 + 1, 2);
}

#define RUN_GROUP(name, tests) \
	_cmocka_run_group_tests(name, tests, sizeof(tests) / sizeof((tests)[0]), NULL, NULL)

#endif
