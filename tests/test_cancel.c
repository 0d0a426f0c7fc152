/* SPDX-License-Identifier: MIT */
/* Cancellation: bad and finished handles, delivery to every kind of blocked
 * fiber (sleep, join, await, channel receive and send, fd wait) and at the
 * next suspension point, once per request, merged requests, cancelling from
 * threads and fibers, before the first run, and a stress test of
 * exactly-once. Holding cancellation off: tests/test_holdoff.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define MS 1000000LL

/* ---- Handles ------------------------------------------------------------ */

static void *ret_arg(void *arg) { return arg; }

static void *set_flag_return(void *arg)
{
	atomic_store((_Atomic int *)arg, 1);
	return (void *)0x42;
}

static void test_cancel_finished_already(void **state)
{
	(void)state;
	_Atomic int ran = 0;
	weft_fiber_t f;
	assert_int_equal(weft_fiber_spawn(&f, NULL, set_flag_return, &ran), 0);
	assert_true(wt_wait_flag(&ran));
	/* Between its last statement and its end the fiber is still running:
	 * until then a request is accepted (and has nothing left to stop). */
	int r = 0;
	int64_t limit = wt_ms(10000);
	while ((r = weft_fiber_cancel(f)) == 0 && weft_now() < limit)
		weft_sleep_until(weft_deadline_in(100000));
	assert_int_equal(r, -EALREADY);
	assert_int_equal(weft_fiber_cancel(f), -EALREADY);
	void *res = NULL;
	assert_int_equal(weft_fiber_join(f, wt_ms(10000), &res, NULL), 0);
	assert_ptr_equal(res, (void *)0x42);
}

static void test_cancel_bad_handles(void **state)
{
	(void)state;
	assert_int_equal(weft_fiber_cancel(0), -ESRCH);
	assert_int_equal(weft_fiber_cancel(UINT64_MAX), -ESRCH);
	assert_int_equal(weft_fiber_cancel(0xdeadbeef00000007ull), -ESRCH);
	assert_int_equal(weft_fiber_cancel(0xffffffffull), -ESRCH);

	weft_fiber_t f;
	assert_int_equal(weft_fiber_spawn(&f, NULL, ret_arg, NULL), 0);
	assert_int_equal(weft_fiber_join(f, wt_ms(10000), NULL, NULL), 0);
	assert_int_equal(weft_fiber_cancel(f), -ESRCH);

	/* Detached: still cancellable while it lives (test_fiber's
	 * test_cancel_detached; this one may be finishing or gone already);
	 * gone once it has finished. */
	weft_fiber_t g;
	assert_int_equal(weft_fiber_spawn(&g, NULL, ret_arg, NULL), 0);
	assert_int_equal(weft_fiber_detach(g), 0);
	int r = weft_fiber_cancel(g);
	assert_true(r == 0 || r == -EALREADY || r == -ESRCH);
	assert_int_equal(weft_run(), 0);
	assert_int_equal(weft_fiber_cancel(g), -ESRCH);

	/* A new fiber in the same slot is not reached by the old handle. */
	_Atomic int ran = 0;
	weft_fiber_t h;
	assert_int_equal(weft_fiber_spawn(&h, NULL, set_flag_return, &ran), 0);
	assert_true(h != f && h != g);
	assert_int_equal(weft_fiber_cancel(f), -ESRCH);
	assert_int_equal(weft_fiber_cancel(g), -ESRCH);
	void *res = NULL;
	assert_int_equal(weft_fiber_join(h, wt_ms(10000), &res, NULL), 0);
	assert_ptr_equal(res, (void *)0x42);
}

/* ---- Delivery to a blocked fiber ---------------------------------------- */

struct blocked {
	_Atomic int started;
	int r;
	int64_t returned;
	/* cleanup after the cancellation */
	int r_sleep;
	int64_t sleep_deadline, sleep_woke;
};

static void *sleep_far(void *arg)
{
	struct blocked *b = arg;
	atomic_store(&b->started, 1);
	b->r = weft_sleep_until(wt_ms(60000));
	b->returned = weft_now();
	b->sleep_deadline = wt_ms(2);
	b->r_sleep = weft_sleep_until(b->sleep_deadline);
	b->sleep_woke = weft_now();
	return (void *)0x5;
}

static void check_sleep_far(const struct blocked *b)
{
	assert_int_equal(b->r, -ECANCELED);
	assert_int_equal(b->r_sleep, 0);
	assert_true(b->sleep_woke >= b->sleep_deadline);
}

static void test_cancel_sleeping(void **state)
{
	(void)state;
	struct blocked b = {.r = 1, .r_sleep = 1};
	weft_fiber_t f = wt_spawn_named(sleep_far, &b, "target");
	assert_true(wt_wait_parked("target", "sleep"));
	assert_int_equal(weft_fiber_cancel(f), 0);
	void *res = NULL;
	assert_int_equal(weft_fiber_join(f, wt_ms(10000), &res, NULL), 0);
	assert_ptr_equal(res, (void *)0x5);
	check_sleep_far(&b);
}

struct joiner {
	weft_fiber_t target;
	_Atomic int started;
	int r;
};

