/* SPDX-License-Identifier: MIT */
/* Holding cancellation off, and graceful shutdown.
 *
 * Hold-off: a request made while a fiber holds cancellation off interrupts
 * nothing (a held wait completes, a held timeout times out, yield and
 * deadline-0 calls do not deliver) and is delivered at the first suspension
 * point after the outermost release, once; holds nest; release without a
 * hold fails; plain threads may hold (nobody can cancel them).
 *
 * Shutdown: weft_shutdown_grace cancels every fiber (joinable, detached, not
 * yet run, blocked in each kind of wait), whose cleanup may block and works;
 * it reports the ones that hold cancellation off past the deadline and
 * leaves the runtime running; fibers spawned during the grace period start
 * cancelled; its errors. The straggler tests use the virtual clock, so the
 * grace deadline is exact and costs no wall time. */
#include <string.h>

#include "testutil.h"

#if WT_LINUX
#include <fcntl.h>
#include <unistd.h>
#endif

#define MS 1000000LL
#define SEC (1000 * MS)
#define HOUR (3600 * SEC)

/* ---- Hold-off ----------------------------------------------------------- */

struct held {
	weft_future_t *fut, *never;
	_Atomic int parked_soon, returned;
	int depth_hold, depth_release;
	int r_held, r_after, r_again;
	void *value;
};

/* Hold, await a future (the test cancels meanwhile, then resolves it),
 * release, then block again. */
static void *held_await(void *arg)
{
	struct held *h = arg;
	h->depth_hold = weft_fiber_cancel_hold();
	atomic_store(&h->parked_soon, 1);
	h->r_held = weft_future_await(h->fut, wt_ms(60000), &h->value);
	atomic_store(&h->returned, 1);
	h->depth_release = weft_fiber_cancel_release();
	/* The request is delivered here, at once, without waiting. */
	h->r_after = weft_future_await(h->never, wt_ms(60000), NULL);
	/* Once: cleanup blocks as usual. */
	h->r_again = weft_sleep_until(wt_ms(1));
	return NULL;
}

static void test_hold_wait_completes_then_delivered(void **state)
{
	(void)state;
	struct held h = {.r_held = 1, .r_after = 1, .r_again = 1};
	assert_int_equal(weft_future_create(&h.fut), 0);
	assert_int_equal(weft_future_create(&h.never), 0);
	weft_fiber_t f;
	assert_int_equal(weft_fiber_spawn(&f, NULL, held_await, &h), 0);
	assert_true(wt_wait_flag(&h.parked_soon));
	weft_sleep_until(wt_ms(2)); /* most likely parked by now */
	assert_int_equal(weft_fiber_cancel(f), 0);
	assert_int_equal(weft_fiber_cancel(f), 0); /* merges */
	weft_sleep_until(wt_ms(2));
	/* Held off: the request woke nobody (if it had, returned would be
	 * set, and r_held below would say -ECANCELED). */
	assert_int_equal(atomic_load(&h.returned), 0);
	assert_int_equal(weft_future_resolve(h.fut, (void *)0x31), 0);
	assert_int_equal(weft_fiber_join(f, wt_ms(20000), NULL, NULL), 0);
	assert_int_equal(h.depth_hold, 1);
	assert_int_equal(h.depth_release, 0);
	assert_int_equal(h.r_held, 0);
	assert_ptr_equal(h.value, (void *)0x31);
	assert_int_equal(h.r_after, -ECANCELED);
	assert_int_equal(h.r_again, 0);
	weft_future_release(h.fut);
	weft_future_release(h.never);
}

/* A held sleep sleeps its full time although cancelled while parked, with
 * the virtual clock so that "full" is exact. One fiber spawns the sleeper
 * and its canceller, so both start at the same instant (a plain thread does
 * not hold the clock: the sleeper's hour could pass before it cancelled). */
struct held_sleep {
	weft_fiber_t sleeper;
	int64_t t0, woke, cancelled_at;
	int r, r_after, r_cancel;
	weft_chan_t *ch;
	int r_send, r_recv, v;
};

