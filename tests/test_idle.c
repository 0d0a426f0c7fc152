/* SPDX-License-Identifier: MIT */
/* Idle workers (runtime/idle.c): a worker with nothing it may take sleeps.
 * A fiber pinned to a busy worker, waiting in that worker's next-run slot
 * or its inbox, is work for that worker alone: it must not keep another
 * worker awake, looking for work it can never take, nor may hand-offs
 * between fibers pinned there wake it. Each test measures the idle
 * worker's CPU time (its thread's clock) while worker 0 computes. */
#include "internal.h" /* weft__rt.workers[i].thread */
#include "shim.h"     /* shim_thread_cputime */
#include "testutil.h"

#include "sleepers.h" /* wt_others_switches */

/* CPU time the busy worker's fiber computes for, and how long on the clock
 * at most (a loaded machine runs it slower; the ratio below still holds). */
#define COMPUTE_NS 500000000LL
#define COMPUTE_WALL_NS 10000000000LL

static int group_start(void **state)
{
	(void)state;
	/* No stall detector: the computing fiber would be reported. */
	weft_config_t c = {.workers = 2, .stall_ms = WEFT_STALL_OFF};
	return weft_init(&c);
}

/* CPU time worker i's thread has used: it counts what the thread ran, not
 * what it waited for a CPU, so another process's load can only lower it. */
static int64_t cpu_of(unsigned i) { return shim_thread_cputime(weft__rt.workers[i].thread); }

struct busy {
	weft_future_t *fut; /* what the pinned fiber waits for */
	/* true: the busy fiber settles it, and the waiter goes to worker
	 * 0's next-run slot; false: a fiber on worker 1 does, the waiter
	 * goes to worker 0's inbox, and worker 1 then looks for work */
	bool handoff;
	_Atomic int computing;
	int64_t busy_ns, idle_ns; /* workers 0 and 1's CPU time meanwhile */
};

static void *pinned_waiter(void *arg)
{
	struct busy *b = arg;
	if (weft_fiber_pin(0) != 0)
		return (void *)1;
	return weft_future_await(b->fut, wt_ms(60000), NULL) == 0 ? NULL : (void *)2;
}

/* Pinned to worker 0: settle the future (or have it settled), then compute
 * without a suspension point while the waiter, pinned here too, waits to
 * run next. */
static void *pinned_compute(void *arg)
{
	struct busy *b = arg;
	if (weft_fiber_pin(0) != 0 || weft_worker_index() != 0)
		return (void *)1;
	int64_t idle0 = cpu_of(1), busy0 = cpu_of(0);
	if (idle0 < 0 || busy0 < 0)
		return (void *)2;
	if (b->handoff && weft_future_resolve(b->fut, NULL) != 0)
		return (void *)3;
	atomic_store(&b->computing, 1);
	int64_t end = weft_now() + COMPUTE_WALL_NS;
	volatile uint64_t x = 0;
	while (cpu_of(0) - busy0 < COMPUTE_NS && weft_now() < end)
		for (int k = 0; k < 10000; k++)
			x += (uint64_t)k;
	b->busy_ns = cpu_of(0) - busy0;
	b->idle_ns = cpu_of(1) - idle0;
	return NULL;
}

static void *resolve_on_1(void *arg)
{
	struct busy *b = arg;
	if (weft_fiber_pin(1) != 0)
		return (void *)1;
	return weft_future_resolve(b->fut, NULL) == 0 ? NULL : (void *)2;
}

static void idle_beside_pinned(bool handoff)
{
	struct busy b = {.handoff = handoff};
	assert_int_equal(weft_future_create(&b.fut), 0);
	weft_fiber_t w = wt_spawn_named(pinned_waiter, &b, "pinned-waiter");
	assert_true(wt_wait_parked("pinned-waiter", "future"));
	weft_fiber_t c = wt_spawn(pinned_compute, &b);
	if (!handoff) {
		assert_true(wt_wait_flag(&b.computing));
		assert_null(wt_join(wt_spawn(resolve_on_1, &b)));
	}
	assert_null(wt_join(c));
	assert_null(wt_join(w));
	assert_int_equal(weft_future_release(b.fut), 0);
	print_message("worker 0 computed %lld ms of CPU time; idle worker 1 used %lld ms\n",
		      (long long)(b.busy_ns / 1000000), (long long)(b.idle_ns / 1000000));
	assert_true(b.busy_ns > 0);
	/* Asleep, it uses next to nothing; looking for work all along it
	 * used about as much as the computing worker. */
	assert_true(b.idle_ns * 4 < b.busy_ns);
}

static void test_idle_sleeps_beside_pinned_next_run(void **state)
{
	(void)state;
	idle_beside_pinned(true);
}

static void test_idle_sleeps_beside_pinned_inbox(void **state)
{
	(void)state;
	idle_beside_pinned(false);
}

/* Two fibers hand off to each other over a channel. Pinned to worker 0,
 * each wake puts the other in worker 0's next-run slot, where no other
 * worker may take it. Pinned nowhere, the idle monitor
 * (docs/decisions/handoff-monitor.md) leaves the pair's worker alone and
 * the other worker sleeps, waking every 100 us to look at the slots; the
 * pair may then move to the other worker (the monitor takes a fiber whose
 * worker did not switch for 100 us, which a loaded machine's preemption
 * can cause), so what is measured is both workers' CPU time together
 * against the wall time. */
