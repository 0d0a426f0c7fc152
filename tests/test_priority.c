/* SPDX-License-Identifier: MIT */
/* Two priority classes (WEFT_ATTR_HIGH): runnable latency-sensitive fibers
 * run before the bulk ones on a worker; while latency-sensitive work keeps
 * coming, a worker runs a bulk fiber after at most 8 of them in a row (the
 * bound docs/api.md gives); a thief takes latency-sensitive work first. The
 * orders checked are ones the scheduler must keep, made deterministic with
 * one worker or with pinned fibers that hold a worker without yielding. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define STREAK 8 /* docs/api.md: at most 8 latency-sensitive runs in a row */

static _Atomic int seq;

struct mark {
	int first_run; /* seq when it first ran */
	int worker;
};

static void *mark_run(void *arg)
{
	struct mark *m = arg;
	m->first_run = atomic_fetch_add(&seq, 1);
	m->worker = weft_worker_index();
	return NULL;
}

/* ---- One worker: the class decides the order ---------------------------- */

#define NB 20
#define NH 6 /* fewer than STREAK: all of them before any bulk fiber */

static void *spawn_both(void *arg)
{
	struct mark *m = arg;
	weft_fiber_t f[NB + NH];
	/* Latency-sensitive first, then bulk, without a suspension point in
	 * between: the worker sees them all queued when this one joins, and
	 * its deque alone (LIFO) would run the bulk ones first. */
	for (int i = 0; i < NB + NH; i++) {
		weft_attr_t attr = {.flags = i < NH ? WEFT_ATTR_HIGH : 0};
		if (weft_fiber_spawn(&f[i], &attr, mark_run, &m[i]))
			return (void *)1;
	}
	for (int i = 0; i < NB + NH; i++)
		if (weft_fiber_join(f[i], wt_ms(30000), NULL, NULL))
			return (void *)2;
	return NULL;
}

static void test_high_runs_before_bulk(void **state)
{
	(void)state;
	wt_restart(1, 0);
	struct mark m[NB + NH];
	memset(m, 0, sizeof m);
	atomic_store(&seq, 0);
	assert_null(wt_run_fiber(spawn_both, m));
	int last_high = -1, first_bulk = 1 << 30;
	for (int i = NH; i < NB + NH; i++)
		first_bulk = m[i].first_run < first_bulk ? m[i].first_run : first_bulk;
	for (int i = 0; i < NH; i++)
		last_high = m[i].first_run > last_high ? m[i].first_run : last_high;
	print_message("latency-sensitive ran by #%d, bulk from #%d\n", last_high, first_bulk);
	assert_true(last_high < first_bulk);
	wt_restart_default();
}

/* ---- One worker: bulk is not starved ------------------------------------ */

struct flood {
	_Atomic int stop;
	_Atomic long high_runs; /* latency-sensitive runs so far */
	long bulk_runs, worst;  /* the bulk fiber's, and the most high runs
				 * it saw between two of its own */
};

static void *high_spinner(void *arg)
{
	struct flood *fl = arg;
	int64_t limit = wt_ms(60000);
	while (!atomic_load(&fl->stop) && weft_now() < limit) {
		atomic_fetch_add(&fl->high_runs, 1);
		weft_fiber_yield();
	}
	return NULL;
}

static void *bulk_counter(void *arg)
{
	struct flood *fl = arg;
	long before = atomic_load(&fl->high_runs);
	int64_t limit = wt_ms(60000);
	while (fl->bulk_runs < 200 && weft_now() < limit) {
		weft_fiber_yield();
		long now = atomic_load(&fl->high_runs);
		if (now - before > fl->worst)
			fl->worst = now - before;
		before = now;
		fl->bulk_runs++;
	}
	atomic_store(&fl->stop, 1);
	return NULL;
}

/* The bulk counter and the flood, spawned by a fiber without a suspension
 * point in between: on one worker none of them runs before all are queued
 * (spawned from the test's thread, the bulk fiber could finish before the
 * flood existed: seen under qemu-riscv64). */
static void *flood_parent(void *arg)
{
	struct flood *fl = arg;
	weft_attr_t bulk = {0}, high = {.flags = WEFT_ATTR_HIGH};
	weft_fiber_t f[5];
	if (weft_fiber_spawn(&f[0], &bulk, bulk_counter, fl))
		return (void *)1;
	for (int i = 1; i < 5; i++)
		if (weft_fiber_spawn(&f[i], &high, high_spinner, fl))
			return (void *)2;
	for (int i = 0; i < 5; i++)
		if (weft_fiber_join(f[i], wt_ms(90000), NULL, NULL))
			return (void *)3;
	return NULL;
}

static void test_bulk_not_starved(void **state)
{
	(void)state;
	wt_restart(1, 0);
	static struct flood fl;
	memset(&fl, 0, sizeof fl);
	assert_null(wt_run_fiber(flood_parent, &fl));
	print_message("bulk ran %ld times beside %ld latency-sensitive runs, at most %ld between "
		      "two of its own\n",
		      fl.bulk_runs, atomic_load(&fl.high_runs), fl.worst);
	assert_int_equal(fl.bulk_runs, 200);
	assert_true(fl.worst <= STREAK);
	/* And the flood really was one: it ran between the bulk runs. */
	assert_true(atomic_load(&fl.high_runs) >= 200);
	wt_restart_default();
}

