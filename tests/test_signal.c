/* SPDX-License-Identifier: MIT */
/* weft_signal_wait and weft_signal_block: a signal sent to the process
 * reaches the fiber waiting for it and is consumed; a wait ends at its
 * deadline, at once for deadlines already past (0, -2, INT64_MIN), and with
 * -ECANCELED when its fiber is cancelled (the signal then stays pending for
 * the next wait); two fibers waiting on different signals each get their
 * own; a fiber's wait parks only that fiber; a plain thread may wait too;
 * bad arguments and signals not blocked are refused. On bare metal every
 * call says -ENOTSUP (bad arguments still -EINVAL). The signals used are
 * blocked before weft_init, as a program does, and always sent to the
 * process (kill), never to a thread. A fiber that must be seen parked waits
 * with no deadline (the virtual clock would leap to one), bounded by
 * wt_join's 30 s. */
#include <signal.h>
#include <stdint.h>
#include <string.h>

#include "testutil.h"

#if WT_LINUX
#include <unistd.h>
#endif

#define SET_USR1 WEFT_SIGNAL(SIGUSR1)
#define SET_USR2 WEFT_SIGNAL(SIGUSR2)

#if WT_LINUX
/* Send sig to the process, as another program or the terminal would. */
static void send_signal(int sig) { assert_int_equal(kill(getpid(), sig), 0); }

/* Whether sig is pending for the process or this thread (the signals are
 * blocked, so one sent and not taken stays pending). */
static int pending(int sig)
{
	sigset_t s;
	assert_int_equal(sigpending(&s), 0);
	return sigismember(&s, sig) == 1;
}
#endif

struct waiter {
	uint64_t set;
	int64_t deadline;
	int r;
	int signo;
	_Atomic int finished; /* set after r and signo */
};

static void *wait_main(void *arg)
{
	struct waiter *w = arg;
	w->signo = -1;
	w->r = weft_signal_wait(w->set, w->deadline, &w->signo);
	atomic_store(&w->finished, 1);
	return NULL;
}

#if WT_LINUX
/* A fiber's wait for set until deadline, run to its end, returns r with
 * signo (-1: it took none). */
static void fiber_wait_is(uint64_t set, int64_t deadline, int r, int signo)
{
	struct waiter w = {.set = set, .deadline = deadline};
	wt_run_fiber(wait_main, &w);
	assert_int_equal(w.r, r);
	assert_int_equal(w.signo, signo);
}

/* The same wait from this plain thread. */
static void thread_wait_is(uint64_t set, int64_t deadline, int r, int signo)
{
	int got = -1;
	assert_int_equal(weft_signal_wait(set, deadline, &got), r);
	assert_int_equal(got, signo);
}

/* A fiber named name waiting for set with no deadline, once it is parked in
 * the wait (w gets what it returns). */
static weft_fiber_t parked_waiter(struct waiter *w, uint64_t set, const char *name)
{
	*w = (struct waiter){.set = set, .deadline = -1};
	weft_fiber_t f = wt_spawn_named(wait_main, w, name);
	assert_true(wt_wait_parked(name, NULL));
	return f;
}
#endif

static void test_bad_arguments(void **state)
{
	(void)state;
	int signo = 0;
	assert_int_equal(weft_signal_wait(0, 0, &signo), -EINVAL);
	assert_int_equal(weft_signal_wait(SET_USR1, 0, NULL), -EINVAL);
	assert_int_equal(weft_signal_block(0), -EINVAL);
#if WT_LINUX
	/* SIGKILL and SIGSTOP cannot be blocked, so never waited for. */
	assert_int_equal(weft_signal_block(WEFT_SIGNAL(SIGKILL)), -EINVAL);
	assert_int_equal(weft_signal_wait(WEFT_SIGNAL(SIGSTOP), 0, &signo), -EINVAL);
	/* 32 is the C library's own (glibc's and musl's thread calls). */
	assert_int_equal(weft_signal_block(WEFT_SIGNAL(32)), -EINVAL);
	/* The runtime's own: stack overflows, stall backtraces. */
	assert_int_equal(weft_signal_block(WEFT_SIGNAL(SIGSEGV)), -EINVAL);
	assert_int_equal(weft_signal_block(WEFT_SIGNAL(SIGBUS)), -EINVAL);
	assert_int_equal(weft_signal_block(WEFT_SIGNAL(SIGURG) | SET_USR1), -EINVAL);
	/* A signal this thread does not block (the suite blocks only USR1
	 * and USR2) would run its action instead: refused, from a fiber as
	 * from this thread. */
	assert_int_equal(weft_signal_wait(WEFT_SIGNAL(SIGWINCH), 0, &signo), -EINVAL);
	assert_int_equal(weft_signal_wait(SET_USR1 | WEFT_SIGNAL(SIGWINCH), 0, &signo), -EINVAL);
	fiber_wait_is(WEFT_SIGNAL(SIGWINCH), 0, -EINVAL, -1);
	assert_int_equal(signo, 0);
#endif
}

