/* SPDX-License-Identifier: MIT */
/* Time: the monotonic clock, deadline arithmetic, sleeping from fibers and
 * plain threads, the timer heaps under load, timeouts leaving no timer, and
 * the per-worker heaps: a disarm on another worker than the arm, timers on
 * two workers under the real and the virtual clock, an idle worker firing
 * a busy worker's timer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h" /* weft__timer_earliest */
#include "testutil.h"

#define MS 1000000LL

/* ---- The clock ---------------------------------------------------------- */

struct mono {
	int n;
	int backwards;
	int64_t first, last;
};

static void *read_clock(void *arg)
{
	struct mono *m = arg;
	int64_t prev = weft_now();
	m->first = prev;
	for (int i = 0; i < m->n; i++) {
		int64_t t = weft_now();
		if (t < prev)
			m->backwards++;
		prev = t;
		if (i % 1000 == 0)
			weft_fiber_yield(); /* and perhaps move to another worker */
	}
	m->last = prev;
	return NULL;
}

static void test_now_monotonic(void **state)
{
	(void)state;
	int n = wt_sanitized() ? 20000 : 200000; /* sanitizers: 10x fewer reads */
	struct mono plain = {.n = n};
	read_clock(&plain);
	assert_int_equal(plain.backwards, 0);
	assert_true(plain.first > 0);

	/* Fibers read it on every worker, hopping between them. */
	enum { F = 4 };
	struct mono m[F];
	weft_fiber_t f[F];
	for (int i = 0; i < F; i++) {
		m[i] = (struct mono){.n = n};
		assert_int_equal(weft_fiber_spawn(&f[i], NULL, read_clock, &m[i]), 0);
	}
	for (int i = 0; i < F; i++) {
		assert_int_equal(weft_fiber_join(f[i], wt_ms(30000), NULL, NULL), 0);
		assert_int_equal(m[i].backwards, 0);
		/* Spawned after the plain reads: never behind them. */
		assert_true(m[i].first >= plain.last);
		assert_true(m[i].last >= m[i].first);
	}
}

static void test_now_advances_across_sleep(void **state)
{
	(void)state;
	int64_t before = weft_now();
	assert_int_equal(weft_sleep_until(before + 3 * MS), 0);
	int64_t after = weft_now();
	assert_true(after >= before + 3 * MS);
}

/* ---- Deadlines ---------------------------------------------------------- */

static void test_deadline_in_values(void **state)
{
	(void)state;
	assert_int_equal(weft_deadline_in(-1), -1);
	assert_int_equal(weft_deadline_in(-1000000000), -1);
	assert_int_equal(weft_deadline_in(INT64_MIN), -1);

	int64_t before = weft_now();
	int64_t d0 = weft_deadline_in(0);
	int64_t d1 = weft_deadline_in(5 * MS);
	int64_t after = weft_now();
	assert_true(d0 >= before);
	assert_true(d0 <= after); /* the clock read inside is between ours */
	assert_true(d1 >= before + 5 * MS);
	assert_true(d1 <= after + 5 * MS);

	/* Saturation, not overflow. */
	assert_int_equal(weft_deadline_in(INT64_MAX), INT64_MAX);
	assert_int_equal(weft_deadline_in(INT64_MAX - 1), INT64_MAX);
	assert_int_equal(weft_deadline_in(INT64_MAX - before / 2), INT64_MAX);
	int64_t big = weft_deadline_in(INT64_MAX / 2);
	assert_true(big > INT64_MAX / 2 && big >= before);
}

/* ---- Sleeping ----------------------------------------------------------- */

struct past {
	int r_negative, r_zero, r_one, r_past, r_now;
};

static void sleep_past(struct past *p)
{
	p->r_negative = weft_sleep_until(-5); /* a moment long past, not "forever" */
	p->r_zero = weft_sleep_until(0);
	p->r_one = weft_sleep_until(1);
	int64_t now = weft_now();
	p->r_past = weft_sleep_until(now > 10 * MS ? now - 10 * MS : 1);
	p->r_now = weft_sleep_until(weft_now());
}

static void *sleep_past_fiber(void *arg)
{
	sleep_past(arg);
	return NULL;
}

