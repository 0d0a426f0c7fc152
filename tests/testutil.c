/* SPDX-License-Identifier: MIT */
/* Helpers shared by the CMocka suites. */
#include "testutil.h"

int wt_start(void **state)
{
	(void)state;
	return weft_init(NULL) == 0 ? 0 : -1;
}

int wt_stop(void **state)
{
	(void)state;
	if (weft_run() != 0)
		return -1;
	return weft_shutdown() == 0 ? 0 : -1;
}

int wt_start_each(void **state) { return wt_start(state); }
int wt_stop_each(void **state) { return wt_stop(state); }

int64_t wt_ms(int64_t ms) { return weft_now() + ms * 1000000; }

void *wt_run_fiber(weft_fn fn, void *arg)
{
	weft_fiber_t f;
	void *r = NULL;
	assert_int_equal(weft_fiber_spawn(&f, NULL, fn, arg), 0);
	assert_int_equal(weft_fiber_join(f, -1, &r), 0);
	return r;
}

int wt_sanitized(void)
{
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
	return 1;
#else
	return 0;
#endif
}

int wt_main(const char *name, const struct CMUnitTest *tests, size_t n,
	    CMFixtureFunction setup, CMFixtureFunction teardown)
{
	int failed = _cmocka_run_group_tests(name, tests, n, setup, teardown);
	return failed > 100 ? 100 : failed;
}
