/* SPDX-License-Identifier: MIT */
/* One-way context switch time: two contexts ping-pong through arch_switch
 * directly (the raw cost, what Boost.Context's jump_fcontext is compared
 * with), then two fibers ping-pong through weft_fiber_yield on one worker
 * (the switch plus the scheduler). Prints the median of several runs. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "arch.h"
#include "shim.h"
#include "weft.h"

#define RUNS 7

static void *main_sp, *co_sp;
static long rounds;

static void co_body(void *arg)
{
	(void)arg;
	for (;;)
		arch_switch(&co_sp, main_sp);
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double raw_switch_ns(long n)
{
	struct shim_stack st;
	if (shim_stack_alloc(64 * 1024, &st) != 0)
		exit(1);
	co_sp = arch_frame_init((char *)st.base + st.size, co_body, NULL);
	int64_t t0 = shim_now();
	for (long i = 0; i < n; i++)
		arch_switch(&main_sp, co_sp);
	int64_t t1 = shim_now();
	shim_stack_free(&st);
	return (double)(t1 - t0) / (2.0 * n); /* two switches per round */
}

static void *yielder(void *arg)
{
	(void)arg;
	for (long i = 0; i < rounds; i++)
		weft_fiber_yield();
	return NULL;
}

static double yield_switch_ns(long n)
{
	weft_fiber_t a, b;
	rounds = n;
	int64_t t0 = weft_now();
	weft_fiber_spawn(&a, NULL, yielder, NULL);
	weft_fiber_spawn(&b, NULL, yielder, NULL);
	weft_fiber_join(a, -1, NULL, NULL);
	weft_fiber_join(b, -1, NULL, NULL);
	int64_t t1 = weft_now();
	return (double)(t1 - t0) / (2.0 * n); /* each round switches twice */
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 10000000;
	double raw[RUNS], yld[RUNS];
	for (int i = 0; i < RUNS; i++)
		raw[i] = raw_switch_ns(n);
	weft_config_t c = {.workers = 1};
	if (weft_init(&c) != 0)
		return 1;
	for (int i = 0; i < RUNS; i++)
		yld[i] = yield_switch_ns(n / 10);
	weft_shutdown();
	qsort(raw, RUNS, sizeof raw[0], cmp);
	qsort(yld, RUNS, sizeof yld[0], cmp);
	printf("arch_switch one-way:      %.2f ns (median of %d x %ld round trips; min %.2f max %.2f)\n",
	       raw[RUNS / 2], RUNS, n, raw[0], raw[RUNS - 1]);
	printf("weft_fiber_yield one-way: %.2f ns (median of %d x %ld round trips, 1 worker; min %.2f max %.2f)\n",
	       yld[RUNS / 2], RUNS, n / 10, yld[0], yld[RUNS - 1]);
	return 0;
}