static void check_past(const struct past *p)
{
	assert_int_equal(p->r_negative, 0);
	assert_int_equal(p->r_zero, 0);
	assert_int_equal(p->r_one, 0);
	assert_int_equal(p->r_past, 0);
	assert_int_equal(p->r_now, 0);
}

static void test_sleep_invalid_and_past(void **state)
{
	(void)state;
	struct past p;
	memset(&p, 0x55, sizeof p);
	sleep_past(&p);
	check_past(&p);
	memset(&p, 0x55, sizeof p);
	wt_run_fiber(sleep_past_fiber, &p);
	check_past(&p);
}

static void *sleep_forever(void *arg)
{
	*(int *)arg = weft_sleep_until(-1);
	return NULL;
}

/* -1 means no deadline here as everywhere: the sleep ends only when the
 * fiber is cancelled (before or after it has parked: both are delivered). */
static void test_sleep_forever_until_cancelled(void **state)
{
	(void)state;
	int r = 1;
	weft_fiber_t f;
	assert_int_equal(weft_fiber_spawn(&f, NULL, sleep_forever, &r), 0);
	void *res;
	assert_int_equal(weft_fiber_join(f, 0, &res, NULL),
			 -ETIMEDOUT); /* still asleep, or not started */
	assert_int_equal(weft_fiber_cancel(f), 0);
	assert_int_equal(weft_fiber_join(f, wt_ms(30000), &res, NULL), 0);
	assert_int_equal(r, -ECANCELED);
}

struct sleeper {
	int64_t deadline;
	int64_t woke;
	int r;
};

static void *sleep_one(void *arg)
{
	struct sleeper *s = arg;
	s->r = weft_sleep_until(s->deadline);
	s->woke = weft_now();
	return NULL;
}

static void test_sleep_from_thread(void **state)
{
	(void)state;
	for (int ms = 1; ms <= 8; ms *= 2) {
		struct sleeper s = {.deadline = wt_ms(ms), .r = 1};
		sleep_one(&s);
		assert_int_equal(s.r, 0);
		assert_true(s.woke >= s.deadline);
	}
}

static void test_sleep_from_fiber(void **state)
{
	(void)state;
	for (int ms = 1; ms <= 8; ms *= 2) {
		struct sleeper s = {.deadline = wt_ms(ms), .r = 1};
		wt_run_fiber(sleep_one, &s);
		assert_int_equal(s.r, 0);
		assert_true(s.woke >= s.deadline);
	}
}

static void *sleep_thread(void *arg)
{
	sleep_one(arg);
	return NULL;
}

/* Several plain threads and fibers sleeping at once, each on its own clock. */
static void test_sleep_threads_and_fibers_together(void **state)
{
	(void)state;
	enum { T = 3, F = 8 };
	struct sleeper ts[T], fs[F];
	wt_thread_t th[T];
	weft_fiber_t f[F];
	for (int i = 0; i < T; i++) {
		ts[i] = (struct sleeper){.deadline = wt_ms(2 + 3 * i), .r = 1};
		th[i] = wt_thread_start(sleep_thread, &ts[i]);
	}
	for (int i = 0; i < F; i++) {
		fs[i] = (struct sleeper){.deadline = wt_ms(1 + 2 * (F - i)), .r = 1};
		assert_int_equal(weft_fiber_spawn(&f[i], NULL, sleep_one, &fs[i]), 0);
	}
	for (int i = 0; i < T; i++) {
		wt_thread_join(th[i]);
		assert_int_equal(ts[i].r, 0);
		assert_true(ts[i].woke >= ts[i].deadline);
	}
	for (int i = 0; i < F; i++) {
		assert_int_equal(weft_fiber_join(f[i], wt_ms(10000), NULL, NULL), 0);
		assert_int_equal(fs[i].r, 0);
		assert_true(fs[i].woke >= fs[i].deadline);
	}
}

/* 1,000 fibers with random deadlines in [0, 30 ms]: inserted into the timer
 * heap in random order, fired in deadline order. Some deadlines are already
 * past when their fiber runs. */