static void test_notsup_bare(void **state)
{
	(void)state;
	if (WT_LINUX)
		skip(); /* Linux has signals: the other tests */
	int signo = 0;
	assert_int_equal(weft_signal_block(SET_USR1), -ENOTSUP);
	assert_int_equal(weft_signal_wait(SET_USR1, 0, &signo), -ENOTSUP);
	assert_int_equal(weft_signal_wait(SET_USR1, wt_ms(100), &signo), -ENOTSUP);
	struct waiter w = {.set = SET_USR1, .deadline = -1};
	wt_run_fiber(wait_main, &w);
	assert_int_equal(w.r, -ENOTSUP);
	assert_int_equal(signo, 0);
}

#if WT_LINUX
static void test_delivery_to_fiber(void **state)
{
	(void)state;
	struct waiter w;
	weft_fiber_t f = parked_waiter(&w, SET_USR1 | SET_USR2, "sig-waiter");
	send_signal(SIGUSR2);
	wt_join(f);
	assert_int_equal(w.r, 0);
	assert_int_equal(w.signo, SIGUSR2);
	/* Consumed: nothing is left pending, and a new wait finds nothing. */
	assert_false(pending(SIGUSR2));
	thread_wait_is(SET_USR1 | SET_USR2, 0, -ETIMEDOUT, -1);
}

static void *send_usr1_later(void *arg)
{
	(void)arg;
	weft_sleep_until(wt_ms(20)); /* the waiter is most likely parked by then */
	send_signal(SIGUSR1);
	return NULL;
}

/* A plain thread (this one) waits too. */
static void test_delivery_to_thread(void **state)
{
	(void)state;
	weft_fiber_t f = wt_spawn(send_usr1_later, NULL);
	thread_wait_is(SET_USR1, wt_ms(30000), 0, SIGUSR1);
	wt_join(f);
	assert_false(pending(SIGUSR1));
}

/* A signal already pending is taken without waiting, even by a wait whose
 * deadline has passed; from a plain thread (this one) too. */
static void test_pending_taken_at_once(void **state)
{
	(void)state;
	int64_t past[] = {0, -2, INT64_MIN, 1};
	for (size_t i = 0; i < sizeof past / sizeof past[0]; i++) {
		send_signal(SIGUSR1);
		assert_true(pending(SIGUSR1));
		thread_wait_is(SET_USR1, past[i], 0, SIGUSR1);
		assert_false(pending(SIGUSR1));
	}
	send_signal(SIGUSR2);
	fiber_wait_is(SET_USR2, -2, 0, SIGUSR2);
}

static void test_deadline(void **state)
{
	(void)state;
	int64_t deadline = wt_ms(50);
	fiber_wait_is(SET_USR1, deadline, -ETIMEDOUT, -1);
	assert_true(weft_now() >= deadline);
	/* A plain thread's wait times out too. */
	thread_wait_is(SET_USR1, wt_ms(20), -ETIMEDOUT, -1);
}

/* Deadlines already past act as 0: -ETIMEDOUT at once, never a wait
 * forever (wt_join gives up after 30 s, failing the test). */
static void test_past_deadlines(void **state)
{
	(void)state;
	int64_t past[] = {0, -2, -5, INT64_MIN, 1};
	for (size_t i = 0; i < sizeof past / sizeof past[0]; i++) {
		fiber_wait_is(SET_USR1, past[i], -ETIMEDOUT, -1);
		thread_wait_is(SET_USR1, past[i], -ETIMEDOUT, -1);
	}
}

static void test_cancel(void **state)
{
	(void)state;
	struct waiter w;
	weft_fiber_t f = parked_waiter(&w, SET_USR1, "sig-cancelled");
	assert_int_equal(weft_fiber_cancel(f), 0);
	wt_join(f);
	assert_int_equal(w.r, -ECANCELED);
	assert_int_equal(w.signo, -1);
	/* The cancelled wait took nothing: a signal sent now stays pending
	 * for the next wait. */
	send_signal(SIGUSR1);
	assert_true(pending(SIGUSR1));
	fiber_wait_is(SET_USR1, wt_ms(30000), 0, SIGUSR1);
}