static void *join_target(void *arg)
{
	struct joiner *j = arg;
	atomic_store(&j->started, 1);
	j->r = weft_fiber_join(j->target, wt_ms(60000), NULL, NULL);
	return NULL;
}

static void *await_gate(void *arg)
{
	return (void *)(intptr_t)weft_future_await(arg, wt_ms(60000), NULL);
}

static void test_cancel_joining(void **state)
{
	(void)state;
	weft_future_t *gate;
	assert_int_equal(weft_future_create(&gate), 0);
	weft_fiber_t target, jf;
	assert_int_equal(weft_fiber_spawn(&target, NULL, await_gate, gate), 0);
	struct joiner j = {.target = target, .r = 1};
	jf = wt_spawn_named(join_target, &j, "target");
	assert_true(wt_wait_parked("target", "join"));
	assert_int_equal(weft_fiber_cancel(jf), 0);
	assert_int_equal(weft_fiber_join(jf, wt_ms(10000), NULL, NULL), 0);
	assert_int_equal(j.r, -ECANCELED);
	/* The joined fiber's handle is still held and nobody is joining it. */
	assert_int_equal(weft_fiber_join(target, 0, NULL, NULL), -ETIMEDOUT);
	assert_int_equal(weft_future_resolve(gate, NULL), 0);
	void *res = (void *)1;
	assert_int_equal(weft_fiber_join(target, wt_ms(10000), &res, NULL), 0);
	assert_ptr_equal(res, NULL); /* its await returned 0 */
	weft_future_release(gate);
}

struct awaiter {
	weft_future_t *fut;
	_Atomic int started;
	int r;
	_Atomic int first_done; /* set once the first await has returned */
	void *value;
	int r_again;
	void *value_again;
};

static void *await_fut(void *arg)
{
	struct awaiter *a = arg;
	atomic_store(&a->started, 1);
	a->r = weft_future_await(a->fut, wt_ms(60000), &a->value);
	atomic_store(&a->first_done, 1);
	/* The future is unaffected: wait for it again. Longer than the test
	 * waits for the join (10 s): a lost wake of the resolve fails the
	 * join instead of being rescued by this deadline. */
	a->r_again = weft_future_await(a->fut, wt_ms(60000), &a->value_again);
	return NULL;
}

static void test_cancel_awaiting(void **state)
{
	(void)state;
	struct awaiter a = {.r = 1, .r_again = 1};
	assert_int_equal(weft_future_create(&a.fut), 0);
	weft_fiber_t f = wt_spawn_named(await_fut, &a, "target");
	assert_true(wt_wait_parked("target", "future"));
	assert_int_equal(weft_fiber_cancel(f), 0);
	/* Resolve only once the cancelled await has returned: resolving
	 * after a fixed sleep raced with a fiber not yet parked on a loaded
	 * machine (the await then found the future settled and returned 0,
	 * keeping the request, as it must). */
	assert_true(wt_wait_flag(&a.first_done));
	assert_int_equal(weft_future_resolve(a.fut, (void *)0x99), 0);
	assert_int_equal(weft_fiber_join(f, wt_ms(10000), NULL, NULL), 0);
	weft_future_release(a.fut);
	assert_int_equal(a.r, -ECANCELED);
	assert_int_equal(a.r_again, 0);
	assert_ptr_equal(a.value_again, (void *)0x99);
}

/* A cancelled receiver leaves the channel: a send with nobody waiting on a
 * rendezvous channel then times out instead of reaching the dead waiter. */
struct receiver {
	weft_chan_t *ch;
	_Atomic int started;
	int r;
	int value;
};

static void *recv_one(void *arg)
{
	struct receiver *rc = arg;
	atomic_store(&rc->started, 1);
	rc->r = weft_chan_recv(rc->ch, &rc->value, wt_ms(60000));
	return NULL;
}

static void test_cancel_receiving(void **state)
{
	(void)state;
	struct receiver rc = {.r = 1, .value = -1};
	assert_int_equal(weft_chan_create(&rc.ch, sizeof(int), 0), 0);
	weft_fiber_t f = wt_spawn_named(recv_one, &rc, "target");
	assert_true(wt_wait_parked("target", "chan recv"));
	assert_int_equal(weft_fiber_cancel(f), 0);
	assert_int_equal(weft_fiber_join(f, wt_ms(10000), NULL, NULL), 0);
	assert_int_equal(rc.r, -ECANCELED);
	assert_int_equal(rc.value, -1);
	int x = 7;
	assert_int_equal(weft_chan_send(rc.ch, &x, 0), -ETIMEDOUT);
	weft_chan_destroy(rc.ch);
}

/* A cancelled sender leaves the channel: its element is not delivered, and
 * its cleanup (a sleep, a send on another channel) blocks and works. */
struct sender {
	weft_chan_t *ch, *out;
	_Atomic int started;
	int r, r_sleep, r_send;
	int64_t sleep_deadline, sleep_woke;
};

static void *send_one(void *arg)
{
	struct sender *sd = arg;
	atomic_store(&sd->started, 1);
	int x = 11;
	sd->r = weft_chan_send(sd->ch, &x, wt_ms(60000));
	sd->sleep_deadline = wt_ms(2);
	sd->r_sleep = weft_sleep_until(sd->sleep_deadline);
	sd->sleep_woke = weft_now();
	int y = 22;
	sd->r_send = weft_chan_send(sd->out, &y, wt_ms(60000)); /* past the join's bound */
	return NULL;
}

