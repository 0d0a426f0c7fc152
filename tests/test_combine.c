/* SPDX-License-Identifier: MIT */
/* Combinators over futures (all, all-settled, any, race), cancelling a
 * future and its hook: outcomes, fail-fast, the winner's time, losers
 * cancelled, no switch when already decided, one wake when several settle
 * together, deadlines, cancellation, plain threads. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#include "sleepers.h"

#define LONG_MS 10000

static int64_t far(void) { return wt_ms(WT_WAIT_MS); }

/* The sanitizers' sizes also under full-system emulation of a Linux kernel
 * (WT_SLOW, set by qemu/run-rv-kernel.sh), where each hand-off between
 * threads goes through the emulated kernel's scheduler: at full size
 * test_cancel_races_settle did not end within the suite's 120 s there on a
 * loaded machine (2026-12-02). */
static long scaled(long native, long sanitized)
{
	return wt_sanitized() || getenv("WT_SLOW") != NULL ? sanitized : native;
}

#define VAL(n) ((void *)(uintptr_t)(n))

static weft_future_t *make_future(void)
{
	weft_future_t *f = NULL;
	assert_int_equal(weft_future_create(&f), 0);
	return f;
}

static void make_futures(weft_future_t **fs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		fs[i] = make_future();
}

static void release_futures(weft_future_t **fs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		weft_future_release(fs[i]);
}

/* A fiber that settles a future after a delay: error 0 resolves with val. */
struct settler {
	weft_future_t *f;
	int delay_ms;
	int error;
	void *val;
	int r;
};

static void *settle_later(void *arg)
{
	struct settler *s = arg;
	if (s->delay_ms)
		weft_sleep_until(wt_ms(s->delay_ms));
	s->r = s->error ? weft_future_reject(s->f, s->error) : weft_future_resolve(s->f, s->val);
	return NULL;
}

/* ---- Arguments ---------------------------------------------------------- */

static void test_combine_bad_args(void **state)
{
	(void)state;
	weft_future_t *fs[2] = {make_future(), NULL};
	size_t idx = 99;
	void *v = NULL;
	int e[2];
	assert_int_equal(weft_future_all(NULL, 1, 0, NULL, NULL), -EINVAL);
	assert_int_equal(weft_future_all_settled(NULL, 1, 0, NULL, NULL), -EINVAL);
	assert_int_equal(weft_future_any(NULL, 1, 0, &idx, &v), -EINVAL);
	assert_int_equal(weft_future_race(NULL, 1, 0, &idx, &v), -EINVAL);
	/* A NULL future among them. */
	assert_int_equal(weft_future_all(fs, 2, far(), NULL, NULL), -EINVAL);
	assert_int_equal(weft_future_all_settled(fs, 2, far(), NULL, e), -EINVAL);
	assert_int_equal(weft_future_any(fs, 2, far(), &idx, &v), -EINVAL);
	assert_int_equal(weft_future_race(fs, 2, far(), &idx, &v), -EINVAL);
	/* Nothing could ever win any or race of no futures. */
	assert_int_equal(weft_future_any(fs, 0, far(), &idx, &v), -EINVAL);
	assert_int_equal(weft_future_race(fs, 0, far(), &idx, &v), -EINVAL);
	assert_int_equal(weft_future_any(NULL, 0, far(), &idx, &v), -EINVAL);
	assert_int_equal(idx, 99);
	/* all and all-settled of none are done at once. */
	assert_int_equal(weft_future_all(NULL, 0, far(), NULL, NULL), 0);
	assert_int_equal(weft_future_all_settled(NULL, 0, -1, NULL, NULL), 0);
	assert_int_equal(weft_future_cancel(NULL), -EINVAL);
	assert_int_equal(weft_future_on_cancel(NULL, NULL, NULL), -EINVAL);
	/* The failed calls left the future pending and untouched. */
	assert_int_equal(weft_future_await(fs[0], 0, NULL), -ETIMEDOUT);
	weft_future_release(fs[0]);
}

/* ---- Cancelling a future ------------------------------------------------ */

struct hook {
	_Atomic int calls;
	void *arg;
};

static void count_hook(void *arg)
{
	struct hook *h = arg;
	h->arg = arg;
	atomic_fetch_add(&h->calls, 1);
}