static void test_sleep_many_random(void **state)
{
	(void)state;
	enum { N = 1000 };
	struct sleeper *s = calloc(N, sizeof *s);
	weft_fiber_t *f = calloc(N, sizeof *f);
	assert_non_null(s);
	assert_non_null(f);
	wt_rng_seed();
	int64_t base = weft_now();
	for (int i = 0; i < N; i++) {
		s[i].deadline = base + (int64_t)(wt_rng_next() % (30 * MS + 1));
		s[i].r = 1;
		assert_int_equal(weft_fiber_spawn(&f[i], NULL, sleep_one, &s[i]), 0);
	}
	int late = 0, bad = 0;
	for (int i = 0; i < N; i++) {
		assert_int_equal(weft_fiber_join(f[i], wt_ms(30000), NULL, NULL), 0);
		if (s[i].r != 0)
			bad++;
		if (s[i].woke < s[i].deadline)
			late++; /* woke before its deadline */
	}
	free(s);
	free(f);
	assert_int_equal(bad, 0);
	assert_int_equal(late, 0);
}

/* Timers armed and then removed from the middle of the heap: fibers await a
 * future with random deadlines in [5, 45] ms and the future is resolved at
 * about 25 ms, so the later deadlines are disarmed before they fire. Each then
 * sleeps 5 ms more, which a left-over or misplaced entry would cut short. */
struct awaiter {
	weft_future_t *fut;
	int64_t deadline, woke;
	int r;
	void *value;
	int64_t sleep_deadline, sleep_woke;
	int sleep_r;
};

static void *await_then_sleep(void *arg)
{
	struct awaiter *a = arg;
	a->r = weft_future_await(a->fut, a->deadline, &a->value);
	a->woke = weft_now();
	a->sleep_deadline = wt_ms(5);
	a->sleep_r = weft_sleep_until(a->sleep_deadline);
	a->sleep_woke = weft_now();
	return NULL;
}

static void test_timer_removed_from_middle(void **state)
{
	(void)state;
	enum { N = 500 };
	weft_future_t *fut;
	assert_int_equal(weft_future_create(&fut), 0);
	struct awaiter *a = calloc(N, sizeof *a);
	weft_fiber_t *f = calloc(N, sizeof *f);
	assert_non_null(a);
	assert_non_null(f);
	wt_rng_seed();
	int64_t base = weft_now();
	for (int i = 0; i < N; i++) {
		a[i].fut = fut;
		a[i].deadline = base + 5 * MS + (int64_t)(wt_rng_next() % (40 * MS));
		a[i].r = 1;
		assert_int_equal(weft_fiber_spawn(&f[i], NULL, await_then_sleep, &a[i]), 0);
	}
	assert_int_equal(weft_sleep_until(base + 25 * MS), 0);
	int64_t resolved_at = weft_now();
	assert_int_equal(weft_future_resolve(fut, (void *)0x77), 0);
	int timed_out = 0, resolved = 0, bad = 0, early = 0;
	for (int i = 0; i < N; i++) {
		assert_int_equal(weft_fiber_join(f[i], wt_ms(30000), NULL, NULL), 0);
		if (a[i].r == -ETIMEDOUT) {
			timed_out++;
			if (a[i].woke < a[i].deadline)
				early++;
		} else if (a[i].r == 0 && a[i].value == (void *)0x77) {
			resolved++;
			/* Resolved, so it was still waiting at resolved_at. */
			if (a[i].woke < resolved_at)
				bad++;
		} else {
			bad++;
		}
		if (a[i].sleep_r != 0 || a[i].sleep_woke < a[i].sleep_deadline)
			early++;
	}
	free(a);
	free(f);
	weft_future_release(fut);
	assert_int_equal(bad, 0);
	assert_int_equal(early, 0);
	assert_int_equal(timed_out + resolved, N);
	print_message("%d timed out, %d resolved\n", timed_out, resolved);
}

/* ---- Timers while the workers are busy ---------------------------------- */

struct busy {
	_Atomic int *done;
	int64_t limit;
	long yields;
	int hit_limit;
	int yield_err;
};

static void *spin_yield(void *arg)
{
	struct busy *b = arg;
	while (!atomic_load(b->done)) {
		if (weft_now() > b->limit) {
			b->hit_limit = 1;
			break;
		}
		if (weft_fiber_yield() != 0)
			b->yield_err++;
		b->yields++;
	}
	return NULL;
}

struct flag_sleeper {
	struct sleeper s;
	_Atomic int *done;
};

static void *sleep_then_flag(void *arg)
{
	struct flag_sleeper *fs = arg;
	fs->s.deadline = wt_ms(5);
	sleep_one(&fs->s);
	atomic_store(fs->done, 1);
	return NULL;
}