static void test_cancel_sending(void **state)
{
	(void)state;
	struct sender sd = {.r = 1, .r_sleep = 1, .r_send = 1};
	assert_int_equal(weft_chan_create(&sd.ch, sizeof(int), 0), 0);
	assert_int_equal(weft_chan_create(&sd.out, sizeof(int), 0), 0);
	weft_fiber_t f = wt_spawn_named(send_one, &sd, "target");
	assert_true(wt_wait_parked("target", "chan send"));
	assert_int_equal(weft_fiber_cancel(f), 0);
	int v = 0;
	assert_int_equal(weft_chan_recv(sd.out, &v, wt_ms(10000)), 0);
	assert_int_equal(v, 22);
	assert_int_equal(weft_fiber_join(f, wt_ms(10000), NULL, NULL), 0);
	assert_int_equal(sd.r, -ECANCELED);
	assert_int_equal(sd.r_sleep, 0);
	assert_true(sd.sleep_woke >= sd.sleep_deadline);
	assert_int_equal(sd.r_send, 0);
	/* Nothing was left for a receiver. */
	assert_int_equal(weft_chan_recv(sd.ch, &v, 0), -ETIMEDOUT);
	weft_chan_destroy(sd.ch);
	weft_chan_destroy(sd.out);
}

struct fd_waiter {
	int fd;
	_Atomic int started, first_done;
	int r, r_sleep, r_again;
};

static void *wait_fd_twice(void *arg)
{
	struct fd_waiter *fw = arg;
	atomic_store(&fw->started, 1);
	fw->r = weft_fd_wait(fw->fd, WEFT_IO_IN, wt_ms(60000));
	atomic_store(&fw->first_done, 1);
	fw->r_sleep = weft_sleep_until(wt_ms(1));
	/* The reactor let go of the cancelled wait: the fd can be waited on
	 * again (the test writes to it once the first wait has returned). */
	fw->r_again = weft_fd_wait(fw->fd, WEFT_IO_IN, wt_ms(60000)); /* past the join's */
	return NULL;
}

/* A fiber blocked in weft_fd_wait (a pipe nobody writes; testutil's, on
 * bare metal one whose ends are the shim's I/O sources). */
static void test_cancel_fd_waiting(void **state)
{
	(void)state;
	int p[2];
	wt_pipe(p);
	struct fd_waiter fw = {.fd = p[0], .r = 1, .r_sleep = 1, .r_again = 1};
	weft_fiber_t f = wt_spawn_named(wait_fd_twice, &fw, "fd waiter");
	assert_true(wt_wait_parked("fd waiter", "fd"));
	assert_int_equal(weft_fiber_cancel(f), 0);
	/* Written before the cancelled wait has returned, the byte could
	 * complete it first (completion wins): wait for it. */
	assert_true(wt_wait_flag(&fw.first_done));
	assert_int_equal(wt_write(p[1], "x", 1), 1);
	assert_int_equal(weft_fiber_join(f, wt_ms(10000), NULL, NULL), 0);
	assert_int_equal(fw.r, -ECANCELED);
	assert_int_equal(fw.r_sleep, 0);
	assert_true(fw.r_again > 0 && (fw.r_again & WEFT_IO_IN));
	wt_close(p[0]);
	wt_close(p[1]);
}

/* ---- Delivery at the next suspension point ------------------------------ */

enum op { OP_SLEEP, OP_YIELD, OP_AWAIT, OP_RECV, OP_SEND, OP_JOIN };

struct busy {
	enum op op;
	_Atomic int spinning, go;
	int spin_timeout;
	int64_t spin_limit;
	int first;
	/* cleanup: a sleep, a yield and a channel round trip */
	int r_sleep, r_yield, r_send, r_recv, value;
	int64_t sleep_deadline, sleep_woke;
	weft_future_t *fut;
	weft_chan_t *ch, *rendezvous;
	weft_fiber_t target;
};

static void *spin_then_block(void *arg)
{
	struct busy *b = arg;
	atomic_store(&b->spinning, 1);
	/* Busy: no blocking call until released. */
	while (!atomic_load(&b->go)) {
		if (weft_now() > b->spin_limit) {
			b->spin_timeout = 1;
			break;
		}
	}
	int x = 3;
	int64_t d = wt_ms(10000);
	switch (b->op) {
	case OP_SLEEP:
		b->first = weft_sleep_until(d);
		break;
	case OP_YIELD:
		b->first = weft_fiber_yield();
		break;
	case OP_AWAIT:
		b->first = weft_future_await(b->fut, d, NULL);
		break;
	case OP_RECV:
		b->first = weft_chan_recv(b->rendezvous, &x, d);
		break;
	case OP_SEND:
		b->first = weft_chan_send(b->rendezvous, &x, d);
		break;
	case OP_JOIN:
		b->first = weft_fiber_join(b->target, d, NULL, NULL);
		break;
	}
	/* The request was delivered once: cleanup can block. */
	b->sleep_deadline = wt_ms(2);
	b->r_sleep = weft_sleep_until(b->sleep_deadline);
	b->sleep_woke = weft_now();
	b->r_yield = weft_fiber_yield();
	int v = 1234;
	b->r_send = weft_chan_send(b->ch, &v, wt_ms(10000));
	b->r_recv = weft_chan_recv(b->ch, &b->value, wt_ms(10000));
	return NULL;
}