static void test_cancel_rejects_and_runs_hook(void **state)
{
	(void)state;
	static struct hook h;
	memset(&h, 0, sizeof h);
	weft_future_t *f = make_future();
	assert_int_equal(weft_future_on_cancel(f, count_hook, &h), 0);
	assert_int_equal(weft_future_cancel(f), 0);
	assert_int_equal(atomic_load(&h.calls), 1);
	assert_ptr_equal(h.arg, &h);
	assert_int_equal(weft_future_await(f, 0, NULL), -ECANCELED);
	/* Once: a second cancel, a late settle, a late hook all fail. */
	assert_int_equal(weft_future_cancel(f), -EALREADY);
	assert_int_equal(weft_future_resolve(f, VAL(1)), -EALREADY);
	assert_int_equal(weft_future_on_cancel(f, count_hook, &h), -EALREADY);
	assert_int_equal(atomic_load(&h.calls), 1);
	weft_future_release(f);

	/* Settled another way: the hook never runs. */
	f = make_future();
	assert_int_equal(weft_future_on_cancel(f, count_hook, &h), 0);
	assert_int_equal(weft_future_resolve(f, VAL(2)), 0);
	assert_int_equal(weft_future_cancel(f), -EALREADY);
	assert_int_equal(atomic_load(&h.calls), 1);
	weft_future_release(f);

	/* A hook removed (fn NULL) or replaced is not called. */
	static struct hook h2;
	memset(&h2, 0, sizeof h2);
	f = make_future();
	assert_int_equal(weft_future_on_cancel(f, count_hook, &h), 0);
	assert_int_equal(weft_future_on_cancel(f, NULL, &h), 0);
	assert_int_equal(weft_future_cancel(f), 0);
	weft_future_release(f);
	f = make_future();
	assert_int_equal(weft_future_on_cancel(f, count_hook, &h), 0);
	assert_int_equal(weft_future_on_cancel(f, count_hook, &h2), 0);
	assert_int_equal(weft_future_cancel(f), 0);
	weft_future_release(f);
	assert_int_equal(atomic_load(&h.calls), 1);
	assert_int_equal(atomic_load(&h2.calls), 1);
	/* No hook at all: cancel still rejects. */
	f = make_future();
	assert_int_equal(weft_future_cancel(f), 0);
	assert_int_equal(weft_future_await(f, 0, NULL), -ECANCELED);
	weft_future_release(f);
}

struct aw {
	weft_future_t *f;
	int r;
	int64_t after;
	_Atomic int started;
};

static void *do_await(void *arg)
{
	struct aw *a = arg;
	atomic_store(&a->started, 1);
	a->r = weft_future_await(a->f, far(), NULL);
	a->after = weft_now();
	return NULL;
}

static void test_cancel_wakes_awaiters(void **state)
{
	(void)state;
	static struct aw a, b; /* a fiber and a plain thread */
	weft_future_t *f = make_future();
	memset(&a, 0, sizeof a);
	memset(&b, 0, sizeof b);
	a.f = b.f = f;
	a.r = b.r = 1;
	weft_fiber_t fa = wt_spawn(do_await, &a);
	wt_thread_t t = wt_thread_start(do_await, &b);
	assert_true(wt_wait_flag(&a.started));
	assert_true(wt_wait_flag(&b.started));
	wt_let_workers_sleep(); /* so that the cancel must wake one */
	int64_t cancelled = weft_now();
	assert_int_equal(weft_future_cancel(f), 0);
	wt_join_soon(fa);
	wt_thread_join(t);
	assert_int_equal(a.r, -ECANCELED);
	assert_int_equal(b.r, -ECANCELED);
	assert_true(b.after < cancelled + WT_WAKE_MS * 1000000LL);
	weft_future_release(f);
}

/* ---- all ---------------------------------------------------------------- */

static void test_all_resolves_in_order(void **state)
{
	(void)state;
	/* 3 uses the waiters on the stack, 20 the allocated ones. */
	static const size_t sizes[] = {3, 20};
	for (size_t k = 0; k < 2; k++) {
		size_t n = sizes[k];
		weft_future_t *fs[20];
		static struct settler s[20];
		weft_fiber_t fib[20];
		void *values[20];
		make_futures(fs, n);
		/* Settled in reverse order, the first few before the call. */
		for (size_t i = 0; i < n; i++) {
			s[i] = (struct settler){fs[i], (int)(n - i), 0, VAL(100 + i), 1};
			if (i >= n - 2)
				settle_later(&s[i]);
			else
				fib[i] = wt_spawn(settle_later, &s[i]);
		}
		size_t failed = 77;
		assert_int_equal(weft_future_all(fs, n, far(), values, &failed), 0);
		assert_int_equal(failed, 77);
		for (size_t i = 0; i < n; i++)
			assert_ptr_equal(values[i], VAL(100 + i));
		for (size_t i = 0; i < n - 2; i++)
			wt_join(fib[i]);
		/* Again, settled now: values may be NULL. */
		assert_int_equal(weft_future_all(fs, n, 0, NULL, NULL), 0);
		release_futures(fs, n);
	}
}