static void test_timer_fires_while_busy(void **state)
{
	(void)state;
	enum { B = 4 };
	_Atomic int done = 0;
	struct busy b[B];
	weft_fiber_t fb[B], fsl;
	int64_t limit = wt_ms(10000);
	for (int i = 0; i < B; i++) {
		b[i] = (struct busy){.done = &done, .limit = limit};
		assert_int_equal(weft_fiber_spawn(&fb[i], NULL, spin_yield, &b[i]), 0);
	}
	struct flag_sleeper fs = {.s = {.r = 1}, .done = &done};
	assert_int_equal(weft_fiber_spawn(&fsl, NULL, sleep_then_flag, &fs), 0);
	assert_int_equal(weft_fiber_join(fsl, wt_ms(20000), NULL, NULL), 0);
	for (int i = 0; i < B; i++)
		assert_int_equal(weft_fiber_join(fb[i], wt_ms(20000), NULL, NULL), 0);
	assert_int_equal(fs.s.r, 0);
	assert_true(fs.s.woke >= fs.s.deadline);
	for (int i = 0; i < B; i++) {
		assert_int_equal(b[i].hit_limit, 0);
		assert_int_equal(b[i].yield_err, 0);
	}
}

/* While its worker's looks for work come quickly (8 in a row within
 * 20 us), a worker reads the clock for its timers only at
 * every 8th look (timer.c's TIMER_EVERY, docs/decisions/timer-checks.md):
 * a timer due is fired within 8 looks, so two fibers that only yield see
 * at most 9 of their yields return after the deadline before the sleeper
 * runs: 8, and one more when the look that fires it is a 64th look, which
 * runs the oldest yielded fiber before the queue (sched.c's look_around).
 * 9 is rare: once in 500 rounds here, 8 in 48 of them. One
 * worker: every look is one of their yields. */
struct late_yielder {
	_Atomic int done;
	int64_t deadline, limit;
	_Atomic long late, yields;
};

static void *count_late_yields(void *arg)
{
	struct late_yielder *ly = arg;
	while (!atomic_load(&ly->done) && weft_now() < ly->limit) {
		weft_fiber_yield();
		atomic_fetch_add(&ly->yields, 1);
		if (!atomic_load(&ly->done) && weft_now() >= ly->deadline)
			atomic_fetch_add(&ly->late, 1);
	}
	return NULL;
}

static void *sleep_until_flag(void *arg)
{
	struct late_yielder *ly = arg;
	weft_sleep_until(ly->deadline);
	atomic_store(&ly->done, 1);
	return NULL;
}

static void test_timer_due_fires_within_nine_looks(void **state)
{
	(void)state;
	wt_restart(1, 0);
	for (int round = 0; round < 5; round++) {
		struct late_yielder ly = {.deadline = wt_ms(20), .limit = wt_ms(10000)};
		weft_fiber_t y[2], sl;
		assert_int_equal(weft_fiber_spawn(&sl, NULL, sleep_until_flag, &ly), 0);
		for (int i = 0; i < 2; i++)
			assert_int_equal(weft_fiber_spawn(&y[i], NULL, count_late_yields, &ly), 0);
		assert_int_equal(weft_fiber_join(sl, wt_ms(20000), NULL, NULL), 0);
		for (int i = 0; i < 2; i++)
			assert_int_equal(weft_fiber_join(y[i], wt_ms(20000), NULL, NULL), 0);
		print_message("%ld yields, %ld of them after the deadline\n",
			      atomic_load(&ly.yields), atomic_load(&ly.late));
		assert_true(atomic_load(&ly.done));
		assert_true(atomic_load(&ly.late) <= 9);
	}
	wt_restart_default();
}

/* Where looks are slow, every one reads the clock: a fiber that computes
 * 200 us between yields sees a sleeper that wakes every millisecond run at
 * its next yield after each deadline (at most one of its rounds ends past
 * a deadline before the sleeper runs: the look at its yield may come just
 * before the deadline). The sleeper's own looks are quick; a window of 8
 * looks with one of them among the slow ones is still slow (judged from
 * one quick look, the next 7 slow ones went unchecked). */
struct slow_looks {
	_Atomic int round;
	_Atomic int64_t deadline;
	int rounds;
	long late_max;
};

