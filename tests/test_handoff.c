/* SPDX-License-Identifier: MIT */
/* The next-run slot (runtime/sched.c): a fiber woken by a hand-off runs next
 * on its waker's worker, ahead of what was queued; two fibers handing off
 * to each other still leave room for the rest of the queue; and a fiber in
 * the slot of a worker that keeps running something else is taken by
 * another worker. Each test runs a runtime of its own, with the number of
 * workers it needs. Nothing here is timed: every wait is bounded by a count
 * or by real time (60 s; 10 s for a wake that nothing else would make), and
 * the assertion is what ran, not how fast. */
#include <string.h>

#include "testutil.h"

#include "sleepers.h"

#define GIVE_UP_NS ((int64_t)60 * 1000000000)

/* ---- A hand-off's fiber runs next --------------------------------------- */

struct order {
	weft_chan_t *c;
	_Atomic int seq;
	int receiver_ran, queued_ran; /* 1 + the order each ran in */
};

static void *receiver(void *arg)
{
	struct order *o = arg;
	int v;
	if (weft_chan_recv(o->c, &v, -1) == 0)
		o->receiver_ran = 1 + atomic_fetch_add(&o->seq, 1);
	return NULL;
}

static void *queued(void *arg)
{
	struct order *o = arg;
	weft_future_t *never;
	assert_int_equal(weft_future_create(&never), 0);
	assert_int_equal(weft_future_await(never, -1, NULL), -ECANCELED);
	o->queued_ran = 1 + atomic_fetch_add(&o->seq, 1);
	assert_int_equal(weft_future_release(never), 0);
	return NULL;
}

static void *sender(void *arg)
{
	struct order *o = arg;
	weft_fiber_t r = wt_spawn_named(receiver, o, "receiver");
	weft_fiber_t q = wt_spawn_named(queued, o, "queued");
	/* Let both park: the receiver on the channel, the other on a future
	 * nobody settles. */
	assert_int_equal(wt_wait_parked("receiver", "chan recv"), 1);
	assert_int_equal(wt_wait_parked("queued", "future"), 1);
	int v = 7;
	assert_int_equal(weft_chan_send(o->c, &v, -1), 0);
	/* Queued after the hand-off, by an ordinary wake (a cancellation):
	 * on the deque alone (LIFO) it would go first. */
	assert_int_equal(weft_fiber_cancel(q), 0);
	/* Both are runnable now; the receiver, woken by the hand-off, first. */
	weft_fiber_join(r, -1, NULL, NULL);
	weft_fiber_join(q, -1, NULL, NULL);
	return NULL;
}

static void test_handoff_runs_next(void **state)
{
	(void)state;
	wt_restart(1, 0);
	static struct order o;
	memset(&o, 0, sizeof o);
	assert_int_equal(weft_chan_create(&o.c, sizeof(int), 0), 0);
	wt_join(wt_spawn(sender, &o));
	assert_int_equal(weft_chan_destroy(o.c), 0);
	assert_int_equal(o.receiver_ran, 1);
	assert_int_equal(o.queued_ran, 2);
	wt_restart_default();
}

/* ---- A pair handing off to each other leaves room ----------------------- */

#define PAIR_MAX_HOPS 1000000

struct pair {
	weft_chan_t *ab, *ba;
	_Atomic int stop;
	_Atomic int gave_up;
	long hops;
};

static void *pair_a(void *arg)
{
	struct pair *p = arg;
	int v = 0;
	for (long i = 0; !atomic_load(&p->stop); i++) {
		if (i == PAIR_MAX_HOPS) {
			atomic_store(&p->gave_up, 1);
			break;
		}
		if (weft_chan_send(p->ab, &v, -1) || weft_chan_recv(p->ba, &v, -1))
			break;
		p->hops = i + 1;
	}
	weft_chan_close(p->ab);
	return NULL;
}

static void *pair_b(void *arg)
{
	struct pair *p = arg;
	int v;
	while (weft_chan_recv(p->ab, &v, -1) == 0)
		if (weft_chan_send(p->ba, &v, -1))
			break;
	return NULL;
}

static void *stopper(void *arg)
{
	atomic_store(&((struct pair *)arg)->stop, 1);
	return NULL;
}

static void *pair_root(void *arg)
{
	struct pair *p = arg;
	weft_fiber_t b = wt_spawn(pair_b, p), a = wt_spawn(pair_a, p);
	/* Let the pair start, then queue the one that stops it: on one worker
	 * it runs only if the hand-offs between a and b make room. */
	while (p->hops == 0 && !atomic_load(&p->gave_up))
		weft_fiber_yield();
	weft_fiber_t s = wt_spawn(stopper, p);
	weft_fiber_join(a, -1, NULL, NULL);
	weft_fiber_join(b, -1, NULL, NULL);
	weft_fiber_join(s, -1, NULL, NULL);
	return NULL;
}

static void test_handoff_pair_leaves_room(void **state)
{
	(void)state;
	wt_restart(1, 0);
	static struct pair p;
	memset(&p, 0, sizeof p);
	assert_int_equal(weft_chan_create(&p.ab, sizeof(int), 0), 0);
	assert_int_equal(weft_chan_create(&p.ba, sizeof(int), 0), 0);
	wt_join(wt_spawn(pair_root, &p));
	print_message("hops before the queued fiber ran: %ld\n", p.hops);
	assert_true(atomic_load(&p.stop));
	assert_false(atomic_load(&p.gave_up));
	assert_int_equal(weft_chan_destroy(p.ab), 0);
	assert_int_equal(weft_chan_destroy(p.ba), 0);
	wt_restart_default();
}