static void test_all_fails_fast(void **state)
{
	(void)state;
	enum { N = 4 };
	weft_future_t *fs[N];
	make_futures(fs, N);
	static struct settler s;
	s = (struct settler){fs[2], 10, -EIO, NULL, 1};
	weft_fiber_t f = wt_spawn(settle_later, &s);
	size_t failed = 77;
	void *values[N] = {VAL(1), VAL(1), VAL(1), VAL(1)};
	/* fs[0], fs[1] and fs[3] never settle: all returns at the rejection
	 * (-EIO, not the deadline's -ETIMEDOUT). */
	assert_int_equal(weft_future_all(fs, N, wt_ms(LONG_MS), values, &failed), -EIO);
	assert_int_equal(failed, 2);
	assert_ptr_equal(values[0], VAL(1)); /* not written */
	wt_join(f);
	/* The rest were left alone. */
	assert_int_equal(weft_future_await(fs[0], 0, NULL), -ETIMEDOUT);
	/* Two rejected: the lowest index. */
	assert_int_equal(weft_future_reject(fs[3], -ENOENT), 0);
	assert_int_equal(weft_future_reject(fs[1], -EBADF), 0);
	assert_int_equal(weft_future_all(fs, N, 0, NULL, &failed), -EBADF);
	assert_int_equal(failed, 1);
	release_futures(fs, N);
}

/* ---- all-settled -------------------------------------------------------- */

static void test_all_settled_reports_each(void **state)
{
	(void)state;
	enum { N = 12 };
	weft_future_t *fs[N];
	static struct settler s[N];
	weft_fiber_t fib[N];
	make_futures(fs, N);
	for (int i = 0; i < N; i++) {
		s[i] = (struct settler){fs[i], 1 + i % 5, i % 3 == 0 ? -(100 + i) : 0, VAL(i + 1),
					1};
		fib[i] = wt_spawn(settle_later, &s[i]);
	}
	void *values[N];
	int errors[N];
	assert_int_equal(weft_future_all_settled(fs, N, far(), values, errors), 0);
	for (int i = 0; i < N; i++) {
		wt_join(fib[i]);
		if (i % 3 == 0) {
			assert_int_equal(errors[i], -(100 + i));
			assert_null(values[i]);
		} else {
			assert_int_equal(errors[i], 0);
			assert_ptr_equal(values[i], VAL(i + 1));
		}
	}
	/* Either array may be NULL. */
	assert_int_equal(weft_future_all_settled(fs, N, 0, NULL, errors), 0);
	assert_int_equal(weft_future_all_settled(fs, N, 0, values, NULL), 0);
	release_futures(fs, N);
}

/* ---- any ---------------------------------------------------------------- */

static void test_any_skips_rejections(void **state)
{
	(void)state;
	enum { N = 3 };
	weft_future_t *fs[N];
	make_futures(fs, N);
	static struct settler s[N];
	weft_fiber_t fib[N];
	s[0] = (struct settler){fs[0], 1, -EIO, NULL, 1};
	s[1] = (struct settler){fs[1], 5, -ENOENT, NULL, 1};
	s[2] = (struct settler){fs[2], 20, 0, VAL(0x22), 1};
	for (int i = 0; i < N; i++)
		fib[i] = wt_spawn(settle_later, &s[i]);
	size_t idx = 99;
	void *v = NULL;
	assert_int_equal(weft_future_any(fs, N, far(), &idx, &v), 0);
	assert_int_equal(idx, 2);
	assert_ptr_equal(v, VAL(0x22));
	for (int i = 0; i < N; i++)
		wt_join(fib[i]);
	/* Not cancelled, nothing else touched: index and value may be NULL. */
	assert_int_equal(weft_future_any(fs, N, 0, NULL, NULL), 0);
	release_futures(fs, N);

	/* All rejected: fs[0]'s error, index not written. */
	make_futures(fs, N);
	s[0] = (struct settler){fs[0], 15, -EIO, NULL, 1};
	s[1] = (struct settler){fs[1], 1, -ENOENT, NULL, 1};
	s[2] = (struct settler){fs[2], 5, -EBADF, NULL, 1};
	for (int i = 0; i < N; i++)
		fib[i] = wt_spawn(settle_later, &s[i]);
	idx = 99;
	assert_int_equal(weft_future_any(fs, N, far(), &idx, &v), -EIO);
	assert_int_equal(idx, 99);
	for (int i = 0; i < N; i++)
		wt_join(fib[i]);
	release_futures(fs, N);
}