static void *wake_every_ms(void *arg)
{
	struct slow_looks *sl = arg;
	for (int i = 0; i < sl->rounds; i++) {
		int64_t d = weft_deadline_in(1000000);
		atomic_store(&sl->deadline, d);
		weft_sleep_until(d);
		atomic_store(&sl->round, i + 1);
	}
	return NULL;
}

static void *compute_200us_then_yield(void *arg)
{
	struct slow_looks *sl = arg;
	int64_t limit = wt_ms(20000);
	int seen = -1;
	long late = 0;
	while (atomic_load(&sl->round) < sl->rounds && weft_now() < limit) {
		int64_t t = weft_now() + 200000;
		while (weft_now() < t)
			;
		weft_fiber_yield();
		int r = atomic_load(&sl->round);
		if (r != seen) {
			seen = r;
			late = 0;
		}
		if (r < sl->rounds && weft_now() >= atomic_load(&sl->deadline) &&
		    ++late > sl->late_max)
			sl->late_max = late;
	}
	return NULL;
}

static void test_timer_on_time_beside_slow_looks(void **state)
{
	(void)state;
	wt_restart(1, 0);
	struct slow_looks sl = {.rounds = 20, .deadline = INT64_MAX};
	weft_fiber_t a, b;
	assert_int_equal(weft_fiber_spawn(&a, NULL, wake_every_ms, &sl), 0);
	assert_int_equal(weft_fiber_spawn(&b, NULL, compute_200us_then_yield, &sl), 0);
	assert_int_equal(weft_fiber_join(a, wt_ms(30000), NULL, NULL), 0);
	assert_int_equal(weft_fiber_join(b, wt_ms(30000), NULL, NULL), 0);
	print_message("at most %ld rounds of 200 us ended past a deadline\n", sl.late_max);
	assert_int_equal(atomic_load(&sl.round), sl.rounds);
	assert_true(sl.late_max <= 1);
	wt_restart_default();
}

/* ---- Timeouts leave no timer behind ------------------------------------- */

struct timeout_then_sleep {
	int r_wait, r_sleep;
	int64_t wait_deadline, wait_woke, sleep_deadline, sleep_woke;
};

static void timed_out_await(struct timeout_then_sleep *t, int64_t wait_ms, int64_t sleep_ms)
{
	weft_future_t *fut;
	if (weft_future_create(&fut) != 0) {
		t->r_wait = 1;
		return;
	}
	t->wait_deadline = wt_ms(wait_ms);
	t->r_wait = weft_future_await(fut, t->wait_deadline, NULL);
	t->wait_woke = weft_now();
	t->sleep_deadline = wt_ms(sleep_ms);
	t->r_sleep = weft_sleep_until(t->sleep_deadline);
	t->sleep_woke = weft_now();
	weft_future_release(fut);
}

static void *timed_out_await_fiber(void *arg)
{
	timed_out_await(arg, 5, 20);
	return NULL;
}

static void check_timeout_then_sleep(const struct timeout_then_sleep *t)
{
	assert_int_equal(t->r_wait, -ETIMEDOUT);
	assert_true(t->wait_woke >= t->wait_deadline);
	assert_int_equal(t->r_sleep, 0);
	assert_true(t->sleep_woke >= t->sleep_deadline);
}

static void test_timeout_leaves_no_timer(void **state)
{
	(void)state;
	for (int i = 0; i < 3; i++) {
		struct timeout_then_sleep t = {.r_wait = 1, .r_sleep = 1};
		wt_run_fiber(timed_out_await_fiber, &t);
		check_timeout_then_sleep(&t);
	}
	struct timeout_then_sleep t = {.r_wait = 1, .r_sleep = 1};
	timed_out_await(&t, 5, 20); /* from the plain thread */
	check_timeout_then_sleep(&t);
}

/* A wait woken before its deadline disarms its timer: a sleep spanning the
 * old deadline still lasts its full length. */
struct early_wake {
	weft_future_t *fut;
	int r_wait, r_sleep;
	int64_t sleep_deadline, sleep_woke;
};

static void *await_early_then_sleep(void *arg)
{
	struct early_wake *e = arg;
	e->r_wait = weft_future_await(e->fut, wt_ms(15), NULL);
	e->sleep_deadline = wt_ms(30);
	e->r_sleep = weft_sleep_until(e->sleep_deadline);
	e->sleep_woke = weft_now();
	return NULL;
}