static void run_busy(enum op op, int requests)
{
	struct busy b = {.op = op,
			 .first = 1,
			 .r_sleep = 1,
			 .r_yield = 1,
			 .r_send = 1,
			 .r_recv = 1,
			 .value = -1};
	b.spin_limit = wt_ms(10000);
	assert_int_equal(weft_future_create(&b.fut), 0);
	assert_int_equal(weft_chan_create(&b.ch, sizeof(int), 1), 0);
	assert_int_equal(weft_chan_create(&b.rendezvous, sizeof(int), 0), 0);
	weft_fiber_t target = 0;
	if (op == OP_JOIN) {
		assert_int_equal(weft_fiber_spawn(&target, NULL, await_gate, b.fut), 0);
		b.target = target;
	}
	weft_fiber_t f;
	assert_int_equal(weft_fiber_spawn(&f, NULL, spin_then_block, &b), 0);
	assert_true(wt_wait_flag(&b.spinning));
	for (int i = 0; i < requests; i++)
		assert_int_equal(weft_fiber_cancel(f), 0);
	atomic_store(&b.go, 1);
	assert_int_equal(weft_fiber_join(f, wt_ms(30000), NULL, NULL), 0);
	assert_int_equal(b.spin_timeout, 0);
	assert_int_equal(b.first, -ECANCELED);
	assert_int_equal(b.r_sleep, 0);
	assert_true(b.sleep_woke >= b.sleep_deadline);
	assert_int_equal(b.r_yield, 0);
	assert_int_equal(b.r_send, 0);
	assert_int_equal(b.r_recv, 0);
	assert_int_equal(b.value, 1234);
	/* No cancelled waiter was left on the rendezvous channel. */
	int x = 9;
	assert_int_equal(weft_chan_send(b.rendezvous, &x, 0), -ETIMEDOUT);
	assert_int_equal(weft_chan_recv(b.rendezvous, &x, 0), -ETIMEDOUT);
	if (op == OP_JOIN) {
		assert_int_equal(weft_future_resolve(b.fut, NULL), 0);
		assert_int_equal(weft_fiber_join(target, wt_ms(10000), NULL, NULL), 0);
	}
	weft_future_release(b.fut);
	weft_chan_destroy(b.ch);
	weft_chan_destroy(b.rendezvous);
}

static void test_cancel_busy_then_sleep(void **state)
{
	(void)state;
	run_busy(OP_SLEEP, 1);
}

static void test_cancel_busy_then_yield(void **state)
{
	(void)state;
	run_busy(OP_YIELD, 1);
}

static void test_cancel_busy_then_await(void **state)
{
	(void)state;
	run_busy(OP_AWAIT, 1);
}

static void test_cancel_busy_then_recv(void **state)
{
	(void)state;
	run_busy(OP_RECV, 1);
}

static void test_cancel_busy_then_send(void **state)
{
	(void)state;
	run_busy(OP_SEND, 1);
}

static void test_cancel_busy_then_join(void **state)
{
	(void)state;
	run_busy(OP_JOIN, 1);
}

/* Requests made before delivery merge into one. */
static void test_merge_requests_before_delivery(void **state)
{
	(void)state;
	run_busy(OP_SLEEP, 2);
	run_busy(OP_YIELD, 3);
	run_busy(OP_AWAIT, 5);
}

/* ---- Keeping every worker busy ------------------------------------------ */

/* One non-yielding fiber per worker, spinning until released (bounded: 60
 * s, longer than anyone waits for them to start, so a hog that never got a
 * worker is not let in by another one giving up). */
enum { MAXW = 16 };

struct hogs {
	unsigned n;
	_Atomic int spinning, release;
	int timed_out[MAXW];
	weft_fiber_t f[MAXW];
	struct hog {
		struct hogs *all;
		int i;
	} h[MAXW];
};

static void *hog_worker(void *arg)
{
	struct hog *h = arg;
	int64_t limit = wt_ms(60000);
	atomic_fetch_add(&h->all->spinning, 1);
	while (!atomic_load(&h->all->release))
		if (weft_now() > limit) {
			h->all->timed_out[h->i] = 1;
			break;
		}
	return NULL;
}

static int wait_spinning(struct hogs *hs, int n, int64_t limit)
{
	while (atomic_load(&hs->spinning) < n && weft_now() < limit)
		weft_sleep_until(weft_deadline_in(100000));
	return atomic_load(&hs->spinning) >= n;
}

/* Start the hogs, all at once or each after the previous one is running.
 * Returns whether all of them are spinning within limit_ms: not a timing
 * claim, a bound on a wait that a lost wake-up makes endless (idle workers
 * sleep until woken, and nothing here sets a timer). */