static void *held_sleep(void *arg)
{
	struct held_sleep *s = arg;
	weft_fiber_cancel_hold();
	s->t0 = weft_now();
	s->r = weft_sleep_until(s->t0 + HOUR);
	s->woke = weft_now();
	weft_fiber_cancel_release();
	s->r_after = weft_sleep_until(s->woke + HOUR);
	/* Cleanup that blocks: a rendezvous with the spawner. */
	int v = 99;
	s->r_send = weft_chan_send(s->ch, &v, -1);
	return NULL;
}

static void *cancel_half_way(void *arg)
{
	struct held_sleep *s = arg;
	weft_sleep_until(weft_now() + HOUR / 2);
	s->cancelled_at = weft_now();
	s->r_cancel = weft_fiber_cancel(s->sleeper);
	return NULL;
}

static void *spawn_sleeper_and_canceller(void *arg)
{
	struct held_sleep *s = arg;
	weft_fiber_t c;
	if (weft_fiber_spawn(&s->sleeper, NULL, held_sleep, s) != 0 ||
	    weft_fiber_spawn(&c, NULL, cancel_half_way, s) != 0)
		return (void *)1;
	s->r_recv = weft_chan_recv(s->ch, &s->v, -1);
	if (weft_fiber_join(c, -1, NULL, NULL) != 0 ||
	    weft_fiber_join(s->sleeper, -1, NULL, NULL) != 0)
		return (void *)2;
	return NULL;
}

static void test_hold_sleep_runs_full_time(void **state)
{
	(void)state;
	assert_int_equal(weft_run(), 0);
	assert_int_equal(weft_shutdown(), 0);
	weft_config_t c = {.flags = WEFT_CFG_VIRTUAL_CLOCK};
	assert_int_equal(weft_init(&c), 0);
	struct held_sleep s = {.r = 1, .r_after = 1, .r_cancel = 1, .r_send = 1, .r_recv = 1};
	assert_int_equal(weft_chan_create(&s.ch, sizeof(int), 0), 0);
	weft_fiber_t f;
	assert_int_equal(weft_fiber_spawn(&f, NULL, spawn_sleeper_and_canceller, &s), 0);
	void *res = (void *)1;
	assert_int_equal(weft_fiber_join(f, -1, &res, NULL), 0);
	assert_null(res);
	assert_int_equal(s.r_cancel, 0);
	assert_true(s.cancelled_at == s.t0 + HOUR / 2);
	assert_int_equal(s.r, 0);
	assert_true(s.woke == s.t0 + HOUR);
	assert_int_equal(s.r_after, -ECANCELED);
	assert_int_equal(s.r_send, 0);
	assert_int_equal(s.r_recv, 0);
	assert_int_equal(s.v, 99);
	/* The second sleep was cut short: no second hour went by. */
	assert_true(weft_now() == s.t0 + HOUR);
	weft_chan_destroy(s.ch);
	assert_int_equal(weft_run(), 0);
	assert_int_equal(weft_shutdown(), 0);
	assert_int_equal(weft_init(NULL), 0);
}

/* Nesting, and what does not deliver while held. */
struct nest {
	int d[6];
	int r_yield_held, r_sleep0_held, r_try_held, r_timeout_held;
	int r_yield, r_yield_again;
	int r_bad_release;
	weft_future_t *never;
};

static void *nested(void *arg)
{
	struct nest *n = arg;
	n->d[0] = weft_fiber_cancel_hold();
	n->d[1] = weft_fiber_cancel_hold();
	n->d[2] = weft_fiber_cancel_hold();
	weft_fiber_cancel(weft_fiber_self());
	n->r_yield_held = weft_fiber_yield();
	n->d[3] = weft_fiber_cancel_release();
	n->r_sleep0_held = weft_sleep_until(0);
	n->r_try_held = weft_future_await(n->never, 0, NULL);
	n->d[4] = weft_fiber_cancel_release();
	n->r_timeout_held = weft_future_await(n->never, weft_deadline_in(MS), NULL);
	n->d[5] = weft_fiber_cancel_release();
	n->r_yield = weft_fiber_yield();
	n->r_yield_again = weft_fiber_yield();
	n->r_bad_release = weft_fiber_cancel_release();
	return NULL;
}

