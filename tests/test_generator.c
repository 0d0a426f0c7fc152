/* SPDX-License-Identifier: MIT */
/* Generators: values in order and the end (with the generator's result,
 * again on every later call), lazy start and lock-step resumption, closing
 * one that never started, one waiting in yield (also holding cancellation
 * off) and one running elsewhere, a resumer that times out or is cancelled
 * (no value lost), a close that times out, exit and fail inside a
 * generator, every error, a fiber
 * and a plain thread as resumers, and local storage inherited by one. */
#include <string.h>

#include "testutil.h"

#define MS 1000000LL

static void *count_to(void *arg)
{
	intptr_t n = (intptr_t)arg;
	for (intptr_t i = 1; i <= n; i++)
		if (weft_gen_yield((void *)i))
			return NULL;
	return (void *)0xd0e;
}

static void test_values_then_done(void **state)
{
	(void)state;
	weft_gen_t *g;
	assert_int_equal(weft_gen_create(&g, NULL, count_to, (void *)5), 0);
	void *v;
	for (intptr_t i = 1; i <= 5; i++) {
		v = NULL;
		assert_int_equal(weft_gen_next(g, wt_ms(30000), &v), 0);
		assert_ptr_equal(v, (void *)i);
	}
	assert_int_equal(weft_gen_next(g, wt_ms(30000), &v), -EPIPE);
	assert_ptr_equal(v, (void *)0xd0e);
	v = NULL;
	assert_int_equal(weft_gen_next(g, 0, &v), -EPIPE);
	assert_ptr_equal(v, (void *)0xd0e);
	assert_int_equal(weft_gen_next(g, 0, NULL), -EPIPE);
	int status = 1;
	assert_int_equal(weft_gen_destroy(g, wt_ms(30000), &status), 0);
	assert_int_equal(status, 0);
}

/* The generator runs only between a next and its value. */
struct step {
	_Atomic int started, progress;
	int yields;
};

static void *stepper(void *arg)
{
	struct step *s = arg;
	atomic_store(&s->started, 1);
	for (int i = 1; i <= 3; i++) {
		atomic_store(&s->progress, i);
		s->yields += weft_gen_yield((void *)(intptr_t)i) == 0;
	}
	atomic_store(&s->progress, 4);
	return NULL;
}

static void test_lazy_and_lock_step(void **state)
{
	(void)state;
	struct step s = {0};
	weft_gen_t *g;
	assert_int_equal(weft_gen_create(&g, NULL, stepper, &s), 0);
	weft_sleep_until(weft_deadline_in(MS));
	assert_int_equal(atomic_load(&s.started), 0);
	for (int i = 1; i <= 3; i++) {
		void *v;
		assert_int_equal(weft_gen_next(g, wt_ms(30000), &v), 0);
		assert_ptr_equal(v, (void *)(intptr_t)i);
		/* It waits in its yield until the next call: never runs ahead. */
		weft_sleep_until(weft_deadline_in(MS));
		assert_int_equal(atomic_load(&s.progress), i);
	}
	assert_int_equal(weft_gen_next(g, wt_ms(30000), NULL), -EPIPE);
	assert_int_equal(atomic_load(&s.progress), 4);
	assert_int_equal(weft_gen_destroy(g, wt_ms(30000), NULL), 0);
	assert_int_equal(s.yields, 3);
}

static void test_close_never_started(void **state)
{
	(void)state;
	struct step s = {0};
	weft_gen_t *g;
	assert_int_equal(weft_gen_create(&g, NULL, stepper, &s), 0);
	int status = 1;
	assert_int_equal(weft_gen_destroy(g, wt_ms(30000), &status), 0);
	assert_int_equal(status, -ECANCELED);
	assert_int_equal(atomic_load(&s.started), 0);
}

/* A generator that, told to stop, first waits for a gate with cancellation
 * held off: close waits for it, and gives up at its deadline (-ETIMEDOUT,
 * g still valid); closed again once the gate opens, it is freed. */
struct gated_gen {
	weft_future_t *gate;
	int r_yield, r_gate;
};

static void *finish_after_gate(void *arg)
{
	struct gated_gen *x = arg;
	weft_fiber_cancel_hold();
	x->r_yield = weft_gen_yield((void *)1);
	x->r_gate = weft_future_await(x->gate, wt_ms(30000), NULL);
	weft_fiber_cancel_release();
	return NULL;
}