static int hogs_start(struct hogs *hs, int one_by_one, int64_t limit_ms)
{
	memset(hs, 0, sizeof *hs);
	hs->n = weft_workers();
	assert_true(hs->n >= 1 && hs->n <= MAXW);
	int64_t limit = wt_ms(limit_ms);
	for (unsigned i = 0; i < hs->n; i++) {
		hs->h[i] = (struct hog){hs, (int)i};
		assert_int_equal(weft_fiber_spawn(&hs->f[i], NULL, hog_worker, &hs->h[i]), 0);
		if (one_by_one)
			wait_spinning(hs, (int)i + 1, limit);
	}
	return wait_spinning(hs, (int)hs->n, limit);
}

static void hogs_stop(struct hogs *hs)
{
	atomic_store(&hs->release, 1);
	for (unsigned i = 0; i < hs->n; i++)
		assert_int_equal(weft_fiber_join(hs->f[i], wt_ms(20000), NULL, NULL), 0);
}

/* Scheduler, found while writing the test below (it belongs in test_sched):
 * with the workers idle, fibers made runnable back to back must all get a
 * worker. One worker wakes, takes the first fiber and the next with it (a
 * batch from the global queue) or leaves it queued, and nobody wakes another
 * worker to run it while the first one is busy. A second way to the same
 * hang: a worker still spinning when the fibers are queued (so their wakes
 * woke nobody) stops spinning empty-handed just before, then finds both in
 * the look it makes on joining the idle list, and runs one with the other
 * on its deque. Twenty rounds: under qemu-aarch64 beside three busy loops,
 * the old code starved a fiber in 18 of 30 runs of 200 rounds. */
struct idle_probe {
	int busy; /* workers running a fiber or with fibers queued */
};

static void count_busy(const char *text, size_t len, void *ctx)
{
	struct idle_probe *p = ctx;
	static const char w[] = "weft: worker ";
	if (len > sizeof w && memcmp(text, w, sizeof w - 1) == 0 &&
	    (memmem(text, len, "running a fiber", 15) || !memmem(text, len, " 0 queued", 9)))
		p->busy++;
}

/* Wait (at most 10 s) until weft_dump_to shows every worker idle with
 * nothing queued. */
static int wait_workers_idle(void)
{
	int64_t end = wt_ms(10000);
	for (;;) {
		struct idle_probe p = {0};
		if (weft_dump_to(count_busy, &p) < 0)
			return 0;
		if (p.busy == 0)
			return 1;
		if (weft_now() >= end)
			return 0;
		weft_sleep_until(wt_ms(1));
	}
}

static void test_busy_fibers_get_every_worker(void **state)
{
	(void)state;
	/* The group's workers (one per CPU), then three and four whatever
	 * the machine has: with three, the third fiber waited in the deque
	 * of the worker that took a batch from the global queue, which ran
	 * its own hog, and nobody else was woken (19 of 20 rounds passed,
	 * then each starved one waited out its 30 s). */
	static const unsigned workers[] = {0, 3, 4};
	for (unsigned k = 0; k < sizeof workers / sizeof workers[0]; k++) {
		if (workers[k])
			wt_restart(workers[k], 0);
		int starved = 0;
		for (int round = 0; round < 20; round++) {
			assert_true(wait_workers_idle()); /* the workers go to sleep */
			struct hogs hs;
			if (!hogs_start(&hs, 0, 30000))
				starved++;
			hogs_stop(&hs);
		}
		if (starved)
			print_message("%u workers: %d of 20 rounds left a fiber without one\n",
				      weft_workers(), starved);
		assert_int_equal(starved, 0);
	}
	wt_restart_default(); /* the group's runtime again */
}

/* Two requests made while the fiber is blocked, before its call has returned,
 * are one request too: the call returns -ECANCELED and the next one is
 * unaffected. To be sure the call has not returned when the second request is
 * made, every worker is kept busy meanwhile: the first request wakes the
 * fiber, which cannot run until the workers are released. */
static void test_merge_requests_while_blocked(void **state)
{
	(void)state;
	int doubled = 0;
	for (int round = 0; round < 3; round++) {
		struct blocked b = {.r = 1, .r_sleep = 1};
		weft_fiber_t f = wt_spawn_named(sleep_far, &b, "target");
		assert_true(wt_wait_parked("target", "sleep"));

		/* One by one: see test_busy_fibers_get_every_worker. */
		struct hogs hs;
		int all_busy = hogs_start(&hs, 1, 30000);
		/* The sleeper is parked and no worker can run it. */
		int r1 = weft_fiber_cancel(f);
		int r2 = weft_fiber_cancel(f);
		hogs_stop(&hs);
		assert_int_equal(weft_fiber_join(f, wt_ms(10000), NULL, NULL), 0);
		assert_true(all_busy);
		for (unsigned i = 0; i < hs.n; i++)
			assert_int_equal(hs.timed_out[i], 0);
		assert_int_equal(r1, 0);
		assert_int_equal(r2, 0);
		assert_int_equal(b.r, -ECANCELED);
		if (b.r_sleep == -ECANCELED) {
			doubled++;
			continue;
		}
		assert_int_equal(b.r_sleep, 0);
		assert_true(b.sleep_woke >= b.sleep_deadline);
	}
	/* The cleanup sleep after the one -ECANCELED must be unaffected: a
	 * second -ECANCELED means the merged request was delivered twice. */
	assert_int_equal(doubled, 0);
}