static void test_early_wake_leaves_no_timer(void **state)
{
	(void)state;
	struct early_wake e = {.r_wait = 1, .r_sleep = 1};
	assert_int_equal(weft_future_create(&e.fut), 0);
	weft_fiber_t f;
	assert_int_equal(weft_fiber_spawn(&f, NULL, await_early_then_sleep, &e), 0);
	assert_int_equal(weft_sleep_until(wt_ms(1)), 0);
	assert_int_equal(weft_future_resolve(e.fut, NULL), 0);
	assert_int_equal(weft_fiber_join(f, wt_ms(20000), NULL, NULL), 0);
	weft_future_release(e.fut);
	/* Resolved at ~1 ms, or (badly stalled) timed out at 15 ms. */
	assert_true(e.r_wait == 0 || e.r_wait == -ETIMEDOUT);
	assert_int_equal(e.r_sleep, 0);
	assert_true(e.sleep_woke >= e.sleep_deadline);
}

/* A join that times out leaves no timer either. */
static void *await_gate(void *arg)
{
	return (void *)(intptr_t)weft_future_await(arg, wt_ms(20000), NULL);
}

struct join_timeout {
	weft_fiber_t target;
	int r_join;
	int64_t join_deadline, join_woke;
	int r_sleep;
	int64_t sleep_deadline, sleep_woke;
};

static void *join_timeout_then_sleep(void *arg)
{
	struct join_timeout *j = arg;
	j->join_deadline = wt_ms(5);
	j->r_join = weft_fiber_join(j->target, j->join_deadline, NULL, NULL);
	j->join_woke = weft_now();
	j->sleep_deadline = wt_ms(20);
	j->r_sleep = weft_sleep_until(j->sleep_deadline);
	j->sleep_woke = weft_now();
	return NULL;
}

static void test_join_timeout_leaves_no_timer(void **state)
{
	(void)state;
	weft_future_t *gate;
	assert_int_equal(weft_future_create(&gate), 0);
	weft_fiber_t target;
	assert_int_equal(weft_fiber_spawn(&target, NULL, await_gate, gate), 0);
	struct join_timeout j = {.target = target, .r_join = 1, .r_sleep = 1};
	wt_run_fiber(join_timeout_then_sleep, &j);
	assert_int_equal(weft_future_resolve(gate, NULL), 0);
	void *r = (void *)1;
	assert_int_equal(weft_fiber_join(target, wt_ms(10000), &r, NULL), 0);
	weft_future_release(gate);
	assert_int_equal(j.r_join, -ETIMEDOUT);
	assert_true(j.join_woke >= j.join_deadline);
	assert_int_equal(j.r_sleep, 0);
	assert_true(j.sleep_woke >= j.sleep_deadline);
	assert_ptr_equal(r, NULL);
}

/* ---- Per-worker heaps (docs/decisions/worker-timers.md) ------------------ */

/* A fiber arms its deadline in the heap of the worker it parks on and may
 * resume on another: its disarm there takes the entry out of the heap that
 * holds it, so nothing is left armed (a disarm of the resuming worker's own
 * heap would leave the entry, and weft__timer_earliest would see it). A
 * fiber pinned to worker 0 that never yields until the receiver has run
 * makes it resume on worker 1. */
struct hop {
	weft_chan_t *ch;
	_Atomic int done;
	int armed_on, resumed_on, r;
	int64_t after, limit;
};

static void *hop_hog(void *arg)
{
	struct hop *h = arg;
	while (!atomic_load(&h->done) && weft_now() < h->limit)
		;
	return NULL;
}

static void *hop_receiver(void *arg)
{
	struct hop *h = arg;
	weft_fiber_pin(0);
	weft_fiber_unpin(); /* parks on worker 0, free to resume elsewhere */
	weft_attr_t a = {.flags = WEFT_ATTR_PIN};
	weft_fiber_t hog;
	assert_int_equal(weft_fiber_spawn(&hog, &a, hop_hog, h), 0);
	h->armed_on = weft_worker_index();
	int v;
	h->r = weft_chan_recv(h->ch, &v, wt_ms(20000));
	h->resumed_on = weft_worker_index();
	h->after = weft__timer_earliest();
	atomic_store(&h->done, 1);
	assert_int_equal(weft_fiber_join(hog, wt_ms(20000), NULL, NULL), 0);
	return NULL;
}

