/* SPDX-License-Identifier: MIT */
/* The floating-point control state, one rule on every CPU: it belongs to the
 * worker thread and is not switched (a fiber that changes the rounding mode
 * and yields without putting it back leaves it to the next fiber on that
 * worker), and a fiber spawned with WEFT_ATTR_FPENV keeps its own across
 * yields, sleeps and moves between workers while the fibers around it see
 * the worker's. The rounding mode stands for the whole state: fesetround
 * writes MXCSR and the x87 control word, FPCR, or frm. */
#include <fenv.h>
#include <string.h>

#include "testutil.h"

#define ROUNDS 200

/* ---- The default: the worker's, not switched ------------------------------ */

struct pass {
	_Atomic int step;
	int seen_by_b;
};

static void *sets_and_yields(void *arg)
{
	struct pass *p = arg;
	fesetround(FE_TOWARDZERO);
	atomic_store(&p->step, 1);
	while (atomic_load(&p->step) != 2) /* b runs meanwhile: one worker */
		weft_fiber_yield();
	fesetround(FE_TONEAREST); /* the contract: put it back */
	return NULL;
}

static void *looks(void *arg)
{
	struct pass *p = arg;
	while (atomic_load(&p->step) != 1)
		weft_fiber_yield();
	p->seen_by_b = fegetround();
	atomic_store(&p->step, 2);
	return NULL;
}

static void test_default_belongs_to_the_worker(void **state)
{
	(void)state;
	wt_restart(1, 0); /* one worker keeps the two fibers on it */
	static struct pass p;
	memset(&p, 0, sizeof p);
	weft_fiber_t a = wt_spawn(sets_and_yields, &p), b = wt_spawn(looks, &p);
	wt_join(a);
	wt_join(b);
	/* Not switched: b, on the same worker, ran with a's mode. */
	assert_int_equal(p.seen_by_b, FE_TOWARDZERO);
	wt_restart_default();
}

/* ---- WEFT_ATTR_FPENV: its own -------------------------------------------- */

struct own {
	_Atomic int stop;
	_Atomic int own_wrong, others_wrong;
	_Atomic int own_rounds, other_rounds;
	_Atomic unsigned workers_seen; /* bit per worker the keeper ran on */
};

static void *keeper(void *arg)
{
	struct own *o = arg;
	fesetround(FE_UPWARD);
	/* ROUNDS rounds, and on until the others have run beside it at least
	 * once (bounded): a loaded machine may start them late. */
	int64_t limit = weft_deadline_in(60000000000ll);
	for (int i = 0; i < ROUNDS || (!atomic_load(&o->other_rounds) && weft_now() < limit); i++) {
		if (fegetround() != FE_UPWARD)
			atomic_fetch_add(&o->own_wrong, 1);
		atomic_fetch_or(&o->workers_seen, 1u << weft_worker_index());
		atomic_fetch_add(&o->own_rounds, 1);
		if (i % 10 == 0)
			weft_sleep_until(weft_deadline_in(100000));
		else
			weft_fiber_yield();
	}
	atomic_store(&o->stop, 1);
	return NULL; /* its mode goes with it: the worker's is put back */
}

static void *other(void *arg)
{
	struct own *o = arg;
	while (!atomic_load(&o->stop)) {
		if (fegetround() != FE_TONEAREST)
			atomic_fetch_add(&o->others_wrong, 1);
		atomic_fetch_add(&o->other_rounds, 1);
		weft_fiber_yield();
	}
	return NULL;
}

/* With more workers than fibers, the keeper's yields go to idle workers
 * (sched.c), so it moves between them; how often is the OS's to say, so it
 * is printed, not asserted. */
static void keeps_its_own(unsigned workers, int others)
{
	wt_restart(workers, 0);
	static struct own o;
	memset(&o, 0, sizeof o);
	weft_attr_t a = {.name = "fp-keeper", .flags = WEFT_ATTR_FPENV};
	weft_fiber_t k, d[3];
	assert_int_equal(weft_fiber_spawn(&k, &a, keeper, &o), 0);
	for (int i = 0; i < others; i++)
		d[i] = wt_spawn(other, &o);
	wt_join(k);
	for (int i = 0; i < others; i++)
		wt_join(d[i]);
	print_message("%u workers: the keeper ran on workers %#x; %d and %d rounds\n", workers,
		      atomic_load(&o.workers_seen), atomic_load(&o.own_rounds),
		      atomic_load(&o.other_rounds));
	assert_true(atomic_load(&o.own_rounds) >= ROUNDS);
	assert_true(atomic_load(&o.other_rounds) > 0);
	assert_int_equal(atomic_load(&o.own_wrong), 0);
	assert_int_equal(atomic_load(&o.others_wrong), 0);
	/* After it, this thread and the workers have the default. */
	assert_int_equal(fegetround(), FE_TONEAREST);
	wt_restart_default();
}