/* ---- race --------------------------------------------------------------- */

/* A loser: a fiber that would settle its future after 10 s. Its future's
 * cancel hook cancels the fiber, the way a producer links the two. */
struct loser {
	weft_future_t *f;
	weft_fiber_t h;
	int sleep_r;
	_Atomic int hooks;
	_Atomic int started;
};

static void *loser_fiber(void *arg)
{
	struct loser *l = arg;
	atomic_store(&l->started, 1);
	l->sleep_r = weft_sleep_until(wt_ms(LONG_MS));
	weft_future_resolve(l->f, VAL(0x105e)); /* -EALREADY once cancelled */
	return NULL;
}

static void cancel_fiber_hook(void *arg)
{
	struct loser *l = arg;
	atomic_fetch_add(&l->hooks, 1);
	weft_fiber_cancel(l->h);
}

static void test_race_winner_time_cancels_losers(void **state)
{
	(void)state;
	enum { NL = 3 };
	static struct loser l[NL];
	static struct settler win;
	weft_future_t *fs[NL + 1];
	for (int i = 0; i < NL; i++) {
		memset(&l[i], 0, sizeof l[i]);
		l[i].f = make_future();
		l[i].sleep_r = 1;
		l[i].h = wt_spawn(loser_fiber, &l[i]);
		assert_int_equal(weft_future_on_cancel(l[i].f, cancel_fiber_hook, &l[i]), 0);
		fs[i < 1 ? i : i + 1] = l[i].f;
	}
	fs[1] = make_future();
	win = (struct settler){fs[1], 10, 0, VAL(0x3141), 1};
	weft_fiber_t w = wt_spawn(settle_later, &win);
	size_t idx = 99;
	void *v = NULL;
	assert_int_equal(weft_future_race(fs, NL + 1, far(), &idx, &v), 0);
	/* The winner settles at 10 ms, the losers would at 10 s: race returned
	 * at the winner's time if, when it returned, every loser was still
	 * asleep (ordering, not a stopwatch: the exact times are checked on
	 * the virtual clock below). Each hook ran before race returned, and
	 * each loser's sleep ended with the cancellation, not its deadline. */
	assert_int_equal(idx, 1);
	assert_ptr_equal(v, VAL(0x3141));
	wt_join(w);
	for (int i = 0; i < NL; i++) {
		/* Cancelled before race returned: rejected, hook run once. */
		assert_int_equal(atomic_load(&l[i].hooks), 1);
		assert_int_equal(weft_future_await(l[i].f, 0, NULL), -ECANCELED);
		wt_join(l[i].h);
		assert_int_equal(l[i].sleep_r, -ECANCELED);
		weft_future_release(l[i].f);
	}
	weft_future_release(fs[1]);
}

static void test_race_rejection_wins(void **state)
{
	(void)state;
	enum { N = 3 };
	weft_future_t *fs[N];
	make_futures(fs, N);
	static struct settler s;
	s = (struct settler){fs[2], 5, -ECONNRESET, NULL, 1};
	weft_fiber_t f = wt_spawn(settle_later, &s);
	size_t idx = 99;
	void *v = VAL(7);
	assert_int_equal(weft_future_race(fs, N, far(), &idx, &v), -ECONNRESET);
	assert_int_equal(idx, 2);
	assert_ptr_equal(v, VAL(7));
	wt_join(f);
	assert_int_equal(weft_future_await(fs[0], 0, NULL), -ECANCELED);
	assert_int_equal(weft_future_await(fs[1], 0, NULL), -ECANCELED);
	release_futures(fs, N);

	/* The same future twice, already settled: it wins, it is not cancelled. */
	weft_future_t *g = make_future(), *h = make_future();
	weft_future_t *gs[3] = {h, g, g};
	assert_int_equal(weft_future_resolve(g, VAL(9)), 0);
	assert_int_equal(weft_future_race(gs, 3, 0, &idx, &v), 0);
	assert_int_equal(idx, 1);
	assert_ptr_equal(v, VAL(9));
	assert_int_equal(weft_future_await(h, 0, NULL), -ECANCELED);
	weft_future_release(g);
	weft_future_release(h);
}

/* ---- Decided at once: no switch ----------------------------------------- */