static void test_hold_nests(void **state)
{
	(void)state;
	struct nest n;
	memset(&n, 0x55, sizeof n);
	assert_int_equal(weft_future_create(&n.never), 0);
	wt_run_fiber(nested, &n);
	assert_int_equal(n.d[0], 1);
	assert_int_equal(n.d[1], 2);
	assert_int_equal(n.d[2], 3);
	assert_int_equal(n.d[3], 2);
	assert_int_equal(n.d[4], 1);
	assert_int_equal(n.d[5], 0);
	assert_int_equal(n.r_yield_held, 0);
	assert_int_equal(n.r_sleep0_held, 0);
	assert_int_equal(n.r_try_held, -ETIMEDOUT);
	assert_int_equal(n.r_timeout_held, -ETIMEDOUT);
	assert_int_equal(n.r_yield, -ECANCELED);
	assert_int_equal(n.r_yield_again, 0);
	assert_int_equal(n.r_bad_release, -EPERM);
	weft_future_release(n.never);
}

/* Holds nest up to WEFT_CANCEL_HOLD_MAX deep; one more is -EOVERFLOW and
 * changes nothing. */
struct deep {
	int bad_depth; /* the first hold that returned the wrong depth, or 0 */
	int r_over, r_release, r_last;
};

static void *hold_to_the_limit(void *arg)
{
	struct deep *d = arg;
	for (int i = 1; i <= WEFT_CANCEL_HOLD_MAX; i++)
		if (weft_fiber_cancel_hold() != i && !d->bad_depth)
			d->bad_depth = i;
	d->r_over = weft_fiber_cancel_hold();
	d->r_release = weft_fiber_cancel_release();
	for (int i = 1; i < WEFT_CANCEL_HOLD_MAX; i++)
		d->r_last = weft_fiber_cancel_release();
	return NULL;
}

static void test_hold_depth_limit(void **state)
{
	(void)state;
	struct deep d = {0};
	wt_run_fiber(hold_to_the_limit, &d);
	assert_int_equal(d.bad_depth, 0);
	assert_int_equal(d.r_over, -EOVERFLOW);
	assert_int_equal(d.r_release, WEFT_CANCEL_HOLD_MAX - 1);
	assert_int_equal(d.r_last, 0);
}

/* Released without a request: nothing is delivered. A request made after
 * the release is delivered as usual, to a parked fiber. */
struct plain_release {
	_Atomic int parked_soon;
	int r_sleep, r_wait;
	weft_future_t *never;
};

static void *hold_release_then_wait(void *arg)
{
	struct plain_release *p = arg;
	weft_fiber_cancel_hold();
	weft_fiber_cancel_release();
	p->r_sleep = weft_sleep_until(weft_deadline_in(MS));
	atomic_store(&p->parked_soon, 1);
	p->r_wait = weft_future_await(p->never, wt_ms(60000), NULL);
	return NULL;
}

static void test_hold_release_without_request(void **state)
{
	(void)state;
	struct plain_release p = {.r_sleep = 1, .r_wait = 1};
	assert_int_equal(weft_future_create(&p.never), 0);
	weft_fiber_t f;
	assert_int_equal(weft_fiber_spawn(&f, NULL, hold_release_then_wait, &p), 0);
	assert_true(wt_wait_flag(&p.parked_soon));
	assert_int_equal(weft_fiber_cancel(f), 0);
	assert_int_equal(weft_fiber_join(f, wt_ms(20000), NULL, NULL), 0);
	assert_int_equal(p.r_sleep, 0);
	assert_int_equal(p.r_wait, -ECANCELED);
	weft_future_release(p.never);
}

/* A channel operation held: a cancelled, held receive still receives. */
struct held_recv {
	weft_chan_t *ch;
	_Atomic int parked_soon;
	int r, v, r_after;
};

static void *held_receive(void *arg)
{
	struct held_recv *h = arg;
	weft_fiber_cancel_hold();
	atomic_store(&h->parked_soon, 1);
	h->r = weft_chan_recv(h->ch, &h->v, wt_ms(60000));
	weft_fiber_cancel_release();
	int x;
	h->r_after = weft_chan_recv(h->ch, &x, wt_ms(60000));
	return NULL;
}

