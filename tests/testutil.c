/* SPDX-License-Identifier: MIT */
/* Helpers shared by the CMocka suites. */
#include "testutil.h"

#include "shim.h"

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

weft_fiber_t wt_spawn(weft_fn fn, void *arg)
{
	weft_fiber_t f = 0;
	assert_int_equal(weft_fiber_spawn(&f, NULL, fn, arg), 0);
	return f;
}

void *wt_join(weft_fiber_t f)
{
	void *r = NULL;
	assert_int_equal(weft_fiber_join(f, wt_ms(30000), &r), 0);
	return r;
}

void *wt_run_fiber(weft_fn fn, void *arg) { return wt_join(wt_spawn(fn, arg)); }

int wt_wait_flag(_Atomic int *flag)
{
	int64_t end = wt_ms(10000);
	while (!atomic_load(flag)) {
		if (weft_now() >= end)
			return 0;
		weft_sleep_until(wt_ms(1));
	}
	return 1;
}

int wt_yield_count_cancels(_Atomic int *flag)
{
	int n = 0;
	int64_t end = wt_ms(10000);
	while (!atomic_load(flag) && weft_now() < end)
		n += weft_fiber_yield() == -ECANCELED;
	n += weft_fiber_yield() == -ECANCELED;
	return n;
}

struct wt_thread {
	shim_thread_t t;
	void *(*fn)(void *);
	void *arg;
};

static void thread_main(void *arg)
{
	struct wt_thread *w = arg;
	w->fn(w->arg);
}

wt_thread_t wt_thread_start(void *(*fn)(void *), void *arg)
{
	struct wt_thread *w = malloc(sizeof *w);
	assert_non_null(w);
	w->fn = fn;
	w->arg = arg;
	assert_int_equal(shim_thread_start(&w->t, thread_main, w), 0);
	return w;
}

void wt_thread_join(wt_thread_t w)
{
	shim_thread_join(w->t);
	free(w);
}

void wt_thread_yield(void) { shim_thread_yield(); }

static uint64_t rng_state;

void wt_rng_seed(void)
{
	rng_state = (uint64_t)weft_now() | 1;
	print_message("seed %llu\n", (unsigned long long)rng_state);
}

uint64_t wt_rng_next(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

int wt_sanitized(void)
{
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
	return 1;
#else
	return 0;
#endif
}

static void skipped(void **state)
{
	(void)state;
	skip();
}

int wt_skip_group(const char *name, const struct CMUnitTest *tests, size_t n, const char *why)
{
	struct CMUnitTest *copy = calloc(n, sizeof *copy);
	assert_non_null(copy);
	for (size_t i = 0; i < n; i++)
		copy[i] = (struct CMUnitTest){.name = tests[i].name, .test_func = skipped};
	print_message("%s: skipped: %s\n", name, why);
	int failed = _cmocka_run_group_tests(name, copy, n, NULL, NULL);
	free(copy);
	return failed;
}

int wt_main(const char *name, const struct CMUnitTest *tests, size_t n,
	    CMFixtureFunction setup, CMFixtureFunction teardown)
{
	int failed = _cmocka_run_group_tests(name, tests, n, setup, teardown);
	return failed > 100 ? 100 : failed;
}
