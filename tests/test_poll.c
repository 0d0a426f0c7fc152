/* SPDX-License-Identifier: MIT */
/* The host loop (WEFT_CFG_HOST_LOOP): nothing runs until the host calls
 * weft_poll; it runs what is ready (and what that makes ready) and returns
 * the count; weft_poll_next tells the host when to come back; a deadline
 * bounds the call even with fibers that keep yielding; a plain thread's
 * wake, a timer and a pipe each end a blocking weft_poll; weft_run drives
 * the loop to the end; the virtual clock moves to the host's deadline;
 * graceful shutdown in this mode; and the calls' errors. */
#include <string.h>

#include "testutil.h"

#define MS 1000000LL

static int start_host(void **state)
{
	(void)state;
	weft_config_t c = {.flags = WEFT_CFG_HOST_LOOP};
	return weft_init(&c) == 0 ? 0 : -1;
}

static int stop(void **state)
{
	(void)state;
	if (weft_run() != 0)
		return -1;
	return weft_shutdown() == 0 ? 0 : -1;
}

/* Join a fiber known to have finished (a host must not block in join:
 * nothing would run the fiber meanwhile). */
static void *join_done(weft_fiber_t f)
{
	void *r = (void *)1;
	assert_int_equal(weft_fiber_join(f, 0, &r, NULL), 0);
	return r;
}

static void *bump(void *arg)
{
	atomic_fetch_add((_Atomic int *)arg, 1);
	return NULL;
}

static void test_poll_errors(void **state)
{
	(void)state;
	assert_int_equal(weft_run(), 0);
	assert_int_equal(weft_shutdown(), 0);
	assert_int_equal(weft_poll(0), -ESRCH);
	assert_int_equal(weft_poll_next(), -1);
	weft_config_t many = {.workers = 2, .flags = WEFT_CFG_HOST_LOOP};
	assert_int_equal(weft_init(&many), -EINVAL);

	/* With worker threads there is nothing for the host to drive. */
	assert_int_equal(weft_init(NULL), 0);
	assert_int_equal(weft_poll(0), -ENOTSUP);
	assert_int_equal(weft_run(), 0);
	assert_int_equal(weft_shutdown(), 0);

	assert_int_equal(start_host(NULL), 0);
	assert_int_equal(weft_workers(), 1);
}

static void *poll_from_fiber(void *arg)
{
	(void)arg;
	return (void *)(intptr_t)weft_poll(0);
}

static void test_poll_from_fiber(void **state)
{
	(void)state;
	weft_fiber_t f;
	assert_int_equal(weft_fiber_spawn(&f, NULL, poll_from_fiber, NULL), 0);
	assert_int_equal(weft_poll(0), 1);
	assert_int_equal((intptr_t)join_done(f), -EPERM);
}

/* weft_run and weft_poll from another thread while the host's thread drives
 * the loop: -EBUSY. The fiber it runs keeps the host inside weft_run (it
 * computes, never parks) until the other thread has tried both. */
struct busy_loop {
	_Atomic int driving, tried, gave_up;
	int r_run, r_poll;
};

static void *hold_the_loop(void *arg)
{
	struct busy_loop *b = arg;
	atomic_store(&b->driving, 1);
	int64_t limit = wt_ms(10000);
	while (!atomic_load(&b->tried)) {
		if (weft_now() > limit) {
			atomic_store(&b->gave_up, 1);
			break;
		}
		wt_thread_yield();
	}
	return NULL;
}

/* A plain thread; it waits by spinning, not with a weft call (a weft
 * sleep's timer would wait for the loop the fiber holds). */
static void *run_elsewhere(void *arg)
{
	struct busy_loop *b = arg;
	int64_t limit = wt_ms(10000);
	while (!atomic_load(&b->driving) && weft_now() < limit)
		wt_thread_yield();
	b->r_run = weft_run();
	b->r_poll = weft_poll(0);
	atomic_store(&b->tried, 1);
	return NULL;
}

static void test_run_busy_while_driven(void **state)
{
	(void)state;
	static struct busy_loop b;
	memset(&b, 0, sizeof b);
	b.r_run = b.r_poll = 1;
	weft_fiber_t f;
	assert_int_equal(weft_fiber_spawn(&f, NULL, hold_the_loop, &b), 0);
	wt_thread_t t = wt_thread_start(run_elsewhere, &b);
	assert_int_equal(weft_run(), 0);
	wt_thread_join(t);
	join_done(f);
	assert_int_equal(atomic_load(&b.driving), 1);
	assert_int_equal(atomic_load(&b.gave_up), 0);
	assert_int_equal(b.r_run, -EBUSY);
	assert_int_equal(b.r_poll, -EBUSY);
}