/* ---- A slot left waiting is taken by another worker --------------------- */

struct busy {
	int how; /* HOW_FUTURE, HOW_CHAN, HOW_SPAWN */
	weft_future_t *fut;
	weft_chan_t *c;
	_Atomic int woken, parked, gave_up;
	int waker_worker, woken_worker;
};

enum { HOW_FUTURE, HOW_CHAN, HOW_SPAWN };

static void *woken(void *arg)
{
	struct busy *b = arg;
	if (b->how == HOW_FUTURE) {
		atomic_store(&b->parked, 1);
		weft_future_await(b->fut, -1, NULL);
	} else if (b->how == HOW_CHAN) {
		int v;
		atomic_store(&b->parked, 1);
		weft_chan_recv(b->c, &v, -1);
	}
	b->woken_worker = weft_worker_index();
	atomic_store(&b->woken, 1);
	return NULL;
}

/* Wakes the other fiber by a hand-off (it goes to this worker's next-run
 * slot: a future settled, a channel's rendezvous, or a spawn), then runs
 * without blocking or yielding until that fiber has run, for at most
 * WAKE_BOUND_NS: nothing else wakes the other worker, so a lost wake shows
 * as this bound reached (well past what the idle monitor's two looks take,
 * docs/decisions/handoff-monitor.md, even under TSan or qemu on a loaded
 * machine). First (Linux) it waits, spinning, until the other worker
 * sleeps: a worker still up after this fiber's spawn (woken to look for
 * work as this one took it) would find the slot itself, and the path under
 * test (the monitor's, or the wake's) would go untested. */
#define WAKE_BOUND_NS ((int64_t)10 * 1000000000)

static void *busy_waker(void *arg)
{
	struct busy *b = arg;
	b->waker_worker = weft_worker_index();
	int64_t asleep_by = weft_now() + WAKE_BOUND_NS;
	for (int seen = 0; seen < 2 && weft_now() < asleep_by;)
		seen = wt_others_sleep() ? seen + 1 : 0;
	weft_fiber_t f = 0;
	if (b->how == HOW_FUTURE) {
		assert_int_equal(weft_future_resolve(b->fut, NULL), 0);
	} else if (b->how == HOW_CHAN) {
		int v = 1;
		assert_int_equal(weft_chan_send(b->c, &v, -1), 0);
	} else {
		assert_int_equal(weft_fiber_spawn(&f, NULL, woken, b), 0);
	}
	int64_t give_up = weft_now() + WAKE_BOUND_NS;
	for (long i = 0; !atomic_load(&b->woken); i++)
		if (i % 1024 == 0 && weft_now() > give_up) {
			atomic_store(&b->gave_up, 1);
			break;
		}
	if (f)
		weft_fiber_join(f, -1, NULL, NULL);
	return NULL;
}

static void taken_while_waker_runs(int how, unsigned workers)
{
	wt_restart(workers, 0);
	static struct busy b;
	memset(&b, 0, sizeof b);
	b.how = how;
	assert_int_equal(weft_future_create(&b.fut), 0);
	assert_int_equal(weft_chan_create(&b.c, sizeof(int), 0), 0);
	weft_fiber_t w = 0;
	if (how != HOW_SPAWN) {
		w = wt_spawn_named(woken, &b, "woken");
		assert_true(wt_wait_flag(&b.parked));
		assert_int_equal(wt_wait_parked("woken", how == HOW_CHAN ? "chan recv" : "future"),
				 1);
	}
	weft_fiber_t k = wt_spawn(busy_waker, &b);
	wt_join(k);
	if (w)
		wt_join(w);
	assert_false(atomic_load(&b.gave_up));
	assert_true(atomic_load(&b.woken));
	/* It ran while its waker held the other worker. */
	assert_int_not_equal(b.woken_worker, b.waker_worker);
	assert_int_equal(weft_future_release(b.fut), 0);
	assert_int_equal(weft_chan_destroy(b.c), 0);
	wt_restart_default();
}

static void test_handoff_taken_while_waker_runs(void **state)
{
	(void)state;
	taken_while_waker_runs(HOW_FUTURE, 2);
}

static void test_chan_handoff_taken_while_sender_runs(void **state)
{
	(void)state;
	taken_while_waker_runs(HOW_CHAN, 2);
}

static void test_spawn_taken_while_spawner_runs(void **state)
{
	(void)state;
	taken_while_waker_runs(HOW_SPAWN, 2);
}

/* Three workers: one monitor, one other sleeper. */
static void test_handoff_taken_with_3_workers(void **state)
{
	(void)state;
	taken_while_waker_runs(HOW_CHAN, 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_handoff_runs_next),
		cmocka_unit_test(test_handoff_pair_leaves_room),
		cmocka_unit_test(test_handoff_taken_while_waker_runs),
		cmocka_unit_test(test_chan_handoff_taken_while_sender_runs),
		cmocka_unit_test(test_spawn_taken_while_spawner_runs),
		cmocka_unit_test(test_handoff_taken_with_3_workers),
	};
	return WT_MAIN("handoff", tests, wt_start, wt_stop);
}