static void *hop_sender(void *arg)
{
	struct hop *h = arg;
	weft_fiber_pin(1);
	/* Until the receiver's deadline is armed (it is then parked, or
	 * about to switch out: the send waits for it either way). */
	while (weft__timer_earliest() == INT64_MAX && weft_now() < h->limit)
		weft_fiber_yield();
	int v = 1;
	weft_chan_send(h->ch, &v, wt_ms(20000));
	return NULL;
}

static void test_timer_disarmed_on_another_worker(void **state)
{
	(void)state;
	wt_restart(2, 0);
	for (int round = 0; round < 5; round++) {
		struct hop h = {.armed_on = -1, .resumed_on = -1, .r = 1};
		h.limit = wt_ms(10000);
		assert_int_equal(weft_chan_create(&h.ch, sizeof(int), 0), 0);
		weft_fiber_t rf, sf;
		assert_int_equal(weft_fiber_spawn(&rf, NULL, hop_receiver, &h), 0);
		assert_int_equal(weft_fiber_spawn(&sf, NULL, hop_sender, &h), 0);
		assert_int_equal(weft_fiber_join(rf, wt_ms(20000), NULL, NULL), 0);
		assert_int_equal(weft_fiber_join(sf, wt_ms(20000), NULL, NULL), 0);
		weft_chan_destroy(h.ch);
		assert_int_equal(h.r, 0);
		assert_int_equal(h.armed_on, 0);
		assert_int_equal(h.resumed_on, 1); /* the case under test */
		assert_true(h.after == INT64_MAX);
	}
	wt_restart_default();
}

/* Many fibers asleep on two workers, their deadlines armed in both heaps:
 * every one wakes (none lost), none before its deadline, and on the
 * virtual clock each exactly at it. */
enum { N_SPREAD = 200 };

struct spread {
	int64_t deadline[N_SPREAD], woke[N_SPREAD];
	int armed_on[N_SPREAD], r[N_SPREAD];
	weft_fiber_t f[N_SPREAD];
};

struct spread_arg {
	struct spread *s;
	int i;
};

static void *spread_sleeper(void *arg)
{
	struct spread_arg *a = arg;
	struct spread *s = a->s;
	weft_fiber_pin(a->i % 2);
	weft_fiber_unpin();
	s->armed_on[a->i] = weft_worker_index();
	s->r[a->i] = weft_sleep_until(s->deadline[a->i]);
	s->woke[a->i] = weft_now();
	return NULL;
}

static struct spread_arg spread_args[N_SPREAD];

/* One fiber spawns them all (on the virtual clock the clock cannot move
 * while it runs) and joins them. */
static void *spread_spawner(void *arg)
{
	struct spread *s = arg;
	int64_t base = weft_now() + 5 * MS;
	for (int i = 0; i < N_SPREAD; i++) {
		/* 0-40 ms apart in a scattered order, some equal */
		s->deadline[i] = base + (int64_t)((i * 7919) % 41) * MS + (i % 3) * 1000;
		spread_args[i] = (struct spread_arg){s, i};
		assert_int_equal(weft_fiber_spawn(&s->f[i], NULL, spread_sleeper, &spread_args[i]),
				 0);
	}
	for (int i = 0; i < N_SPREAD; i++)
		assert_int_equal(weft_fiber_join(s->f[i], -1, NULL, NULL), 0);
	return NULL;
}

static void timers_on_two_workers(unsigned flags)
{
	wt_restart(2, flags);
	static struct spread s;
	memset(&s, 0, sizeof s);
	weft_fiber_t sp;
	assert_int_equal(weft_fiber_spawn(&sp, NULL, spread_spawner, &s), 0);
	/* -1: on the virtual clock a deadline of this thread's would be a
	 * timer the clock could jump to; the sleepers' deadlines bound it. */
	assert_int_equal(weft_fiber_join(sp, -1, NULL, NULL), 0);
	int on[2] = {0, 0};
	for (int i = 0; i < N_SPREAD; i++) {
		assert_int_equal(s.r[i], 0);
		assert_true(s.woke[i] >= s.deadline[i]);
		if (flags & WEFT_CFG_VIRTUAL_CLOCK)
			assert_true(s.woke[i] == s.deadline[i]);
		if (s.armed_on[i] == 0 || s.armed_on[i] == 1)
			on[s.armed_on[i]]++;
	}
	assert_true(on[0] > 0 && on[1] > 0);
	assert_true(weft__timer_earliest() == INT64_MAX);
	wt_restart_default();
}