/* Nothing runs until the host polls; then everything ready runs, once. */
static void test_poll_runs_what_is_ready(void **state)
{
	(void)state;
	_Atomic int n = 0;
	weft_fiber_t f[3];
	for (int i = 0; i < 3; i++)
		assert_int_equal(weft_fiber_spawn(&f[i], NULL, bump, &n), 0);
	assert_int_equal(atomic_load(&n), 0);
	assert_int_equal(weft_poll_next(), 0);
	assert_int_equal(weft_poll(0), 3);
	assert_int_equal(atomic_load(&n), 3);
	assert_int_equal(weft_poll_next(), -1);
	assert_int_equal(weft_poll(0), 0);
	for (int i = 0; i < 3; i++)
		join_done(f[i]);
	weft_stats_t s;
	assert_int_equal(weft_stats(&s), 0);
	assert_int_equal(s.fibers, 0);
}

/* Fibers that wake each other run to the end within one call. */
struct pingpong {
	weft_chan_t *a, *b;
	int rounds, errors;
};

static void *ping(void *arg)
{
	struct pingpong *p = arg;
	for (int i = 0; i < p->rounds; i++) {
		int x = i, y = -1;
		if (weft_chan_send(p->a, &x, -1) != 0 || weft_chan_recv(p->b, &y, -1) != 0 ||
		    y != i)
			p->errors++;
	}
	return NULL;
}

static void *pong(void *arg)
{
	struct pingpong *p = arg;
	for (int i = 0; i < p->rounds; i++) {
		int x = -1;
		if (weft_chan_recv(p->a, &x, -1) != 0 || weft_chan_send(p->b, &x, -1) != 0)
			p->errors++;
	}
	return NULL;
}

static void test_poll_chain_runs_in_one_call(void **state)
{
	(void)state;
	struct pingpong p = {.rounds = 1000};
	assert_int_equal(weft_chan_create(&p.a, sizeof(int), 0), 0);
	assert_int_equal(weft_chan_create(&p.b, sizeof(int), 0), 0);
	weft_fiber_t f1, f2;
	assert_int_equal(weft_fiber_spawn(&f1, NULL, ping, &p), 0);
	assert_int_equal(weft_fiber_spawn(&f2, NULL, pong, &p), 0);
	int n = weft_poll(0);
	assert_true(n >= 2 * p.rounds); /* each round parks both */
	assert_int_equal(p.errors, 0);
	join_done(f1);
	join_done(f2);
	weft_chan_destroy(p.a);
	weft_chan_destroy(p.b);
}

/* A timer: weft_poll_next says when; weft_poll(0) before then runs nothing;
 * weft_poll(-1) blocks until it and runs the fiber. */
struct sleeper {
	int64_t deadline, woke;
	int r;
};

static void *sleep_one(void *arg)
{
	struct sleeper *s = arg;
	s->r = weft_sleep_until(s->deadline);
	s->woke = weft_now();
	return NULL;
}

static void test_poll_timer(void **state)
{
	(void)state;
	struct sleeper s = {.deadline = wt_ms(5), .r = 1};
	weft_fiber_t f;
	assert_int_equal(weft_fiber_spawn(&f, NULL, sleep_one, &s), 0);
	/* Runs until it parks. On a slow machine the deadline may have passed
	 * already (it then does not park) or by the time it switched out (the
	 * same call fires its timer and runs it again). The fiber runs on this
	 * thread: woke is ours to read between calls. */
	int n = weft_poll(0);
	assert_true(n == 1 || n == 2);
	if (s.woke == 0) {
		/* Parked: its timer is the next thing to happen. The host's
		 * own deadline (5 s) is not what ends the wait: the fiber ran
		 * before it. */
		assert_int_equal(n, 1);
		assert_true(weft_poll_next() == s.deadline);
		int64_t bound = wt_ms(5000);
		while (n == 1 && weft_now() < bound)
			n += weft_poll(bound);
		assert_int_equal(n, 2);
		assert_true(s.woke < bound);
	}
	assert_int_equal(s.r, 0);
	assert_true(s.woke >= s.deadline);
	join_done(f);
}

/* A timer that is due is ready work: the first weft_poll after its
 * deadline runs its fiber, even when the calls before left the worker
 * looking at its timers only every 8th look (quick looks: sched.c's
 * timers). The yields make the looks quick; the host then waits past the
 * deadline itself, outside weft_poll. */
static void *yield_n(void *arg)
{
	for (long i = 0; i < (long)arg; i++)
		weft_fiber_yield();
	return NULL;
}

