/* SPDX-License-Identifier: MIT */
/* Interrupt: another thread, or a signal handler (Linux's stand-in for an
 * interrupt handler: it may stop a worker anywhere, even holding a runtime
 * lock), asks a fiber to stop; the fiber sees -ECANCELED at its next yield
 * point: weft_fiber_yield in a loop that only computes, or the wait it is
 * parked in. Once per request; a hold defers it; errors. On bare metal the
 * interrupter is a kernel-shim thread (preempting the spinning worker by
 * the timer); test_irq calls it from a PLIC interrupt handler. */
#include <string.h>

#include "testutil.h"

#include "sleepers.h"

#if WT_LINUX
#include <signal.h>
#include <unistd.h>
#endif

struct spin {
	_Atomic long turns;
	_Atomic int started, hold;
	int r, r_after, cancels_held;
	int r_interrupt, waited; /* a plain thread's: asserted after joining it */
	weft_fiber_t target;     /* what the interrupter interrupts */
	weft_future_t *never;
};

/* Yield until a yield says -ECANCELED; then once more (0: once only). */
static void *spin(void *arg)
{
	struct spin *s = arg;
	atomic_store(&s->started, 1);
	int r;
	while ((r = weft_fiber_yield()) == 0)
		atomic_fetch_add(&s->turns, 1);
	s->r = r;
	s->r_after = weft_fiber_yield();
	return NULL;
}

/* Whether the fiber has yielded n times (within 10 s). Any thread. */
static int turns_reached(struct spin *s, long n)
{
	int64_t end = wt_ms(10000);
	while (atomic_load(&s->turns) < n && weft_now() < end)
		wt_thread_yield();
	return atomic_load(&s->turns) >= n;
}

/* Join f (within 30 s) and return its exit status: -ECANCELED for any
 * fiber an interrupt reached, delivered or not (weft.h). */
static int join_status(weft_fiber_t f)
{
	int status = 1;
	assert_int_equal(weft_fiber_join(f, wt_ms(30000), NULL, &status), 0);
	return status;
}

/* Plain threads record what they saw; the test's thread asserts it
 * (CMocka's asserts work only there). */
static void *interrupter(void *arg)
{
	struct spin *s = arg;
	s->waited = turns_reached(s, 100);
	s->r_interrupt = weft_fiber_interrupt(s->target);
	return NULL;
}

static void test_interrupt_spinning_fiber_from_thread(void **state)
{
	(void)state;
	struct spin s = {0};
	weft_fiber_t f = wt_spawn(spin, &s);
	s.target = f;
	wt_thread_t t = wt_thread_start(interrupter, &s);
	/* Delivered at a yield: its status says cancelled, as for a cancel. */
	assert_int_equal(join_status(f), -ECANCELED);
	wt_thread_join(t);
	assert_true(s.waited);
	assert_int_equal(s.r_interrupt, 0);
	assert_int_equal(s.r, -ECANCELED);
	assert_int_equal(s.r_after, 0);
	/* Joined: the value names nothing any more. */
	assert_int_equal(weft_fiber_interrupt(s.target), -ESRCH);
}

static void *await_never(void *arg)
{
	struct spin *s = arg;
	atomic_store(&s->started, 1);
	s->r = weft_future_await(s->never, -1, NULL);
	s->r_after = weft_sleep_until(weft_deadline_in(1000)); /* once only */
	return NULL;
}

/* The interrupt is the only wake the fiber gets (it waits with no deadline),
 * and it comes once the workers sleep: a worker still up would see the
 * request itself. */
static void *interrupt_parked(void *arg)
{
	struct spin *s = arg;
	s->waited = wt_wait_parked("awaiter", "future");
	wt_let_workers_sleep();
	s->r_interrupt = weft_fiber_interrupt(s->target);
	return NULL;
}

static void test_interrupt_parked_fiber_from_thread(void **state)
{
	(void)state;
	static struct spin s; /* a failure leaves the fiber to run later */
	memset(&s, 0, sizeof s);
	assert_int_equal(weft_future_create(&s.never), 0);
	weft_fiber_t f = wt_spawn_named(await_never, &s, "awaiter");
	s.target = f;
	wt_thread_t t = wt_thread_start(interrupt_parked, &s);
	wt_thread_join(t);
	/* Well past what the wake takes; if it was lost, the resolve lets the
	 * fiber go, so that the suite goes on. */
	int status = 1;
	int joined = weft_fiber_join(f, wt_ms(10000), NULL, &status);
	if (joined != 0) {
		weft_future_resolve(s.never, NULL);
		wt_join(f);
	}
	assert_int_equal(joined, 0);
	assert_int_equal(status, -ECANCELED);
	assert_true(s.waited); /* it was parked when interrupted */
	assert_int_equal(s.r_interrupt, 0);
	assert_int_equal(s.r, -ECANCELED);
	assert_int_equal(s.r_after, 0);
	weft_future_release(s.never);
}

/* Held off: yields go on returning 0; the first after the release stops. */
static void *spin_held(void *arg)
{
	struct spin *s = arg;
	weft_fiber_cancel_hold();
	atomic_store(&s->started, 1);
	while (!atomic_load(&s->hold)) /* set once the interrupt is made */
		if (weft_fiber_yield() == -ECANCELED)
			s->cancels_held++;
	for (int i = 0; i < 100; i++)
		if (weft_fiber_yield() == -ECANCELED)
			s->cancels_held++;
	weft_fiber_cancel_release();
	s->r = weft_fiber_yield();
	s->r_after = weft_fiber_yield();
	return NULL;
}