struct pair {
	weft_chan_t *ping, *pong;
	bool pinned;
	int64_t busy_ns, idle_ns; /* pinned: workers 0 and 1's CPU time */
	int64_t cpu_ns, wall_ns;  /* both workers' CPU time, and the clock's */
};

static void *pair_echo(void *arg)
{
	struct pair *p = arg;
	if (p->pinned && weft_fiber_pin(0) != 0)
		return (void *)1;
	long v;
	while (weft_chan_recv(p->ping, &v, wt_ms(60000)) == 0 && v >= 0)
		if (weft_chan_send(p->pong, &v, wt_ms(60000)) != 0)
			return (void *)2;
	return v < 0 ? NULL : (void *)3;
}

static void *pair_ask(void *arg)
{
	struct pair *p = arg;
	if (p->pinned && weft_fiber_pin(0) != 0)
		return (void *)1;
	int64_t idle0 = cpu_of(1), busy0 = cpu_of(0), t0 = weft_now();
	int64_t end = t0 + COMPUTE_WALL_NS;
	long v = 0;
	/* Pinned: worker 0's CPU time; free: both workers'. */
	while ((p->pinned ? cpu_of(0) - busy0 : cpu_of(0) + cpu_of(1) - busy0 - idle0) <
		       COMPUTE_NS &&
	       weft_now() < end)
		for (int k = 0; k < 100; k++)
			if (weft_chan_send(p->ping, &v, wt_ms(60000)) != 0 ||
			    weft_chan_recv(p->pong, &v, wt_ms(60000)) != 0)
				return (void *)2;
	p->busy_ns = cpu_of(0) - busy0;
	p->idle_ns = cpu_of(1) - idle0;
	p->cpu_ns = p->busy_ns + p->idle_ns;
	p->wall_ns = weft_now() - t0;
	v = -1;
	return weft_chan_send(p->ping, &v, wt_ms(60000)) == 0 ? NULL : (void *)3;
}

static void run_pair(struct pair *p)
{
	assert_int_equal(weft_chan_create(&p->ping, sizeof(long), 0), 0);
	assert_int_equal(weft_chan_create(&p->pong, sizeof(long), 0), 0);
	weft_fiber_t e = wt_spawn(pair_echo, p);
	weft_fiber_t a = wt_spawn(pair_ask, p);
	assert_null(wt_join(a));
	assert_null(wt_join(e));
	assert_int_equal(weft_chan_destroy(p->ping), 0);
	assert_int_equal(weft_chan_destroy(p->pong), 0);
}

static void test_idle_sleeps_beside_pinned_handoffs(void **state)
{
	(void)state;
	struct pair p = {.pinned = true};
	run_pair(&p);
	print_message("worker 0 handed off for %lld ms of CPU time; idle worker 1 used %lld ms\n",
		      (long long)(p.busy_ns / 1000000), (long long)(p.idle_ns / 1000000));
	assert_true(p.busy_ns > 0);
	/* Woken at each hand-off it used half as much or more. */
	assert_true(p.idle_ns * 4 < p.busy_ns);
}

static void test_idle_sleeps_beside_handoffs(void **state)
{
	(void)state;
	struct pair p = {.pinned = false};
	run_pair(&p);
	print_message("a pair handed off for %lld ms; both workers used %lld ms of CPU time\n",
		      (long long)(p.wall_ns / 1000000), (long long)(p.cpu_ns / 1000000));
	assert_true(p.wall_ns > 0 && p.cpu_ns > 0);
	/* Both workers' CPU time is at most what one worker running all
	 * along uses (the wall time) and the monitor's looks; a second
	 * worker woken at each hand-off spun beside it (f3846da: 2x). */
	assert_true(p.cpu_ns * 2 < p.wall_ns * 3);
}

#if WT_LINUX
static void *spin_a_while(void *arg)
{
	(void)arg;
	int64_t end = weft_now() + 50000000;
	volatile uint64_t x = 0;
	while (weft_now() < end)
		x++;
	return NULL;
}

/* Once nothing runs at all, the monitor's role ends with it: no worker
 * wakes every 100 us for nobody. Measured by the workers' sleeps that
 * ended (voluntary context switches) over 300 ms of a runtime with no
 * fiber, after one that computed (so that a monitor existed): a monitor
 * still looking makes about 3,000; asleep for good, next to none. */
static void test_idle_monitor_ends_when_all_idle(void **state)
{
	(void)state;
	assert_null(wt_join(wt_spawn(spin_a_while, NULL)));
	weft_sleep_until(wt_ms(100)); /* a plain thread: a real sleep */
	long before = wt_others_switches();
	assert_true(before >= 0);
	weft_sleep_until(wt_ms(300));
	long during = wt_others_switches() - before;
	print_message("worker threads woke %ld times in 300 ms with nothing to run\n", during);
	assert_true(during < 300);
}
#else
static void test_idle_monitor_ends_when_all_idle(void **state)
{
	(void)state;
	skip(); /* no /proc: counted on Linux only */
}
#endif

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_idle_sleeps_beside_pinned_next_run),
		cmocka_unit_test(test_idle_sleeps_beside_pinned_inbox),
		cmocka_unit_test(test_idle_sleeps_beside_pinned_handoffs),
		cmocka_unit_test(test_idle_sleeps_beside_handoffs),
		cmocka_unit_test(test_idle_monitor_ends_when_all_idle),
	};
	return WT_MAIN("idle", tests, group_start, wt_stop);
}