/* Cleanup after the cancellation blocks for real: a rendezvous with the test. */
struct cleanup {
	weft_chan_t *ch;
	_Atomic int started;
	int r, r_send;
};

static void *sleep_far_then_send(void *arg)
{
	struct cleanup *c = arg;
	atomic_store(&c->started, 1);
	c->r = weft_sleep_until(wt_ms(60000));
	int v = 555;
	c->r_send = weft_chan_send(c->ch, &v, wt_ms(60000)); /* past the join's bound */
	return NULL;
}

static void test_cleanup_can_block(void **state)
{
	(void)state;
	struct cleanup c = {.r = 1, .r_send = 1};
	assert_int_equal(weft_chan_create(&c.ch, sizeof(int), 0), 0);
	weft_fiber_t f = wt_spawn_named(sleep_far_then_send, &c, "target");
	assert_true(wt_wait_parked("target", "sleep"));
	assert_int_equal(weft_fiber_cancel(f), 0);
	int v = 0;
	assert_int_equal(weft_chan_recv(c.ch, &v, wt_ms(10000)), 0);
	assert_int_equal(v, 555);
	assert_int_equal(weft_fiber_join(f, wt_ms(10000), NULL, NULL), 0);
	assert_int_equal(c.r, -ECANCELED);
	assert_int_equal(c.r_send, 0);
	weft_chan_destroy(c.ch);
}

/* ---- Who cancels -------------------------------------------------------- */

struct canceller {
	weft_fiber_t target;
	int r;
};

static void *cancel_target(void *arg)
{
	struct canceller *c = arg;
	c->r = weft_fiber_cancel(c->target);
	return NULL;
}

static void test_cancel_from_thread(void **state)
{
	(void)state;
	struct blocked b = {.r = 1, .r_sleep = 1};
	weft_fiber_t f = wt_spawn_named(sleep_far, &b, "target");
	assert_true(wt_wait_parked("target", "sleep"));
	struct canceller c = {.target = f, .r = 1};
	wt_thread_t t;
	t = wt_thread_start(cancel_target, &c);
	wt_thread_join(t);
	assert_int_equal(c.r, 0);
	assert_int_equal(weft_fiber_join(f, wt_ms(10000), NULL, NULL), 0);
	check_sleep_far(&b);
}

static void test_cancel_from_fiber(void **state)
{
	(void)state;
	struct blocked b = {.r = 1, .r_sleep = 1};
	weft_fiber_t f = wt_spawn_named(sleep_far, &b, "target");
	assert_true(wt_wait_parked("target", "sleep"));
	struct canceller c = {.target = f, .r = 1};
	wt_run_fiber(cancel_target, &c);
	assert_int_equal(c.r, 0);
	assert_int_equal(weft_fiber_join(f, wt_ms(10000), NULL, NULL), 0);
	check_sleep_far(&b);
}

/* A fiber cancelling itself: its next blocking call returns -ECANCELED. */
struct selfcancel {
	int r_cancel, r_sleep, r_again;
};

static void *cancel_self(void *arg)
{
	struct selfcancel *s = arg;
	s->r_cancel = weft_fiber_cancel(weft_fiber_self());
	s->r_sleep = weft_sleep_until(wt_ms(10000));
	s->r_again = weft_sleep_until(wt_ms(1));
	return NULL;
}

static void test_cancel_self(void **state)
{
	(void)state;
	struct selfcancel s = {1, 1, 1};
	weft_fiber_t f;
	assert_int_equal(weft_fiber_spawn(&f, NULL, cancel_self, &s), 0);
	assert_int_equal(weft_fiber_join(f, wt_ms(20000), NULL, NULL), 0);
	assert_int_equal(s.r_cancel, 0);
	assert_int_equal(s.r_sleep, -ECANCELED);
	assert_int_equal(s.r_again, 0);
}

/* ---- Before the first block --------------------------------------------- */

struct fresh {
	_Atomic int *counter;
	int r_first, r_second;
};

static void *work_then_sleep(void *arg)
{
	struct fresh *fr = arg;
	/* Some work without blocking, then the first blocking call. */
	for (int i = 0; i < 100; i++)
		atomic_fetch_add(fr->counter, 1);
	fr->r_first = weft_sleep_until(wt_ms(10000));
	fr->r_second = weft_sleep_until(wt_ms(1));
	return NULL;
}

struct spawn_cancel {
	int n;
	struct fresh *fr;
	weft_fiber_t *f;
	int spawn_err, cancel_err;
};

static void *spawn_and_cancel(void *arg)
{
	struct spawn_cancel *sc = arg;
	for (int i = 0; i < sc->n; i++) {
		if (weft_fiber_spawn(&sc->f[i], NULL, work_then_sleep, &sc->fr[i]) != 0) {
			sc->spawn_err++;
			sc->f[i] = 0;
			continue;
		}
		if (weft_fiber_cancel(sc->f[i]) != 0)
			sc->cancel_err++;
	}
	return NULL;
}