/* Two fibers, each on its own signal: each gets its own, and the one whose
 * signal has not come goes on waiting. */
static void test_two_waiters(void **state)
{
	(void)state;
	struct waiter a, b;
	weft_fiber_t fa = parked_waiter(&a, SET_USR1, "sig-usr1");
	weft_fiber_t fb = parked_waiter(&b, SET_USR2, "sig-usr2");
	send_signal(SIGUSR2);
	wt_join(fb);
	assert_int_equal(b.r, 0);
	assert_int_equal(b.signo, SIGUSR2);
	/* USR1's waiter did not see USR2 and still waits. */
	assert_true(wt_wait_parked("sig-usr1", NULL));
	send_signal(SIGUSR1);
	wt_join(fa);
	assert_int_equal(a.r, 0);
	assert_int_equal(a.signo, SIGUSR1);
	assert_false(pending(SIGUSR1));
	assert_false(pending(SIGUSR2));
}

/* Two fibers on the same signal: one occurrence reaches one of them. */
static void test_one_occurrence_one_waiter(void **state)
{
	(void)state;
	struct waiter w[2];
	weft_fiber_t f0 = parked_waiter(&w[0], SET_USR1, "sig-same-0");
	weft_fiber_t f1 = parked_waiter(&w[1], SET_USR1, "sig-same-1");
	send_signal(SIGUSR1);
	/* One returns with it; the other goes on waiting until cancelled. */
	_Atomic int *first = &w[0].finished;
	for (int i = 0; i < 10000 && !atomic_load(&w[0].finished) && !atomic_load(&w[1].finished);
	     i++)
		weft_sleep_until(wt_ms(1));
	if (atomic_load(&w[1].finished))
		first = &w[1].finished;
	assert_true(wt_wait_flag(first));
	assert_int_equal(weft_fiber_cancel(first == &w[0].finished ? f1 : f0), 0);
	wt_join(f0);
	wt_join(f1);
	int got = (w[0].r == 0) + (w[1].r == 0);
	int cancelled = (w[0].r == -ECANCELED) + (w[1].r == -ECANCELED);
	assert_int_equal(got, 1);
	assert_int_equal(cancelled, 1);
	assert_false(pending(SIGUSR1));
}
#endif

#if WT_LINUX
static _Atomic int others_ran;

static void *count_main(void *arg)
{
	(void)arg;
	atomic_fetch_add(&others_ran, 1);
	return NULL;
}
#endif

/* One worker: while a fiber waits for a signal, others run on it. */
static void test_parks_only_the_fiber(void **state)
{
	(void)state;
	if (!WT_LINUX)
		skip(); /* no signals: test_notsup_bare */
#if WT_LINUX
	wt_restart(1, 0);
	struct waiter w;
	weft_fiber_t f = parked_waiter(&w, SET_USR1, "sig-one-worker");
	atomic_store(&others_ran, 0);
	for (int i = 0; i < 10; i++)
		wt_join(wt_spawn(count_main, NULL));
	assert_int_equal(atomic_load(&others_ran), 10);
	send_signal(SIGUSR1);
	wt_join(f);
	assert_int_equal(w.r, 0);
	assert_int_equal(w.signo, SIGUSR1);
	wt_restart_default();
#endif
}

static int setup(void **state)
{
	(void)state;
	int signo;
	/* Not running: the wait has nothing to park on. */
	if (weft_signal_wait(SET_USR1, 0, &signo) != -ESRCH)
		return -1;
	/* Block before weft_init, so the workers inherit the mask. */
	if (WT_LINUX && weft_signal_block(SET_USR1 | SET_USR2) != 0)
		return -1;
	return wt_start(state);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bad_arguments),
		cmocka_unit_test(test_notsup_bare),
#if WT_LINUX
		cmocka_unit_test(test_delivery_to_fiber),
		cmocka_unit_test(test_delivery_to_thread),
		cmocka_unit_test(test_pending_taken_at_once),
		cmocka_unit_test(test_deadline),
		cmocka_unit_test(test_past_deadlines),
		cmocka_unit_test(test_cancel),
		cmocka_unit_test(test_two_waiters),
		cmocka_unit_test(test_one_occurrence_one_waiter),
#endif
		cmocka_unit_test(test_parks_only_the_fiber),
	};
	return WT_MAIN("signal", tests, setup, wt_stop);
}