static void test_fpenv_kept_on_one_worker(void **state)
{
	(void)state;
	keeps_its_own(1, 3);
}

static void test_fpenv_kept_across_workers(void **state)
{
	(void)state;
	keeps_its_own(4, 1);
}

/* A keeper that does not yield while others run beside it: on Linux the
 * workers run at once; on bare metal, with one hart, the keeper's worker
 * thread is preempted at the end of its time slice and the other worker's
 * thread resumes, which must find its own rounding mode, not the
 * keeper's (the shim's thread switch keeps each thread's). */
struct spin {
	_Atomic int stop, other_rounds, own_wrong, others_wrong;
};

static void *spinning_keeper(void *arg)
{
	struct spin *s = arg;
	fesetround(FE_UPWARD);
	int64_t limit = weft_deadline_in(60000000000ll);
	while (atomic_load(&s->other_rounds) < 50 && weft_now() < limit)
		if (fegetround() != FE_UPWARD)
			atomic_fetch_add(&s->own_wrong, 1);
	atomic_store(&s->stop, 1);
	return NULL;
}

static void *checks_default(void *arg)
{
	struct spin *s = arg;
	while (!atomic_load(&s->stop)) {
		if (fegetround() != FE_TONEAREST)
			atomic_fetch_add(&s->others_wrong, 1);
		atomic_fetch_add(&s->other_rounds, 1);
		weft_fiber_yield();
	}
	return NULL;
}

static void test_fpenv_kept_while_preempted(void **state)
{
	(void)state;
	wt_restart(2, 0);
	static struct spin s;
	memset(&s, 0, sizeof s);
	weft_attr_t a = {.name = "fp-spinner", .flags = WEFT_ATTR_FPENV};
	weft_fiber_t k, d;
	assert_int_equal(weft_fiber_spawn(&k, &a, spinning_keeper, &s), 0);
	d = wt_spawn(checks_default, &s);
	wt_join(k);
	wt_join(d);
	print_message("the others ran %d rounds beside the spinning keeper\n",
		      atomic_load(&s.other_rounds));
	assert_true(atomic_load(&s.other_rounds) >= 50);
	assert_int_equal(atomic_load(&s.own_wrong), 0);
	assert_int_equal(atomic_load(&s.others_wrong), 0);
	assert_int_equal(fegetround(), FE_TONEAREST);
	wt_restart_default();
}

static void *report_mode(void *arg)
{
	(void)arg;
	return (void *)(intptr_t)fegetround();
}

/* It starts from its spawner's state. */
static void *spawns_fp_child(void *arg)
{
	(void)arg;
	fesetround(FE_DOWNWARD);
	weft_attr_t a = {.flags = WEFT_ATTR_FPENV};
	weft_fiber_t c;
	void *r = (void *)-1;
	if (weft_fiber_spawn(&c, &a, report_mode, NULL) == 0)
		weft_fiber_join(c, -1, &r, NULL);
	fesetround(FE_TONEAREST);
	return r;
}

static void test_fpenv_starts_from_spawner(void **state)
{
	(void)state;
	assert_int_equal((intptr_t)wt_run_fiber(spawns_fp_child, NULL), FE_DOWNWARD);
	weft_attr_t bad = {.flags = (WEFT_ATTR_FPENV | WEFT_ATTR_PIN | WEFT_ATTR_HIGH)
				    << 1}; /* no such flag */
	weft_fiber_t f;
	assert_int_equal(weft_fiber_spawn(&f, &bad, report_mode, NULL), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_default_belongs_to_the_worker),
		cmocka_unit_test(test_fpenv_kept_on_one_worker),
		cmocka_unit_test(test_fpenv_kept_across_workers),
		cmocka_unit_test(test_fpenv_kept_while_preempted),
		cmocka_unit_test(test_fpenv_starts_from_spawner),
	};
	return WT_MAIN("fpenv", tests, wt_start, wt_stop);
}