static void test_close_times_out(void **state)
{
	(void)state;
	static struct gated_gen x;
	x = (struct gated_gen){.r_yield = 1, .r_gate = 1};
	assert_int_equal(weft_future_create(&x.gate), 0);
	weft_gen_t *g;
	assert_int_equal(weft_gen_create(&g, NULL, finish_after_gate, &x), 0);
	void *v = NULL;
	assert_int_equal(weft_gen_next(g, wt_ms(30000), &v), 0);
	assert_ptr_equal(v, (void *)1);
	int status = 1;
	assert_int_equal(weft_gen_destroy(g, 0, &status), -ETIMEDOUT);
	assert_int_equal(weft_gen_destroy(g, wt_ms(20), &status), -ETIMEDOUT);
	assert_int_equal(status, 1); /* not written */
	assert_int_equal(weft_future_resolve(x.gate, NULL), 0);
	assert_int_equal(weft_gen_destroy(g, wt_ms(30000), &status), 0);
	assert_int_equal(status, -ECANCELED);
	assert_int_equal(x.r_yield, -ECANCELED);
	assert_int_equal(x.r_gate, 0);
	weft_future_release(x.gate);
}

/* Closed while waiting in yield: the yield returns -ECANCELED, once as a
 * cancellation (cleanup may block), and every later yield says so too. */
struct closing {
	int hold;
	int r_yield, r_cleanup, r_again, r_release;
};

static void *closable(void *arg)
{
	struct closing *c = arg;
	if (c->hold)
		weft_fiber_cancel_hold();
	weft_gen_yield((void *)1);
	c->r_yield = weft_gen_yield((void *)2);
	if (c->hold)
		c->r_release = weft_fiber_cancel_release();
	c->r_cleanup = weft_sleep_until(weft_deadline_in(MS));
	c->r_again = weft_gen_yield((void *)3);
	return NULL;
}

static void close_in_yield(int hold)
{
	struct closing c = {.hold = hold, .r_yield = 1, .r_cleanup = 1, .r_again = 1};
	weft_gen_t *g;
	assert_int_equal(weft_gen_create(&g, NULL, closable, &c), 0);
	void *v;
	assert_int_equal(weft_gen_next(g, wt_ms(30000), &v), 0);
	assert_ptr_equal(v, (void *)1);
	assert_int_equal(weft_gen_next(g, wt_ms(30000), &v), 0);
	assert_ptr_equal(v, (void *)2);
	int status = 1;
	assert_int_equal(weft_gen_destroy(g, wt_ms(30000), &status), 0);
	assert_int_equal(status, -ECANCELED);
	assert_int_equal(c.r_yield, -ECANCELED);
	assert_int_equal(c.r_again, -ECANCELED);
	assert_int_equal(c.r_cleanup, 0);
}

static void test_close_in_yield(void **state)
{
	(void)state;
	close_in_yield(0);
}

static void test_close_in_yield_holding(void **state)
{
	(void)state;
	close_in_yield(1);
}

/* Closed while running its body (the resumer gave up waiting): its fiber
 * is cancelled there. */
struct blocked {
	weft_future_t *never;
	_Atomic int waiting;
	int r_await, r_yield;
};

static void *blocks_in_body(void *arg)
{
	struct blocked *b = arg;
	atomic_store(&b->waiting, 1);
	b->r_await = weft_future_await(b->never, -1, NULL);
	b->r_yield = weft_gen_yield(NULL);
	return NULL;
}

static void test_close_while_running(void **state)
{
	(void)state;
	struct blocked b = {.r_await = 1, .r_yield = 1};
	assert_int_equal(weft_future_create(&b.never), 0);
	weft_gen_t *g;
	assert_int_equal(weft_gen_create(&g, NULL, blocks_in_body, &b), 0);
	assert_int_equal(weft_gen_next(g, 0, NULL), -ETIMEDOUT); /* resumed */
	assert_int_equal(wt_wait_flag(&b.waiting), 1);
	int status = 1;
	assert_int_equal(weft_gen_destroy(g, wt_ms(30000), &status), 0);
	assert_int_equal(status, -ECANCELED);
	assert_int_equal(b.r_await, -ECANCELED);
	assert_int_equal(b.r_yield, -ECANCELED);
	weft_future_release(b.never);
}

/* A resumer that stops waiting loses nothing. */
struct slow {
	weft_future_t *go;
};

static void *yields_when_told(void *arg)
{
	struct slow *s = arg;
	void *v = NULL;
	weft_future_await(s->go, wt_ms(30000), &v);
	weft_gen_yield(v);
	weft_gen_yield((void *)7);
	return NULL;
}