static uint64_t switches(void)
{
	weft_stats_t st;
	if (weft_stats(&st) != 0)
		return 0;
	return st.switches;
}

struct noswitch {
	weft_future_t *ok[3], *bad, *pending;
	uint64_t before, after, after_sleep;
	int fails;
};

static void *combine_settled(void *arg)
{
	struct noswitch *x = arg;
	void *v[3];
	size_t idx;
	int e[3];
	/* Nothing else runs: every worker but ours is idle, so the counter
	 * moves only if this fiber is switched out. */
	x->before = switches();
	x->fails += weft_future_await(x->ok[0], far(), NULL) != 0;
	x->fails += weft_future_all(x->ok, 3, far(), v, NULL) != 0;
	x->fails += weft_future_all_settled(x->ok, 3, far(), v, e) != 0;
	x->fails += weft_future_any(x->ok, 3, far(), &idx, v) != 0;
	/* Decided without every future settled. */
	weft_future_t *mixed[2] = {x->pending, x->bad};
	x->fails += weft_future_all(mixed, 2, far(), v, &idx) != -EIO;
	weft_future_t *mixed2[2] = {x->pending, x->ok[1]};
	x->fails += weft_future_any(mixed2, 2, -1, &idx, v) != 0 || idx != 1;
	x->fails += weft_future_race(mixed2, 2, -1, &idx, v) != 0 || idx != 1;
	x->after = switches();
	/* The counter does see a park. */
	weft_sleep_until(wt_ms(2));
	x->after_sleep = switches();
	return NULL;
}

static void test_settled_no_switch(void **state)
{
	(void)state;
	static struct noswitch x;
	memset(&x, 0, sizeof x);
	make_futures(x.ok, 3);
	for (int i = 0; i < 3; i++)
		assert_int_equal(weft_future_resolve(x.ok[i], VAL(i)), 0);
	x.bad = make_future();
	assert_int_equal(weft_future_reject(x.bad, -EIO), 0);
	x.pending = make_future();
	wt_join(wt_spawn(combine_settled, &x));
	assert_int_equal(x.fails, 0);
	assert_true(x.before > 0);
	assert_int_equal(x.after, x.before);
	assert_true(x.after_sleep > x.after);
	/* race cancelled the pending loser. */
	assert_int_equal(weft_future_await(x.pending, 0, NULL), -ECANCELED);
	release_futures(x.ok, 3);
	weft_future_release(x.bad);
	weft_future_release(x.pending);
}

/* ---- One wake when several settle together ------------------------------ */

struct together {
	weft_future_t *fs[2], *after;
	int kind; /* 0 any, 1 race, 2 all */
	int r, r_after;
	size_t idx;
	void *v_after;
	_Atomic int go, waiting, returned;
};

static void *wait_two_then_one(void *arg)
{
	struct together *x = arg;
	void *v[2];
	atomic_store(&x->waiting, 1);
	if (x->kind == 0)
		x->r = weft_future_any(x->fs, 2, far(), &x->idx, v);
	else if (x->kind == 1)
		x->r = weft_future_race(x->fs, 2, far(), &x->idx, v);
	else
		x->r = weft_future_all(x->fs, 2, far(), v, NULL);
	atomic_store(&x->returned, 1);
	/* A second wake for the park above would end this one early. */
	x->r_after = weft_future_await(x->after, far(), &x->v_after);
	return NULL;
}

static void *settle_on_go(void *arg)
{
	struct together *x = arg;
	while (!atomic_load(&x->go))
		wt_thread_yield();
	weft_future_resolve(x->fs[1], VAL(2));
	return NULL;
}