static void test_hold_channel_receive(void **state)
{
	(void)state;
	struct held_recv h = {.r = 1, .v = -1, .r_after = 1};
	assert_int_equal(weft_chan_create(&h.ch, sizeof(int), 0), 0);
	weft_fiber_t f;
	assert_int_equal(weft_fiber_spawn(&f, NULL, held_receive, &h), 0);
	assert_true(wt_wait_flag(&h.parked_soon));
	weft_sleep_until(wt_ms(2));
	assert_int_equal(weft_fiber_cancel(f), 0);
	int x = 41;
	assert_int_equal(weft_chan_send(h.ch, &x, wt_ms(20000)), 0);
	assert_int_equal(weft_fiber_join(f, wt_ms(20000), NULL, NULL), 0);
	assert_int_equal(h.r, 0);
	assert_int_equal(h.v, 41);
	assert_int_equal(h.r_after, -ECANCELED);
	/* The cancelled receive left the channel. */
	assert_int_equal(weft_chan_send(h.ch, &x, 0), -ETIMEDOUT);
	weft_chan_destroy(h.ch);
}

static void test_hold_plain_thread(void **state)
{
	(void)state;
	assert_int_equal(weft_fiber_cancel_release(), -EPERM);
	assert_int_equal(weft_fiber_cancel_hold(), 1);
	assert_int_equal(weft_fiber_cancel_hold(), 2);
	assert_int_equal(weft_sleep_until(weft_deadline_in(MS)), 0);
	assert_int_equal(weft_fiber_cancel_release(), 1);
	assert_int_equal(weft_fiber_cancel_release(), 0);
	assert_int_equal(weft_fiber_cancel_release(), -EPERM);
}

/* ---- Graceful shutdown -------------------------------------------------- */

enum { W_SLEEP, W_AWAIT, W_RECV, W_SEND, W_JOIN, W_YIELD, W_FD, W_FRESH, W_DETACHED, NW };

struct victim {
	int kind;
	weft_future_t *fut;
	weft_chan_t *rendezvous, *cleanup;
	weft_fiber_t target;
	int fd;
	_Atomic int started;
	int r;               /* the interrupted call */
	int r_sleep, r_send; /* cleanup that blocks */
};

static void *victim_main(void *arg)
{
	struct victim *v = arg;
	atomic_store(&v->started, 1);
	int x = 0;
	switch (v->kind) {
	case W_SLEEP:
	case W_FRESH:
	case W_DETACHED:
		v->r = weft_sleep_until(wt_ms(60000));
		break;
	case W_AWAIT:
		v->r = weft_future_await(v->fut, -1, NULL);
		break;
	case W_RECV:
		v->r = weft_chan_recv(v->rendezvous, &x, -1);
		break;
	case W_SEND:
		v->r = weft_chan_send(v->rendezvous, &x, -1);
		break;
	case W_JOIN:
		v->r = weft_fiber_join(v->target, -1, NULL, NULL);
		break;
	case W_YIELD:
		while ((v->r = weft_fiber_yield()) == 0)
			;
		break;
	case W_FD:
		v->r = weft_fd_wait(v->fd, WEFT_IO_IN, -1);
		break;
	}
	/* The cleanup's sleep is short once the request has been seen. A
	 * join that completed (its target was cancelled first) has not seen
	 * it: the walk may reach this fiber long after the join returned (on
	 * a loaded machine, under TSan, more than a millisecond), so it sleeps
	 * until the request ends the sleep; a lost request makes the fiber a
	 * straggler, and the shutdown reports it. */
	int unseen = v->kind == W_JOIN && v->r == 0;
	v->r_sleep = weft_sleep_until(unseen ? wt_ms(60000) : weft_deadline_in(MS));
	int k = v->kind;
	v->r_send = weft_chan_send(v->cleanup, &k, wt_ms(20000));
	return NULL;
}

/* What the join victim joins: waits for the future, is cancelled too. */
static void *await_gate(void *arg) { return (void *)(intptr_t)weft_future_await(arg, -1, NULL); }

static int reports;
static void count_report(uint64_t id, const char *name, const char *file, int line, void *ctx)
{
	(void)id;
	(void)name;
	(void)file;
	(void)line;
	(void)ctx;
	reports++;
}