static void check_fresh(struct spawn_cancel *sc, _Atomic int *counter)
{
	assert_int_equal(sc->spawn_err, 0);
	assert_int_equal(sc->cancel_err, 0);
	int bad_first = 0, bad_second = 0;
	for (int i = 0; i < sc->n; i++) {
		assert_int_equal(weft_fiber_join(sc->f[i], wt_ms(20000), NULL, NULL), 0);
		if (sc->fr[i].r_first != -ECANCELED)
			bad_first++;
		if (sc->fr[i].r_second != 0)
			bad_second++;
	}
	assert_int_equal(bad_first, 0);
	assert_int_equal(bad_second, 0);
	assert_int_equal(atomic_load(counter), sc->n * 100);
}

static void test_cancel_before_first_block(void **state)
{
	(void)state;
	enum { N = 100 };
	_Atomic int counter = 0;
	struct fresh fr[N];
	weft_fiber_t f[N];
	for (int i = 0; i < N; i++)
		fr[i] = (struct fresh){&counter, 1, 1};

	/* From the plain thread: the fibers go to the global queue. */
	struct spawn_cancel sc = {N, fr, f, 0, 0};
	spawn_and_cancel(&sc);
	check_fresh(&sc, &counter);

	/* From a fiber: they go to its worker's deque, not yet run. */
	atomic_store(&counter, 0);
	for (int i = 0; i < N; i++)
		fr[i] = (struct fresh){&counter, 1, 1};
	sc = (struct spawn_cancel){N, fr, f, 0, 0};
	wt_run_fiber(spawn_and_cancel, &sc);
	check_fresh(&sc, &counter);
}

/* Cancelled before it ran, a fiber that holds cancellation off first thing
 * is not interrupted in its critical section; the request waits for the
 * release. */
struct fresh_held {
	int r_held, r_after, r_again;
};

static void *hold_first(void *arg)
{
	struct fresh_held *h = arg;
	weft_fiber_cancel_hold();
	h->r_held = weft_sleep_until(wt_ms(1));
	weft_fiber_cancel_release();
	h->r_after = weft_sleep_until(wt_ms(60000));
	h->r_again = weft_fiber_yield();
	return NULL;
}

static void *spawn_cancel_hold_first(void *arg)
{
	struct fresh_held *h = arg;
	weft_fiber_t f;
	/* Queued on this worker's deque and not run before the cancel. */
	if (weft_fiber_spawn(&f, NULL, hold_first, h) != 0 || weft_fiber_cancel(f) != 0)
		return (void *)1;
	return weft_fiber_join(f, wt_ms(20000), NULL, NULL) == 0 ? NULL : (void *)2;
}

static void test_cancel_before_run_then_hold(void **state)
{
	(void)state;
	struct fresh_held h = {1, 1, 1};
	assert_null(wt_run_fiber(spawn_cancel_hold_first, &h));
	assert_int_equal(h.r_held, 0);
	assert_int_equal(h.r_after, -ECANCELED);
	assert_int_equal(h.r_again, 0);
}

/* ---- Exactly once, under stress ----------------------------------------- */

struct looper {
	_Atomic int stop;
	_Atomic int started;
	int mixed;
	int canceled;
	int other;
	int timed_out;
	int64_t limit;
	weft_future_t *fut;
};

/* Block repeatedly until told to stop, counting -ECANCELED. It keeps going
 * until it has seen a cancellation (so a request is never missed because the
 * loop ended first), bounded by the limit. */
static void *loop_counting(void *arg)
{
	struct looper *l = arg;
	atomic_store(&l->started, 1);
	for (unsigned i = 0;; i++) {
		if (atomic_load(&l->stop) && l->canceled > 0)
			break;
		if (weft_now() > l->limit) {
			l->timed_out = 1;
			break;
		}
		int r;
		if (!l->mixed || i % 3 == 0)
			r = weft_sleep_until(wt_ms(1));
		else if (i % 3 == 1)
			r = weft_fiber_yield();
		else
			r = weft_future_await(l->fut, weft_deadline_in(300000), NULL);
		if (r == -ECANCELED)
			l->canceled++;
		else if (r != 0 && r != -ETIMEDOUT)
			l->other++;
		else if (r == -ETIMEDOUT && !(l->mixed && i % 3 == 2))
			l->other++;
	}
	return NULL;
}

static void run_stress(int mixed)
{
	int rounds = wt_sanitized() ? 20 : 200; /* sanitizers: 10x fewer rounds */
	weft_future_t *fut;
	assert_int_equal(weft_future_create(&fut), 0);
	wt_rng_seed();
	int wrong = 0, other = 0, timed_out = 0, cancel_err = 0;
	for (int round = 0; round < rounds; round++) {
		struct looper l = {.mixed = mixed, .fut = fut, .limit = wt_ms(10000)};
		weft_fiber_t f;
		assert_int_equal(weft_fiber_spawn(&f, NULL, loop_counting, &l), 0);
		if (round % 2)
			assert_true(wt_wait_flag(&l.started));
		weft_sleep_until(weft_deadline_in((int64_t)(wt_rng_next() % (2 * MS + 1))));
		if (weft_fiber_cancel(f) != 0)
			cancel_err++;
		/* Let it go round a few more times: a doubled request shows. */
		weft_sleep_until(weft_deadline_in((int64_t)(wt_rng_next() % (3 * MS + 1))));
		atomic_store(&l.stop, 1);
		assert_int_equal(weft_fiber_join(f, wt_ms(20000), NULL, NULL), 0);
		if (l.canceled != 1) {
			print_message("round %d: %d cancellations seen\n", round, l.canceled);
			wrong++;
		}
		other += l.other;
		timed_out += l.timed_out;
	}
	weft_future_release(fut);
	assert_int_equal(cancel_err, 0);
	assert_int_equal(other, 0);
	assert_int_equal(timed_out, 0);
	assert_int_equal(wrong, 0);
}