static void test_woken_once_when_two_settle(void **state)
{
	(void)state;
	WT_SIM_SKIP("its plain threads spin until this thread, after a 1 ms sleep, "
		    "says go: the virtual clock holds while a plain thread runs, so "
		    "the sleep never ends");
	/* The settling thread spins: on one bare-metal hart each spin may cost
	 * a time slice, so fewer rounds there. */
	long iters = WT_LINUX ? scaled(500, 100) : 100;
	static struct together x;
	for (long i = 0; i < iters; i++) {
		memset(&x, 0, sizeof x);
		make_futures(x.fs, 2);
		x.after = make_future();
		x.kind = (int)(i % 3);
		x.r = x.r_after = 1;
		weft_fiber_t w = wt_spawn(wait_two_then_one, &x);
		wt_thread_t t = wt_thread_start(settle_on_go, &x);
		int64_t by = wt_ms(LONG_MS);
		while (!atomic_load(&x.waiting) && weft_now() < by)
			wt_thread_yield();
		if (i & 1)
			weft_sleep_until(wt_ms(1)); /* sometimes parked, sometimes not yet */
		atomic_store(&x.go, 1);
		int r0 = weft_future_resolve(x.fs[0], VAL(1));
		wt_thread_join(t);
		assert_true(atomic_load(&x.waiting));
		/* Race may have cancelled fs[0] first. */
		assert_true(r0 == 0 || (x.kind == 1 && r0 == -EALREADY));
		/* Woken by this thread or the other: well before its own
		 * deadline (far()) could end the wait instead. */
		by = wt_ms(WT_WAKE_MS);
		while (!atomic_load(&x.returned) && weft_now() < by)
			wt_thread_yield();
		assert_true(atomic_load(&x.returned));
		assert_int_equal(weft_future_resolve(x.after, VAL(3)), 0);
		wt_join_soon(w);
		assert_int_equal(x.r, 0);
		if (x.kind != 2)
			assert_true(x.idx == 0 || x.idx == 1);
		assert_int_equal(x.r_after, 0);
		assert_ptr_equal(x.v_after, VAL(3));
		release_futures(x.fs, 2);
		weft_future_release(x.after);
	}
}

/* ---- Deadlines and cancellation ----------------------------------------- */

struct timed {
	weft_future_t *fs[3];
	int kind;
	int64_t deadline, after;
	int r;
	_Atomic int started;
};

static int call_kind(struct timed *x)
{
	size_t idx;
	void *v[3];
	int e[3];
	switch (x->kind) {
	case 0:
		return weft_future_all(x->fs, 3, x->deadline, v, &idx);
	case 1:
		return weft_future_all_settled(x->fs, 3, x->deadline, v, e);
	case 2:
		return weft_future_any(x->fs, 3, x->deadline, &idx, v);
	default:
		return weft_future_race(x->fs, 3, x->deadline, &idx, v);
	}
}

static void *timed_call(void *arg)
{
	struct timed *x = arg;
	atomic_store(&x->started, 1);
	x->r = call_kind(x);
	x->after = weft_now();
	return NULL;
}

static void test_combine_deadlines(void **state)
{
	(void)state;
	static struct timed x;
	for (int kind = 0; kind < 4; kind++) {
		memset(&x, 0, sizeof x);
		make_futures(x.fs, 3);
		x.kind = kind;
		/* fs[0] settled (rejected for any, resolved for all and
		 * all-settled, pending for race), the others pending: none of
		 * the four is decided. */
		if (kind == 2)
			assert_int_equal(weft_future_reject(x.fs[0], -EIO), 0);
		else if (kind != 3)
			assert_int_equal(weft_future_resolve(x.fs[0], VAL(1)), 0);
		x.deadline = 0;
		assert_int_equal(call_kind(&x), -ETIMEDOUT);
		x.deadline = weft_now() - 1;
		assert_int_equal(call_kind(&x), -ETIMEDOUT);
		x.deadline = wt_ms(20);
		assert_int_equal(call_kind(&x), -ETIMEDOUT);
		assert_true(weft_now() >= x.deadline);
		/* From a fiber. */
		x.deadline = wt_ms(20);
		wt_join(wt_spawn(timed_call, &x));
		assert_int_equal(x.r, -ETIMEDOUT);
		assert_true(x.after >= x.deadline);
		/* Nothing cancelled, nothing left queued: they settle and the
		 * next call is decided. */
		assert_int_equal(weft_future_resolve(x.fs[1], VAL(2)), 0);
		assert_int_equal(weft_future_resolve(x.fs[2], VAL(3)), 0);
		x.deadline = 0;
		assert_int_equal(call_kind(&x), 0);
		release_futures(x.fs, 3);
	}
}

static void test_combine_cancelled(void **state)
{
	(void)state;
	static struct timed x;
	for (int kind = 0; kind < 4; kind++) {
		memset(&x, 0, sizeof x);
		make_futures(x.fs, 3);
		x.kind = kind;
		x.deadline = far();
		x.r = 1;
		weft_fiber_t f = wt_spawn_named(timed_call, &x, "waiter");
		assert_true(wt_wait_parked("waiter", "combinator"));
		wt_let_workers_sleep(); /* so that the cancellation must wake one */
		assert_int_equal(weft_fiber_cancel(f), 0);
		wt_join_soon(f);
		assert_int_equal(x.r, -ECANCELED); /* not -ETIMEDOUT: the request ended it */
		/* race cancelled no loser: each is still pending. */
		for (int i = 0; i < 3; i++)
			assert_int_equal(weft_future_await(x.fs[i], 0, NULL), -ETIMEDOUT);
		release_futures(x.fs, 3);
	}
}