static void test_interrupt_waits_for_hold(void **state)
{
	(void)state;
	struct spin s = {0};
	weft_fiber_t f = wt_spawn(spin_held, &s);
	s.target = f;
	assert_true(wt_wait_flag(&s.started));
	assert_int_equal(weft_fiber_interrupt(s.target), 0);
	atomic_store(&s.hold, 1);
	assert_int_equal(join_status(f), -ECANCELED);
	assert_int_equal(s.cancels_held, 0);
	assert_int_equal(s.r, -ECANCELED);
	assert_int_equal(s.r_after, 0);
}

/* Interrupted while holding cancellation off, and ends still holding it:
 * the request was never delivered, yet it was made before the end. */
static void *ends_held(void *arg)
{
	struct spin *s = arg;
	weft_fiber_cancel_hold();
	atomic_store(&s->started, 1);
	while (!atomic_load(&s->hold))
		if (weft_fiber_yield() == -ECANCELED)
			s->cancels_held++;
	return NULL;
}

/* A fiber that said otherwise keeps what it said. */
static void *ends_ok(void *arg)
{
	struct spin *s = arg;
	spin(s);
	weft_fiber_set_status(0);
	return NULL;
}

static void test_interrupt_sets_exit_status(void **state)
{
	(void)state;
	struct spin s = {0};
	weft_fiber_t f = wt_spawn(ends_held, &s);
	assert_true(wt_wait_flag(&s.started));
	assert_int_equal(weft_fiber_interrupt(f), 0);
	atomic_store(&s.hold, 1);
	assert_int_equal(join_status(f), -ECANCELED);
	assert_int_equal(s.cancels_held, 0);

	struct spin k = {0};
	f = wt_spawn(ends_ok, &k);
	assert_true(turns_reached(&k, 10));
	assert_int_equal(weft_fiber_interrupt(f), 0);
	assert_int_equal(join_status(f), 0);
	assert_int_equal(k.r, -ECANCELED);

	/* Not interrupted: ok. */
	struct spin n = {0};
	atomic_store(&n.hold, 1);
	assert_int_equal(join_status(wt_spawn(ends_held, &n)), 0);
}

static void *returns_at_once(void *arg) { return arg; }

static void test_interrupt_errors(void **state)
{
	(void)state;
	assert_int_equal(weft_fiber_interrupt(0), -ESRCH);
	assert_int_equal(weft_fiber_interrupt(12345), -ESRCH);
	assert_int_equal(weft_fiber_interrupt(UINT64_MAX), -ESRCH);
	/* Finished and not joined yet: -EALREADY; joined: -ESRCH. */
	weft_fiber_t done = wt_spawn(returns_at_once, NULL);
	int r;
	int64_t end = wt_ms(10000);
	while ((r = weft_fiber_interrupt(done)) == 0 && weft_now() < end)
		wt_thread_yield();
	assert_int_equal(r, -EALREADY);
	wt_join(done);
	assert_int_equal(weft_fiber_interrupt(done), -ESRCH);
	struct spin s = {0};
	weft_fiber_t f = wt_spawn(spin_held, &s);
	/* Two requests before delivery (held off meanwhile) merge into one. */
	s.target = f;
	assert_true(wt_wait_flag(&s.started));
	assert_int_equal(weft_fiber_interrupt(s.target), 0);
	assert_int_equal(weft_fiber_cancel(f), 0);
	atomic_store(&s.hold, 1);
	wt_join(f);
	assert_int_equal(s.cancels_held, 0);
	assert_int_equal(s.r, -ECANCELED);
	assert_int_equal(s.r_after, 0);
}

/* ---- From a signal handler (Linux) -------------------------------------- */

#if WT_LINUX
static _Atomic weft_fiber_t sig_target;
static _Atomic int sig_result = 1;

static void on_usr1(int sig)
{
	(void)sig;
	weft_fiber_t f = atomic_load(&sig_target);
	if (f)
		atomic_store(&sig_result, weft_fiber_interrupt(f));
}

static void signal_interrupt(struct spin *s, weft_fn fn, int parked)
{
	struct sigaction sa = {0}, old;
	sa.sa_handler = on_usr1;
	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(SIGUSR1, &sa, &old), 0);
	atomic_store(&sig_result, 1);
	weft_fiber_t f = wt_spawn_named(fn, s, "target");
	s->target = f;
	atomic_store(&sig_target, f);
	if (parked)
		assert_true(wt_wait_parked("target", "future"));
	else
		assert_true(turns_reached(s, 100));
	/* Process-directed: any thread may take it, a worker in the middle
	 * of a switch included. */
	assert_int_equal(kill(getpid(), SIGUSR1), 0);
	assert_int_equal(join_status(f), -ECANCELED);
	atomic_store(&sig_target, 0);
	sigaction(SIGUSR1, &old, NULL);
	assert_int_equal(atomic_load(&sig_result), 0);
	assert_int_equal(s->r, -ECANCELED);
	assert_int_equal(s->r_after, 0);
}
#endif

static void test_interrupt_from_signal_handler(void **state)
{
	(void)state;
#if WT_LINUX
	struct spin s = {0};
	signal_interrupt(&s, spin, 0);
	struct spin p = {0};
	assert_int_equal(weft_future_create(&p.never), 0);
	signal_interrupt(&p, await_never, 1);
	weft_future_release(p.never);
#else
	print_message("no signals on bare metal (the thread tests interrupt from a "
		      "preempting thread); skipped\n");
	skip();
#endif
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_interrupt_spinning_fiber_from_thread),
		cmocka_unit_test(test_interrupt_parked_fiber_from_thread),
		cmocka_unit_test(test_interrupt_waits_for_hold),
		cmocka_unit_test(test_interrupt_sets_exit_status),
		cmocka_unit_test(test_interrupt_errors),
		cmocka_unit_test(test_interrupt_from_signal_handler),
	};
	return WT_MAIN("interrupt", tests, wt_start, wt_stop);
}