static void test_shutdown_grace_cancels_every_kind(void **state)
{
	(void)state;
	struct victim v[NW];
	weft_fiber_t f[NW] = {0};
	weft_future_t *fut;
	weft_chan_t *rendezvous[2], *cleanup;
	assert_int_equal(weft_future_create(&fut), 0);
	assert_int_equal(weft_chan_create(&rendezvous[0], sizeof(int), 0), 0);
	assert_int_equal(weft_chan_create(&rendezvous[1], sizeof(int), 0), 0);
	assert_int_equal(weft_chan_create(&cleanup, sizeof(int), NW), 0);
	weft_fiber_t target;
	assert_int_equal(weft_fiber_spawn(&target, NULL, await_gate, fut), 0);
	int fd = -1;
#if WT_LINUX
	int p[2];
	assert_int_equal(pipe2(p, O_NONBLOCK | O_CLOEXEC), 0);
	fd = p[0];
#endif
	for (int k = 0; k < NW; k++) {
		v[k] = (struct victim){.kind = k,
				       .fut = fut,
				       .cleanup = cleanup,
				       .target = target,
				       .fd = fd,
				       .r = 1,
				       .r_sleep = 1,
				       .r_send = 1};
		v[k].rendezvous = rendezvous[k == W_SEND];
		if (k == W_FD && fd < 0)
			continue;
		if (k == W_FRESH)
			continue; /* spawned last, right before the shutdown */
		assert_int_equal(
			weft_fiber_spawn(k == W_DETACHED ? NULL : &f[k], NULL, victim_main, &v[k]),
			0);
		assert_true(wt_wait_flag(&v[k].started));
	}
	weft_sleep_until(wt_ms(2)); /* most likely all parked by now */
	assert_int_equal(weft_fiber_spawn(&f[W_FRESH], NULL, victim_main, &v[W_FRESH]), 0);
	reports = 0;
	assert_int_equal(weft_shutdown_grace(wt_ms(20000), count_report, NULL), 0);
	assert_int_equal(reports, 0);
	assert_int_equal(weft_workers(), 0); /* stopped */
	for (int k = 0; k < NW; k++) {
		if (k == W_FD && fd < 0)
			continue;
		/* The join's target is cancelled too: if it ends first, the
		 * join completes and the request goes to the cleanup's sleep.
		 * Either way it is delivered once. */
		if (k == W_JOIN && v[k].r == 0) {
			assert_int_equal(v[k].r_sleep, -ECANCELED);
		} else {
			assert_int_equal(v[k].r, -ECANCELED);
			assert_int_equal(v[k].r_sleep, 0);
		}
		assert_int_equal(v[k].r_send, 0);
	}
	/* Handles of finished fibers stay valid after shutdown. */
	for (int k = 0; k < NW; k++)
		if (f[k])
			assert_int_equal(weft_fiber_join(f[k], 0, NULL, NULL), 0);
	/* Unless the victim's join completed (and released it). */
	void *r = NULL;
	if (v[W_JOIN].r != 0) {
		assert_int_equal(weft_fiber_join(target, 0, &r, NULL), 0);
		assert_int_equal((intptr_t)r, -ECANCELED);
	}
#if WT_LINUX
	close(p[0]);
	close(p[1]);
#endif
	weft_chan_destroy(rendezvous[0]);
	weft_chan_destroy(rendezvous[1]);
	weft_chan_destroy(cleanup);
	weft_future_release(fut);
	assert_int_equal(weft_init(NULL), 0);
}

/* A fiber holding cancellation off past the deadline is reported, and the
 * runtime keeps running. The waits here have no timer (a future awaited
 * forever), so on the virtual clock nothing can move it before the grace
 * deadline, and the deadline is exact. */
struct stubborn {
	weft_future_t *gate;
	_Atomic int held;
	uint64_t id;
	int r_await, r_after;
};

static void *stubborn(void *arg)
{
	struct stubborn *s = arg;
	s->id = weft_fiber_self();
	weft_fiber_cancel_hold();
	atomic_store(&s->held, 1);
	s->r_await = weft_future_await(s->gate, -1, NULL);
	weft_fiber_cancel_release();
	s->r_after = weft_fiber_yield();
	return NULL;
}