/* Cancellation racing with the settlement that decides the wait: delivered
 * exactly once, by the call or at the next suspension point. */
struct crace {
	weft_future_t *fs[2];
	int r, later;
	size_t idx;
	_Atomic int phase, started, returned;
};

static void *crace_fiber(void *arg)
{
	struct crace *x = arg;
	void *v;
	atomic_store(&x->started, 1);
	x->r = weft_future_any(x->fs, 2, far(), &x->idx, &v);
	atomic_store(&x->returned, 1);
	x->later = wt_yield_count_cancels(&x->phase);
	return NULL;
}

static void test_cancel_races_settle(void **state)
{
	(void)state;
	long iters = scaled(1000, 100);
	static struct crace x;
	long won = 0, cancelled = 0;
	for (long i = 0; i < iters; i++) {
		memset(&x, 0, sizeof x);
		make_futures(x.fs, 2);
		x.r = 1;
		weft_fiber_t f = wt_spawn_named(crace_fiber, &x, "racer");
		if (i & 2) /* sometimes parked first, sometimes not yet running */
			while (!atomic_load(&x.started))
				wt_thread_yield();
		for (long k = 0; k < (i % 7) * 50; k++)
			atomic_signal_fence(memory_order_seq_cst);
		if (i < 2) {
			/* Each side forced once, the wait parked: the settlement
			 * surely lands first (it wins, the request stays
			 * pending), or the cancellation does and the wait has
			 * returned before the settlement. */
			assert_true(wt_wait_parked("racer", "combinator"));
			if (i == 0) {
				assert_int_equal(weft_future_resolve(x.fs[1], VAL(1)), 0);
				assert_int_equal(weft_fiber_cancel(f), 0);
			} else {
				assert_int_equal(weft_fiber_cancel(f), 0);
				assert_true(wt_wait_flag(&x.returned));
				assert_int_equal(weft_future_resolve(x.fs[1], VAL(1)), 0);
			}
		} else if (i & 1) {
			assert_int_equal(weft_future_resolve(x.fs[1], VAL(1)), 0);
			assert_int_equal(weft_fiber_cancel(f), 0);
		} else {
			assert_int_equal(weft_fiber_cancel(f), 0);
			/* Give the cancellation a varying head start. */
			for (long k = 0; k < (i % 13) * 5000; k++)
				atomic_signal_fence(memory_order_seq_cst);
			assert_int_equal(weft_future_resolve(x.fs[1], VAL(1)), 0);
		}
		atomic_store(&x.phase, 1);
		wt_join_soon(f);
		assert_int_equal((x.r == -ECANCELED) + x.later, 1);
		if (i < 2)
			assert_int_equal(x.r, i == 0 ? 0 : -ECANCELED);
		if (x.r == 0) {
			won++;
			assert_int_equal(x.idx, 1);
		} else {
			cancelled++;
		}
		release_futures(x.fs, 2);
	}
	print_message("any %ld, cancelled %ld\n", won, cancelled);
	assert_int_equal(won + cancelled, iters);
	assert_true(won >= 1 && cancelled >= 1); /* both sides were raced */
}

/* ---- Plain threads ------------------------------------------------------ */

static void *thread_all(void *arg)
{
	struct timed *x = arg;
	x->r = weft_future_all(x->fs, 3, far(), NULL, NULL);
	return NULL;
}

static void test_combine_from_thread(void **state)
{
	(void)state;
	static struct timed x;
	static struct settler s[3];
	weft_fiber_t fib[3];
	memset(&x, 0, sizeof x);
	make_futures(x.fs, 3);
	x.r = 1;
	wt_thread_t t = wt_thread_start(thread_all, &x);
	for (int i = 0; i < 3; i++) {
		s[i] = (struct settler){x.fs[i], 5 * (i + 1), 0, VAL(i), 1};
		fib[i] = wt_spawn(settle_later, &s[i]);
	}
	wt_thread_join(t);
	for (int i = 0; i < 3; i++)
		wt_join(fib[i]);
	assert_int_equal(x.r, 0);
	/* And the main thread (not a fiber) in a race that times out. */
	weft_future_t *p[2];
	make_futures(p, 2);
	int64_t dl = wt_ms(10);
	assert_int_equal(weft_future_race(p, 2, dl, NULL, NULL), -ETIMEDOUT);
	assert_true(weft_now() >= dl);
	release_futures(p, 2);
	release_futures(x.fs, 3);
}