static void test_poll_runs_a_due_timer_at_once(void **state)
{
	(void)state;
	for (int round = 0; round < 8; round++) {
		struct sleeper s = {.deadline = wt_ms(20), .r = 1};
		weft_fiber_t f, y;
		assert_int_equal(weft_fiber_spawn(&f, NULL, sleep_one, &s), 0);
		assert_int_equal(weft_fiber_spawn(&y, NULL, yield_n, (void *)(long)(1000 + round)),
				 0);
		assert_true(weft_poll(0) >= 2); /* the yielder ran to its end */
		join_done(y);
		if (s.woke != 0) { /* a slow machine: the deadline came first */
			join_done(f);
			continue;
		}
		while (weft_now() < s.deadline)
			; /* 20 ms at most */
		assert_int_equal(weft_poll(0), 1);
		assert_int_equal(s.r, 0);
		assert_true(s.woke >= s.deadline);
		join_done(f);
	}
}

/* With nothing to run, weft_poll(deadline) returns 0 once it has passed. */
static void test_poll_deadline_when_idle(void **state)
{
	(void)state;
	int64_t d = wt_ms(2);
	assert_int_equal(weft_poll(d), 0);
	assert_true(weft_now() >= d);
}

/* Fibers that keep yielding are always ready: the deadline still brings
 * the host back, and they carry on at the next call. */
struct yielder {
	_Atomic int stop;
	long yields;
};

static void *yield_until_stopped(void *arg)
{
	struct yielder *y = arg;
	while (!atomic_load(&y->stop)) {
		weft_fiber_yield();
		y->yields++;
	}
	return NULL;
}

static void test_poll_deadline_with_busy_fibers(void **state)
{
	(void)state;
	struct yielder y[2] = {0};
	weft_fiber_t f[2];
	for (int i = 0; i < 2; i++)
		assert_int_equal(weft_fiber_spawn(&f[i], NULL, yield_until_stopped, &y[i]), 0);
	/* Each call returns at its deadline (having run them, unless the
	 * deadline passed before it could), and they are still ready. */
	int64_t limit = wt_ms(10000);
	int rounds = 0;
	while (rounds < 3 || y[0].yields == 0 || y[1].yields == 0) {
		int64_t d = wt_ms(2);
		assert_true(weft_poll(d) >= 0);
		assert_true(weft_now() >= d);
		assert_int_equal(weft_poll_next(), 0);
		assert_true(weft_now() < limit);
		rounds++;
	}
	for (int i = 0; i < 2; i++)
		atomic_store(&y[i].stop, 1);
	assert_true(weft_poll(0) > 0);
	for (int i = 0; i < 2; i++)
		join_done(f[i]);
}

/* A plain thread resolves what a fiber awaits: the host, blocked in
 * weft_poll(-1), wakes and runs it. */
struct awaiter {
	weft_future_t *fut;
	int r;
	void *value;
	int64_t woke;
};

static void *await_it(void *arg)
{
	struct awaiter *a = arg;
	a->r = weft_future_await(a->fut, -1, &a->value);
	a->woke = weft_now();
	return NULL;
}

static void *resolve_later(void *arg)
{
	weft_sleep_until(wt_ms(2)); /* a plain thread: a real sleep */
	weft_future_resolve(arg, (void *)0x77);
	return NULL;
}

/* The host waits with a deadline of its own (5 s): had the wake not reached
 * it, the poll would still run the fiber, at that deadline, so the fiber
 * must have run before it. */
static void test_poll_woken_by_thread(void **state)
{
	(void)state;
	static struct awaiter a; /* a failure leaves the fiber to run later */
	memset(&a, 0, sizeof a);
	a.r = 1;
	assert_int_equal(weft_future_create(&a.fut), 0);
	weft_fiber_t f;
	assert_int_equal(weft_fiber_spawn(&f, NULL, await_it, &a), 0);
	assert_int_equal(weft_poll(0), 1); /* parks in the await */
	int64_t bound = wt_ms(5000);
	wt_thread_t t = wt_thread_start(resolve_later, a.fut);
	int n = 0;
	while (n == 0 && weft_now() < bound)
		n = weft_poll(bound);
	wt_thread_join(t);
	assert_int_equal(n, 1);
	assert_true(a.woke < bound);
	assert_int_equal(a.r, 0);
	assert_ptr_equal(a.value, (void *)0x77);
	join_done(f);
	weft_future_release(a.fut);
}

/* weft_run drives the loop on the calling thread until every fiber is done. */
static void *sleepy_chain(void *arg)
{
	int depth = (int)(intptr_t)arg;
	if (weft_sleep_until(wt_ms(1)) != 0)
		return (void *)1;
	if (depth == 0)
		return NULL;
	weft_fiber_t f;
	void *r = (void *)1;
	if (weft_fiber_spawn(&f, NULL, sleepy_chain, (void *)(intptr_t)(depth - 1)) != 0 ||
	    weft_fiber_join(f, -1, &r, NULL) != 0)
		return (void *)1;
	return r;
}