static void test_next_timeout_keeps_value(void **state)
{
	(void)state;
	struct slow s;
	assert_int_equal(weft_future_create(&s.go), 0);
	weft_gen_t *g;
	assert_int_equal(weft_gen_create(&g, NULL, yields_when_told, &s), 0);
	void *v = (void *)1;
	assert_int_equal(weft_gen_next(g, 0, &v), -ETIMEDOUT);
	assert_int_equal(weft_gen_next(g, weft_deadline_in(MS), &v), -ETIMEDOUT);
	assert_ptr_equal(v, (void *)1); /* not written */
	weft_future_resolve(s.go, (void *)5);
	assert_int_equal(weft_gen_next(g, wt_ms(30000), &v), 0);
	assert_ptr_equal(v, (void *)5);
	assert_int_equal(weft_gen_next(g, wt_ms(30000), &v), 0);
	assert_ptr_equal(v, (void *)7);
	assert_int_equal(weft_gen_next(g, wt_ms(30000), &v), -EPIPE);
	assert_null(v);
	assert_int_equal(weft_gen_destroy(g, wt_ms(30000), NULL), 0);
	weft_future_release(s.go);
}

struct resumer {
	weft_gen_t *g;
	_Atomic int waiting;
	int r;
};

static void *resume_once(void *arg)
{
	struct resumer *r = arg;
	atomic_store(&r->waiting, 1);
	/* The test's own probing next may be in progress for a moment. */
	while ((r->r = weft_gen_next(r->g, wt_ms(30000), NULL)) == -EBUSY)
		weft_fiber_yield();
	return NULL;
}

static void test_resumer_cancelled_and_busy(void **state)
{
	(void)state;
	struct slow s;
	assert_int_equal(weft_future_create(&s.go), 0);
	struct resumer r = {.r = 1};
	assert_int_equal(weft_gen_create(&r.g, NULL, yields_when_told, &s), 0);
	weft_fiber_t f = wt_spawn(resume_once, &r);
	assert_int_equal(wt_wait_flag(&r.waiting), 1);
	/* While it waits (or is about to), another resumer or a close is
	 * refused; retry until the first is surely in. */
	int busy;
	while ((busy = weft_gen_next(r.g, 0, NULL)) == -ETIMEDOUT)
		weft_sleep_until(weft_deadline_in(MS));
	/* Either this call got in first (-ETIMEDOUT, retried) or found it
	 * busy: only -EBUSY leaves the loop, since the generator waits for
	 * s.go and nothing can be yielded yet. */
	assert_int_equal(busy, -EBUSY);
	assert_int_equal(weft_gen_destroy(r.g, 0, NULL), -EBUSY);
	assert_int_equal(weft_fiber_cancel(f), 0);
	wt_join(f);
	assert_int_equal(r.r, -ECANCELED);
	weft_future_resolve(s.go, (void *)9);
	void *v;
	assert_int_equal(weft_gen_next(r.g, wt_ms(30000), &v), 0);
	assert_ptr_equal(v, (void *)9);
	int status = 1;
	assert_int_equal(weft_gen_destroy(r.g, wt_ms(30000), &status), 0);
	assert_int_equal(status, -ECANCELED); /* closed waiting after yielding 9 */
	weft_future_release(s.go);
}

static void *exits_inside(void *arg)
{
	weft_gen_yield(arg);
	weft_fiber_exit((void *)0xe);
	return NULL;
}

static void *fails_inside(void *arg)
{
	weft_gen_yield(arg);
	weft_fiber_set_status(-EIO);
	weft_fiber_exit(NULL);
	return (void *)1;
}

static void test_exit_and_fail_inside(void **state)
{
	(void)state;
	weft_gen_t *g;
	void *v;
	int status = 1;
	assert_int_equal(weft_gen_create(&g, NULL, exits_inside, (void *)3), 0);
	assert_int_equal(weft_gen_next(g, wt_ms(30000), &v), 0);
	assert_int_equal(weft_gen_next(g, wt_ms(30000), &v), -EPIPE);
	assert_ptr_equal(v, (void *)0xe);
	assert_int_equal(weft_gen_destroy(g, wt_ms(30000), &status), 0);
	assert_int_equal(status, 0);

	assert_int_equal(weft_gen_create(&g, NULL, fails_inside, (void *)3), 0);
	assert_int_equal(weft_gen_next(g, wt_ms(30000), &v), 0);
	v = (void *)1;
	assert_int_equal(weft_gen_next(g, wt_ms(30000), &v), -EPIPE);
	assert_null(v);
	assert_int_equal(weft_gen_destroy(g, wt_ms(30000), &status), 0);
	assert_int_equal(status, -EIO);
}

/* A generator calling next or close on itself. */
struct selfish {
	weft_gen_t *_Atomic g;
	int r_next, r_close;
};