static void test_timers_on_two_workers_real_clock(void **state)
{
	(void)state;
	timers_on_two_workers(0);
}

static void test_timers_on_two_workers_virtual_clock(void **state)
{
	(void)state;
	timers_on_two_workers(WEFT_CFG_VIRTUAL_CLOCK);
}

/* A fiber's deadline armed on worker 0, which then runs a fiber that
 * never yields until the sleeper has run: the idle worker 1 fires it (a
 * worker firing only its own heap would leave it until the hog's limit). */
struct hog {
	_Atomic int woken;
	int armed_on, woke_on, r, saw;
	int64_t deadline, woke, limit;
};

static void *hog_spin(void *arg)
{
	struct hog *h = arg;
	while (!atomic_load(&h->woken) && weft_now() < h->limit)
		;
	h->saw = atomic_load(&h->woken);
	return NULL;
}

static void *hog_sleeper(void *arg)
{
	struct hog *h = arg;
	weft_fiber_pin(0);
	weft_fiber_unpin();
	/* Pinned to worker 0 (spawned from here), queued behind us: it runs
	 * there once we park. */
	weft_attr_t a = {.flags = WEFT_ATTR_PIN};
	weft_fiber_t hog;
	assert_int_equal(weft_fiber_spawn(&hog, &a, hog_spin, h), 0);
	h->armed_on = weft_worker_index();
	h->deadline = wt_ms(5);
	h->r = weft_sleep_until(h->deadline);
	h->woke = weft_now();
	h->woke_on = weft_worker_index();
	atomic_store(&h->woken, 1);
	assert_int_equal(weft_fiber_join(hog, wt_ms(20000), NULL, NULL), 0);
	return NULL;
}

static void test_idle_worker_fires_busy_workers_timer(void **state)
{
	(void)state;
	wt_restart(2, 0);
	struct hog h = {.armed_on = -1, .woke_on = -1, .r = 1};
	h.limit = wt_ms(10000);
	weft_fiber_t f;
	assert_int_equal(weft_fiber_spawn(&f, NULL, hog_sleeper, &h), 0);
	assert_int_equal(weft_fiber_join(f, wt_ms(30000), NULL, NULL), 0);
	assert_int_equal(h.armed_on, 0);
	assert_int_equal(h.r, 0);
	assert_true(h.woke >= h.deadline);
	assert_int_equal(h.woke_on, 1); /* worker 0 was the hog's */
	assert_int_equal(h.saw, 1);     /* woken before the hog's limit */
	wt_restart_default();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_now_monotonic),
		cmocka_unit_test(test_now_advances_across_sleep),
		cmocka_unit_test(test_deadline_in_values),
		cmocka_unit_test(test_sleep_invalid_and_past),
		cmocka_unit_test(test_sleep_forever_until_cancelled),
		cmocka_unit_test(test_sleep_from_thread),
		cmocka_unit_test(test_sleep_from_fiber),
		cmocka_unit_test(test_sleep_threads_and_fibers_together),
		cmocka_unit_test(test_sleep_many_random),
		cmocka_unit_test(test_timer_removed_from_middle),
		cmocka_unit_test(test_timer_fires_while_busy),
		cmocka_unit_test(test_timer_due_fires_within_nine_looks),
		cmocka_unit_test(test_timer_on_time_beside_slow_looks),
		cmocka_unit_test(test_timeout_leaves_no_timer),
		cmocka_unit_test(test_early_wake_leaves_no_timer),
		cmocka_unit_test(test_join_timeout_leaves_no_timer),
		cmocka_unit_test(test_timer_disarmed_on_another_worker),
		cmocka_unit_test(test_idle_worker_fires_busy_workers_timer),
		cmocka_unit_test(test_timers_on_two_workers_real_clock),
		cmocka_unit_test(test_timers_on_two_workers_virtual_clock),
	};
	return WT_MAIN("time", tests, wt_start, wt_stop);
}