static void *obedient(void *arg)
{
	struct stubborn *s = arg;
	s->r_await = weft_future_await(s->gate, -1, NULL);
	return NULL;
}

struct seen {
	int n;
	uint64_t id;
	char name[32];
	int line;
};

static void record_report(uint64_t id, const char *name, const char *file, int line, void *ctx)
{
	struct seen *s = ctx;
	s->n++;
	s->id = id;
	strncpy(s->name, name, sizeof s->name - 1);
	s->line = file ? line : -1;
}

static void straggler(unsigned flags)
{
	assert_int_equal(weft_run(), 0);
	assert_int_equal(weft_shutdown(), 0);
	weft_config_t c = {.flags = flags};
	assert_int_equal(weft_init(&c), 0);
	struct stubborn s = {.r_await = 1, .r_after = 1}, o = {.r_await = 1};
	assert_int_equal(weft_future_create(&s.gate), 0);
	o.gate = s.gate;
	weft_attr_t named = {.name = "stubborn"};
	weft_fiber_t f;
	assert_int_equal(weft_fiber_spawn(&f, &named, stubborn, &s), 0);
	assert_int_equal(weft_fiber_spawn(NULL, NULL, obedient, &o), 0);
	while (!atomic_load(&s.held))
		wt_thread_yield();

	int64_t t0 = weft_now(), grace = flags ? 5 * SEC : 5 * MS;
	struct seen seen = {0};
	assert_int_equal(weft_shutdown_grace(t0 + grace, record_report, &seen), 1);
	if (flags == WEFT_CFG_VIRTUAL_CLOCK)
		assert_true(weft_now() == t0 + grace);
	else
		assert_true(weft_now() >= t0 + grace);
	assert_int_equal(seen.n, 1);
	assert_true(seen.id == s.id);
	assert_true(seen.id == f); /* the value its spawner got */
	assert_string_equal(seen.name, "stubborn");
	assert_true(seen.line > 0);
	assert_int_equal(o.r_await, -ECANCELED);
	/* Still running. A second call is a new request (it merges with the
	 * pending one) and reports it again, on the console this time. */
	assert_true(weft_workers() > 0);
	assert_int_equal(weft_shutdown_grace(0, NULL, NULL), 1);
	/* Let it out: its await completes, and the request is delivered once
	 * its hold ends. */
	assert_int_equal(weft_future_resolve(s.gate, NULL), 0);
	assert_int_equal(weft_fiber_join(f, -1, NULL, NULL), 0);
	assert_int_equal(s.r_await, 0);
	assert_int_equal(s.r_after, -ECANCELED);
	assert_int_equal(weft_shutdown_grace(0, record_report, &seen), 0);
	assert_int_equal(seen.n, 1);
	weft_future_release(s.gate);
	assert_int_equal(weft_init(NULL), 0);
}

static void test_shutdown_grace_reports_straggler(void **state)
{
	(void)state;
	straggler(WEFT_CFG_VIRTUAL_CLOCK);
	straggler(0);
}

/* Fibers spawned during the grace period start with the request: a
 * cancelled fiber's cleanup spawns a helper, whose first wait is cancelled
 * and whose own cleanup then works. */
struct helper {
	int r_first, r_cleanup;
};

static void *helper_main(void *arg)
{
	struct helper *h = arg;
	h->r_first = weft_sleep_until(wt_ms(60000));
	h->r_cleanup = weft_sleep_until(weft_deadline_in(MS));
	return NULL;
}

struct spawner {
	_Atomic int started;
	int r;
	struct helper h;
	int r_spawn, r_join;
};

static void *cancelled_then_spawns(void *arg)
{
	struct spawner *sp = arg;
	atomic_store(&sp->started, 1);
	sp->r = weft_sleep_until(wt_ms(60000));
	weft_fiber_t g;
	sp->r_spawn = weft_fiber_spawn(&g, NULL, helper_main, &sp->h);
	if (sp->r_spawn == 0)
		sp->r_join = weft_fiber_join(g, -1, NULL, NULL);
	return NULL;
}