static void test_stress_cancel_sleep_loop(void **state)
{
	(void)state;
	run_stress(0);
}

static void test_stress_cancel_mixed_loop(void **state)
{
	(void)state;
	run_stress(1);
}

/* A cancellation racing with a completion: either the wait returns
 * -ECANCELED, or it completes and the request is kept for the next blocking
 * call. Either way it is seen exactly once. */
struct racer {
	weft_future_t *fut;
	_Atomic int started;
	int r_await, r_sleep;
	void *value;
};

static void *await_then_sleep(void *arg)
{
	struct racer *rc = arg;
	atomic_store(&rc->started, 1);
	/* Longer than the test waits for the join (20 s): a lost wake fails
	 * the join instead of being rescued by this deadline. */
	rc->r_await = weft_future_await(rc->fut, wt_ms(60000), &rc->value);
	rc->r_sleep = weft_sleep_until(wt_ms(rc->r_await == -ECANCELED ? 1 : 10000));
	return NULL;
}

static void test_stress_cancel_races_completion(void **state)
{
	(void)state;
	int rounds = wt_sanitized() ? 20 : 200; /* sanitizers: 10x fewer rounds */
	wt_rng_seed();
	int wrong = 0, completed = 0, cancelled = 0;
	for (int round = 0; round < rounds; round++) {
		struct racer rc = {.r_await = 1, .r_sleep = 1};
		assert_int_equal(weft_future_create(&rc.fut), 0);
		weft_fiber_t f;
		assert_int_equal(weft_fiber_spawn(&f, NULL, await_then_sleep, &rc), 0);
		assert_true(wt_wait_flag(&rc.started));
		uint64_t x = wt_rng_next();
		if (x & 1)
			weft_sleep_until(weft_deadline_in((int64_t)(x >> 8) % (MS / 2)));
		/* Either order, back to back or a moment apart. */
		int64_t gap = x & 4 ? (int64_t)(x >> 16) % (MS / 2) : 0;
		if (x & 2) {
			assert_int_equal(weft_future_resolve(rc.fut, (void *)0x1), 0);
			if (gap)
				weft_sleep_until(weft_deadline_in(gap));
			assert_int_equal(weft_fiber_cancel(f), 0);
		} else {
			assert_int_equal(weft_fiber_cancel(f), 0);
			if (gap)
				weft_sleep_until(weft_deadline_in(gap));
			assert_int_equal(weft_future_resolve(rc.fut, (void *)0x1), 0);
		}
		assert_int_equal(weft_fiber_join(f, wt_ms(20000), NULL, NULL), 0);
		weft_future_release(rc.fut);
		if (rc.r_await == 0 && rc.value == (void *)0x1 && rc.r_sleep == -ECANCELED)
			completed++;
		else if (rc.r_await == -ECANCELED && rc.r_sleep == 0)
			cancelled++;
		else {
			print_message("round %d: await %d, sleep %d\n", round, rc.r_await,
				      rc.r_sleep);
			wrong++;
		}
	}
	print_message("%d completed first, %d cancelled first\n", completed, cancelled);
	assert_int_equal(wrong, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cancel_finished_already),
		cmocka_unit_test(test_cancel_bad_handles),
		cmocka_unit_test(test_cancel_sleeping),
		cmocka_unit_test(test_cancel_joining),
		cmocka_unit_test(test_cancel_awaiting),
		cmocka_unit_test(test_cancel_receiving),
		cmocka_unit_test(test_cancel_sending),
		cmocka_unit_test(test_cancel_fd_waiting),
		cmocka_unit_test(test_cancel_busy_then_sleep),
		cmocka_unit_test(test_cancel_busy_then_yield),
		cmocka_unit_test(test_cancel_busy_then_await),
		cmocka_unit_test(test_cancel_busy_then_recv),
		cmocka_unit_test(test_cancel_busy_then_send),
		cmocka_unit_test(test_cancel_busy_then_join),
		cmocka_unit_test(test_merge_requests_before_delivery),
		cmocka_unit_test(test_busy_fibers_get_every_worker),
		cmocka_unit_test(test_merge_requests_while_blocked),
		cmocka_unit_test(test_cleanup_can_block),
		cmocka_unit_test(test_cancel_from_thread),
		cmocka_unit_test(test_cancel_from_fiber),
		cmocka_unit_test(test_cancel_self),
		cmocka_unit_test(test_cancel_before_first_block),
		cmocka_unit_test(test_cancel_before_run_then_hold),
		cmocka_unit_test(test_stress_cancel_sleep_loop),
		cmocka_unit_test(test_stress_cancel_mixed_loop),
		cmocka_unit_test(test_stress_cancel_races_completion),
	};
	return WT_MAIN("cancel", tests, wt_start, wt_stop);
}