static void test_poll_run_drives(void **state)
{
	(void)state;
	weft_fiber_t f;
	assert_int_equal(weft_fiber_spawn(&f, NULL, sleepy_chain, (void *)(intptr_t)5), 0);
	assert_int_equal(weft_run(), 0);
	assert_null(join_done(f));
}

struct piper {
	int fd, r;
	char got;
};

static void *wait_pipe(void *arg)
{
	struct piper *p = arg;
	p->r = weft_fd_wait(p->fd, WEFT_IO_IN, -1);
	if (p->r > 0 && wt_read(p->fd, &p->got, 1) != 1)
		p->got = 0;
	return NULL;
}

/* A fiber waits on a pipe (testutil's: on bare metal, one whose ends are
 * the shim's I/O sources); the host writes it; weft_poll sees it. */
static void test_poll_pipe(void **state)
{
	(void)state;
	int p[2];
	wt_pipe(p);
	struct piper pp = {.fd = p[0], .r = 0};
	weft_fiber_t f;
	assert_int_equal(weft_fiber_spawn(&f, NULL, wait_pipe, &pp), 0);
	assert_int_equal(weft_poll(0), 1);
	assert_int_equal(weft_poll(0), 0); /* nothing to read yet */
	assert_int_equal(wt_write(p[1], "x", 1), 1);
	int n = 0;
	for (int i = 0; i < 100 && n == 0; i++)
		n = weft_poll(wt_ms(10000));
	assert_int_equal(n, 1);
	assert_true(pp.r > 0 && (pp.r & WEFT_IO_IN));
	assert_int_equal(pp.got, 'x');
	join_done(f);
	wt_close(p[0]);
	wt_close(p[1]);
}

/* Host loop and virtual clock: an idle weft_poll(deadline) moves the clock
 * to the deadline (or to the first timer before it) at once. */
static void test_poll_virtual_clock(void **state)
{
	(void)state;
	assert_int_equal(weft_run(), 0);
	assert_int_equal(weft_shutdown(), 0);
	weft_config_t c = {.flags = WEFT_CFG_HOST_LOOP | WEFT_CFG_VIRTUAL_CLOCK};
	assert_int_equal(weft_init(&c), 0);
	int64_t t0 = weft_now();
	struct sleeper s = {.deadline = t0 + 3600 * 1000 * MS, .r = 1};
	weft_fiber_t f;
	assert_int_equal(weft_fiber_spawn(&f, NULL, sleep_one, &s), 0);
	assert_int_equal(weft_poll(0), 1);
	assert_true(weft_poll_next() == s.deadline);
	/* The host's own deadline comes first: the clock stops there. */
	assert_int_equal(weft_poll(t0 + 10 * MS), 0);
	assert_true(weft_now() == t0 + 10 * MS);
	/* Then to the timer, and the fiber runs. */
	assert_int_equal(weft_poll(-1), 1);
	assert_int_equal(s.r, 0);
	assert_true(s.woke == s.deadline);
	assert_true(weft_now() == s.deadline);
	join_done(f);
}

/* Graceful shutdown drives the loop too. */
static void *sleep_far(void *arg)
{
	int *r = arg;
	*r = weft_sleep_until(wt_ms(60000));
	return NULL;
}

static void test_poll_shutdown_grace(void **state)
{
	(void)state;
	int r[3] = {1, 1, 1};
	for (int i = 0; i < 3; i++)
		assert_int_equal(weft_fiber_spawn(NULL, NULL, sleep_far, &r[i]), 0);
	assert_int_equal(weft_poll(0), 3);
	assert_int_equal(weft_shutdown_grace(wt_ms(10000), NULL, NULL), 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(r[i], -ECANCELED);
	assert_int_equal(start_host(NULL), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_poll_errors),
		cmocka_unit_test(test_poll_from_fiber),
		cmocka_unit_test(test_run_busy_while_driven),
		cmocka_unit_test(test_poll_runs_what_is_ready),
		cmocka_unit_test(test_poll_chain_runs_in_one_call),
		cmocka_unit_test(test_poll_timer),
		cmocka_unit_test(test_poll_runs_a_due_timer_at_once),
		cmocka_unit_test(test_poll_deadline_when_idle),
		cmocka_unit_test(test_poll_deadline_with_busy_fibers),
		cmocka_unit_test(test_poll_woken_by_thread),
		cmocka_unit_test(test_poll_run_drives),
		cmocka_unit_test(test_poll_pipe),
		cmocka_unit_test(test_poll_virtual_clock),
		cmocka_unit_test(test_poll_shutdown_grace),
	};
	return WT_MAIN("poll", tests, start_host, stop);
}