/* ---- Two workers: a thief takes latency-sensitive work first ------------ */

struct thief_case {
	_Atomic int blocker_on, spawned, high_done;
	struct mark m[NB + NH];
};

struct high_arg {
	struct thief_case *t;
	struct mark *m;
};

static void *count_high(void *arg)
{
	struct high_arg *a = arg;
	mark_run(a->m);
	atomic_fetch_add(&a->t->high_done, 1);
	return NULL;
}

/* Holds worker 1 without yielding until everything is queued on worker 0. */
static void *blocker(void *arg)
{
	struct thief_case *t = arg;
	if (weft_fiber_pin(1))
		return (void *)1;
	atomic_store(&t->blocker_on, 1);
	int64_t limit = wt_ms(30000);
	while (!atomic_load(&t->spawned) && weft_now() < limit)
		;
	return NULL;
}

static void *victim(void *arg)
{
	struct thief_case *t = arg;
	if (weft_fiber_pin(0))
		return (void *)1;
	weft_fiber_t b = wt_spawn(blocker, t);
	int64_t limit = wt_ms(30000);
	while (!atomic_load(&t->blocker_on) && weft_now() < limit)
		weft_fiber_yield();
	if (!atomic_load(&t->blocker_on))
		return (void *)2;
	/* From here on this fiber does not yield until every latency-sensitive
	 * fiber has run, so worker 1 runs them all, once its blocker ends. */
	weft_fiber_t f[NB + NH];
	struct high_arg ha[NH];
	for (int i = 0; i < NB + NH; i++) {
		bool high = i >= NB;
		weft_attr_t attr = {.flags = high ? WEFT_ATTR_HIGH : 0};
		if (high)
			ha[i - NB] = (struct high_arg){t, &t->m[i]};
		if (weft_fiber_spawn(&f[i], &attr, high ? count_high : mark_run,
				     high ? (void *)&ha[i - NB] : (void *)&t->m[i]))
			return (void *)3;
	}
	atomic_store(&t->spawned, 1);
	while (atomic_load(&t->high_done) < NH && weft_now() < limit)
		;
	for (int i = 0; i < NB + NH; i++)
		if (weft_fiber_join(f[i], wt_ms(30000), NULL, NULL))
			return (void *)4;
	if (weft_fiber_join(b, wt_ms(30000), NULL, NULL))
		return (void *)5;
	return NULL;
}

static void test_thief_takes_high_first(void **state)
{
	(void)state;
	wt_restart(2, 0);
	static struct thief_case t;
	memset(&t, 0, sizeof t);
	atomic_store(&seq, 0);
	assert_null(wt_run_fiber(victim, &t));
	assert_int_equal(atomic_load(&t.high_done), NH);
	int last_high = -1, first_bulk_w1 = 1 << 30;
	for (int i = NB; i < NB + NH; i++) {
		assert_int_equal(t.m[i].worker, 1); /* worker 0 never yielded */
		last_high = t.m[i].first_run > last_high ? t.m[i].first_run : last_high;
	}
	for (int i = 0; i < NB; i++)
		if (t.m[i].worker == 1 && t.m[i].first_run < first_bulk_w1)
			first_bulk_w1 = t.m[i].first_run;
	print_message("worker 1 ran the latency-sensitive fibers by #%d, its first bulk one "
		      "at #%d\n",
		      last_high, first_bulk_w1);
	assert_true(last_high < first_bulk_w1);
	wt_restart_default();
}

/* ---- The dump ----------------------------------------------------------- */

static void *park_high(void *arg)
{
	return (void *)(intptr_t)weft_future_await(arg, wt_ms(30000), NULL);
}

static void test_dump_shows_the_class(void **state)
{
	(void)state;
	weft_future_t *fut;
	assert_int_equal(weft_future_create(&fut), 0);
	weft_attr_t attr = {.name = "high-dumped", .flags = WEFT_ATTR_HIGH};
	weft_fiber_t f;
	assert_int_equal(weft_fiber_spawn(&f, &attr, park_high, fut), 0);
	assert_true(wt_wait_parked("high-dumped", "future"));
	char line[512];
	assert_true(wt_dump_line("high-dumped", line, sizeof line));
	print_message("%s\n", line);
	assert_non_null(strstr(line, ", latency-sensitive"));
	weft_future_resolve(fut, NULL);
	assert_null(wt_join(f));
	assert_int_equal(weft_future_release(fut), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_high_runs_before_bulk),
		cmocka_unit_test(test_bulk_not_starved),
		cmocka_unit_test(test_thief_takes_high_first),
		cmocka_unit_test(test_dump_shows_the_class),
	};
	return WT_MAIN("priority", tests, wt_start, wt_stop);
}