static void test_shutdown_grace_spawned_meanwhile(void **state)
{
	(void)state;
	struct spawner sp = {.r = 1, .r_spawn = 1, .r_join = 1, .h = {1, 1}};
	assert_int_equal(weft_fiber_spawn(NULL, NULL, cancelled_then_spawns, &sp), 0);
	assert_true(wt_wait_flag(&sp.started));
	assert_int_equal(weft_shutdown_grace(wt_ms(20000), NULL, NULL), 0);
	assert_int_equal(sp.r, -ECANCELED);
	assert_int_equal(sp.r_spawn, 0);
	assert_int_equal(sp.r_join, 0);
	assert_int_equal(sp.h.r_first, -ECANCELED);
	assert_int_equal(sp.h.r_cleanup, 0);
	/* After a shutdown, spawns start clean again. */
	assert_int_equal(weft_init(NULL), 0);
	sp.h = (struct helper){1, 1};
	weft_fiber_t g;
	assert_int_equal(weft_fiber_spawn(&g, NULL, helper_main, &sp.h), 0);
	assert_int_equal(weft_fiber_cancel(g), 0);
	assert_int_equal(weft_fiber_join(g, wt_ms(20000), NULL, NULL), 0);
	assert_int_equal(sp.h.r_first, -ECANCELED);
}

/* The fd victim of the test above on its own, so that bare metal (no file
 * descriptors) shows it as a skip rather than leaving it out. */
static void test_shutdown_grace_cancels_fd_wait(void **state)
{
	(void)state;
#if WT_LINUX
	int p[2];
	assert_int_equal(pipe2(p, O_NONBLOCK | O_CLOEXEC), 0);
	struct victim v = {.kind = W_FD, .fd = p[0], .r = 1, .r_sleep = 1, .r_send = 1};
	assert_int_equal(weft_chan_create(&v.cleanup, sizeof(int), 1), 0);
	weft_fiber_t f;
	assert_int_equal(weft_fiber_spawn(&f, NULL, victim_main, &v), 0);
	assert_true(wt_wait_flag(&v.started));
	assert_int_equal(weft_shutdown_grace(wt_ms(20000), NULL, NULL), 0);
	assert_int_equal(v.r, -ECANCELED);
	assert_int_equal(v.r_sleep, 0);
	assert_int_equal(v.r_send, 0);
	assert_int_equal(weft_fiber_join(f, 0, NULL, NULL), 0);
	close(p[0]);
	close(p[1]);
	weft_chan_destroy(v.cleanup);
	assert_int_equal(weft_init(NULL), 0);
#else
	print_message("bare metal has no file descriptors to wait on\n");
	skip();
#endif
}

static void *grace_from_fiber(void *arg)
{
	(void)arg;
	return (void *)(intptr_t)weft_shutdown_grace(0, NULL, NULL);
}

static void test_shutdown_grace_errors(void **state)
{
	(void)state;
	assert_int_equal((intptr_t)wt_run_fiber(grace_from_fiber, NULL), -EPERM);
	assert_int_equal(weft_shutdown_grace(0, NULL, NULL), 0); /* nothing alive */
	assert_int_equal(weft_shutdown_grace(0, NULL, NULL), -ESRCH);
	assert_int_equal(weft_init(NULL), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hold_wait_completes_then_delivered),
		cmocka_unit_test(test_hold_sleep_runs_full_time),
		cmocka_unit_test(test_hold_nests),
		cmocka_unit_test(test_hold_depth_limit),
		cmocka_unit_test(test_hold_release_without_request),
		cmocka_unit_test(test_hold_channel_receive),
		cmocka_unit_test(test_hold_plain_thread),
		cmocka_unit_test(test_shutdown_grace_cancels_every_kind),
		cmocka_unit_test(test_shutdown_grace_cancels_fd_wait),
		cmocka_unit_test(test_shutdown_grace_reports_straggler),
		cmocka_unit_test(test_shutdown_grace_spawned_meanwhile),
		cmocka_unit_test(test_shutdown_grace_errors),
	};
	return WT_MAIN("holdoff", tests, wt_start, wt_stop);
}