/* ---- The winner's time, on the virtual clock ---------------------------
 * The clock moves only when every worker is idle, straight to the next
 * deadline, so times here are exact. The racing fiber spawns the others:
 * while it runs its worker is busy and the clock holds still. */

#define MS 1000000LL

static int start_virtual(void **state)
{
	(void)state;
	weft_config_t c = {.flags = WEFT_CFG_VIRTUAL_CLOCK};
	return weft_init(&c) == 0 ? 0 : -1;
}

struct vrace {
	struct loser l[3];
	struct settler win;
	weft_future_t *fs[4];
	int r, spawn_errors;
	size_t idx;
	void *v;
	int64_t t0, t1;
};

static void *vrace_fiber(void *arg)
{
	struct vrace *x = arg;
	x->t0 = weft_now();
	for (int i = 0; i < 3; i++) {
		/* Losers would settle at t0 + 10 s: they sleep until wt_ms(LONG_MS). */
		x->spawn_errors += weft_fiber_spawn(&x->l[i].h, NULL, loser_fiber, &x->l[i]) != 0;
		x->spawn_errors +=
			weft_future_on_cancel(x->l[i].f, cancel_fiber_hook, &x->l[i]) != 0;
	}
	weft_fiber_t w;
	x->spawn_errors += weft_fiber_spawn(&w, NULL, settle_later, &x->win) != 0;
	x->r = weft_future_race(x->fs, 4, x->t0 + 3600 * 1000 * MS, &x->idx, &x->v);
	x->t1 = weft_now();
	x->spawn_errors += weft_fiber_join(w, -1, NULL, NULL) != 0;
	return NULL;
}

static void test_vclock_race_at_winner_time(void **state)
{
	(void)state;
	static struct vrace x;
	memset(&x, 0, sizeof x);
	for (int i = 0; i < 3; i++) {
		x.l[i].f = make_future();
		x.l[i].sleep_r = 1;
		x.fs[i == 0 ? 0 : i + 1] = x.l[i].f;
	}
	x.fs[1] = make_future();
	x.win = (struct settler){x.fs[1], 10, 0, VAL(0x3141), 1};
	weft_fiber_t f;
	assert_int_equal(weft_fiber_spawn(&f, NULL, vrace_fiber, &x), 0);
	assert_int_equal(weft_fiber_join(f, -1, NULL, NULL), 0);
	assert_int_equal(x.spawn_errors, 0);
	assert_int_equal(x.r, 0);
	assert_int_equal(x.idx, 1);
	assert_ptr_equal(x.v, VAL(0x3141));
	/* Exactly the winner's 10 ms, not the losers' 10 s. */
	assert_true(x.t1 - x.t0 == 10 * MS);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(weft_fiber_join(x.l[i].h, -1, NULL, NULL), 0);
		assert_int_equal(atomic_load(&x.l[i].hooks), 1);
		assert_int_equal(x.l[i].sleep_r, -ECANCELED);
		assert_int_equal(weft_future_await(x.l[i].f, 0, NULL), -ECANCELED);
		weft_future_release(x.l[i].f);
	}
	/* Nothing waited for the losers' deadlines either. */
	assert_true(weft_now() - x.t0 < LONG_MS * MS);
	weft_future_release(x.fs[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_combine_bad_args),
		cmocka_unit_test(test_cancel_rejects_and_runs_hook),
		cmocka_unit_test(test_cancel_wakes_awaiters),
		cmocka_unit_test(test_all_resolves_in_order),
		cmocka_unit_test(test_all_fails_fast),
		cmocka_unit_test(test_all_settled_reports_each),
		cmocka_unit_test(test_any_skips_rejections),
		cmocka_unit_test(test_race_winner_time_cancels_losers),
		cmocka_unit_test(test_race_rejection_wins),
		cmocka_unit_test(test_settled_no_switch),
		cmocka_unit_test(test_woken_once_when_two_settle),
		cmocka_unit_test(test_combine_deadlines),
		cmocka_unit_test(test_combine_cancelled),
		cmocka_unit_test(test_cancel_races_settle),
		cmocka_unit_test(test_combine_from_thread),
	};
	const struct CMUnitTest vtests[] = {
		cmocka_unit_test(test_vclock_race_at_winner_time),
	};
	int failed = WT_MAIN("combine", tests, wt_start, wt_stop);
	failed += WT_MAIN("combine-vclock", vtests, start_virtual, wt_stop);
	return failed > 100 ? 100 : failed;
}