static void *on_itself(void *arg)
{
	struct selfish *s = arg;
	weft_gen_t *g;
	while (!(g = atomic_load(&s->g)))
		weft_fiber_yield();
	s->r_next = weft_gen_next(g, 0, NULL);
	s->r_close = weft_gen_destroy(g, 0, NULL);
	return NULL;
}

static void *plain_fiber_yields(void *arg)
{
	(void)arg;
	return (void *)(intptr_t)weft_gen_yield(NULL);
}

static void test_errors(void **state)
{
	(void)state;
	weft_gen_t *g;
	assert_int_equal(weft_gen_create(NULL, NULL, count_to, NULL), -EINVAL);
	assert_int_equal(weft_gen_create(&g, NULL, NULL, NULL), -EINVAL);
	weft_attr_t bad = {.stack_size = 1};
	assert_int_equal(weft_gen_create(&g, &bad, count_to, NULL), -EINVAL);
	assert_int_equal(weft_gen_next(NULL, 0, NULL), -EINVAL);
	assert_int_equal(weft_gen_destroy(NULL, 0, NULL), 0); /* destroy(NULL): a no-op */
	assert_int_equal(weft_gen_yield(NULL), -EPERM);
	assert_ptr_equal(wt_run_fiber(plain_fiber_yields, NULL), (void *)(intptr_t)-EPERM);

	struct selfish s = {0};
	weft_gen_t *sg;
	assert_int_equal(weft_gen_create(&sg, NULL, on_itself, &s), 0);
	atomic_store(&s.g, sg);
	assert_int_equal(weft_gen_next(sg, wt_ms(30000), NULL), -EPIPE);
	assert_int_equal(s.r_next, -EDEADLK);
	assert_int_equal(s.r_close, -EDEADLK);
	assert_int_equal(weft_gen_destroy(sg, wt_ms(30000), NULL), 0);
}

/* A fiber as the resumer, with the generator on another worker, many
 * values in order. */
#define MANY 2000

static void *consume(void *arg)
{
	weft_gen_t *g = arg;
	intptr_t expect = 1, bad = 0;
	void *v;
	int r;
	while ((r = weft_gen_next(g, wt_ms(30000), &v)) == 0)
		bad += v != (void *)expect++;
	if (r != -EPIPE || v != (void *)0xd0e || expect != MANY + 1)
		bad++;
	return (void *)bad;
}

static void test_fiber_resumer_many(void **state)
{
	(void)state;
	weft_gen_t *g;
	assert_int_equal(weft_gen_create(&g, NULL, count_to, (void *)(intptr_t)MANY), 0);
	assert_null(wt_run_fiber(consume, g));
	assert_int_equal(weft_gen_destroy(g, wt_ms(30000), NULL), 0);
}

/* Attributes apply to the generator's fiber: local storage inherited. */
static weft_fls_key_t key;

static void *yields_fls(void *arg)
{
	(void)arg;
	weft_gen_yield(weft_fls_get(key));
	return weft_fiber_name() && strcmp(weft_fiber_name(), "gen") == 0 ? (void *)1 : NULL;
}

static void *fls_creator(void *arg)
{
	(void)arg;
	int x;
	weft_fls_set(key, &x);
	weft_attr_t a = {.name = "gen", .fls = WEFT_FLS_COPY};
	weft_gen_t *g;
	if (weft_gen_create(&g, &a, yields_fls, NULL))
		return NULL;
	void *v = NULL, *end = NULL;
	int ok = weft_gen_next(g, wt_ms(30000), &v) == 0 && v == &x &&
		 weft_gen_next(g, wt_ms(30000), &end) == -EPIPE && end == (void *)1;
	return weft_gen_destroy(g, wt_ms(30000), NULL) == 0 && ok ? (void *)1 : NULL;
}

static void test_attr_and_fls(void **state)
{
	(void)state;
	assert_int_equal(weft_fls_key_create(&key, NULL), 0);
	assert_ptr_equal(wt_run_fiber(fls_creator, NULL), (void *)1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_values_then_done),
		cmocka_unit_test(test_lazy_and_lock_step),
		cmocka_unit_test(test_close_never_started),
		cmocka_unit_test(test_close_in_yield),
		cmocka_unit_test(test_close_in_yield_holding),
		cmocka_unit_test(test_close_while_running),
		cmocka_unit_test(test_next_timeout_keeps_value),
		cmocka_unit_test(test_resumer_cancelled_and_busy),
		cmocka_unit_test(test_exit_and_fail_inside),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_close_times_out),
		cmocka_unit_test(test_fiber_resumer_many),
		cmocka_unit_test(test_attr_and_fls),
	};
	return WT_MAIN("generator", tests, wt_start, wt_stop);
}
