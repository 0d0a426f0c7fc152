/* SPDX-License-Identifier: MIT */
/* The virtual clock: an hour's sleep ends at once and exactly an hour later
 * on weft_now(); every kind of timed wait times out exactly at its deadline;
 * timers fire in deadline order, each at its own time; a busy worker holds
 * the clock; plain threads' deadlines are timers too, and time out when the
 * runtime stops; several workers; the configuration and $WEFT_CLOCK.
 *
 * Every assertion on time here is exact: the clock is virtual. The test's
 * own thread joins with deadline -1, since a deadline of its own would be a
 * timer the clock can jump to. Fibers that need a common start are spawned
 * by one fiber: while it runs, its worker is busy and the clock cannot move
 * (a plain thread that spawns does not hold it). */
#include <stdlib.h>
#include <string.h>

#include "shim.h"
#include "testutil.h"
#include "weft_net.h"

#if WT_LINUX
#include <fcntl.h>
#include <unistd.h>
#endif

#define MS 1000000LL
#define SEC (1000 * MS)
#define HOUR (3600 * SEC)

static int start_virtual(void **state)
{
	(void)state;
	weft_config_t c = {.flags = WEFT_CFG_VIRTUAL_CLOCK};
	return weft_init(&c) == 0 ? 0 : -1;
}

static int stop(void **state)
{
	(void)state;
	if (weft_run() != 0)
		return -1;
	return weft_shutdown() == 0 ? 0 : -1;
}

static void *join_forever(weft_fiber_t f)
{
	void *r = (void *)1;
	assert_int_equal(weft_fiber_join(f, -1, &r, NULL), 0);
	return r;
}

static void *run_forever(weft_fn fn, void *arg)
{
	weft_fiber_t f;
	assert_int_equal(weft_fiber_spawn(&f, NULL, fn, arg), 0);
	return join_forever(f);
}

/* ---- An hour at once ---------------------------------------------------- */

struct hour {
	int64_t t0, t1;
	int r;
};

static void *sleep_hour(void *arg)
{
	struct hour *h = arg;
	h->t0 = weft_now();
	h->r = weft_sleep_until(h->t0 + HOUR);
	h->t1 = weft_now();
	return NULL;
}

static void test_vclock_sleep_an_hour(void **state)
{
	(void)state;
	int64_t m0 = weft_now();
	struct hour h = {.r = 1};
	run_forever(sleep_hour, &h);
	assert_int_equal(h.r, 0);
	/* Nothing could move the clock before the sleep: no timer existed. */
	assert_true(h.t0 == m0);
	assert_true(h.t1 - h.t0 == HOUR);
	assert_true(weft_now() - m0 == HOUR);
}

/* ---- Every kind of timeout is exact ------------------------------------- */

enum { N_SPANS = 7 };
static const int64_t spans[N_SPANS] = {1, 1000, MS, 7 * MS, 250 * MS, 3 * SEC, HOUR};

struct exact {
	weft_future_t *fut;
	weft_chan_t *ch;
	weft_fiber_t target; /* never finishes before the test ends */
	int fd;              /* a pipe's read end, or -1 */
	int wrong;           /* timed waits that were not exact */
	int64_t first_bad_elapsed, first_bad_want;
	int first_bad_kind;
};

static void check(struct exact *e, int kind, int r, int want_r, int64_t elapsed, int64_t want)
{
	if (r == want_r && elapsed == want)
		return;
	if (!e->wrong++) {
		e->first_bad_kind = kind;
		e->first_bad_elapsed = r == want_r ? elapsed : r;
		e->first_bad_want = want;
	}
}

static void *timeouts(void *arg)
{
	struct exact *e = arg;
	for (int i = 0; i < N_SPANS; i++) {
		int64_t n = spans[i], t0;
		int x = 0, r;

		t0 = weft_now();
		r = weft_sleep_until(t0 + n);
		check(e, 0, r, 0, weft_now() - t0, n);

		t0 = weft_now();
		r = weft_future_await(e->fut, t0 + n, NULL);
		check(e, 1, r, -ETIMEDOUT, weft_now() - t0, n);

		t0 = weft_now();
		r = weft_chan_recv(e->ch, &x, t0 + n);
		check(e, 2, r, -ETIMEDOUT, weft_now() - t0, n);

		t0 = weft_now();
		r = weft_chan_send(e->ch, &x, t0 + n);
		check(e, 3, r, -ETIMEDOUT, weft_now() - t0, n);

		t0 = weft_now();
		r = weft_fiber_join(e->target, t0 + n, NULL, NULL);
		check(e, 4, r, -ETIMEDOUT, weft_now() - t0, n);

		if (e->fd >= 0) {
			t0 = weft_now();
			r = weft_fd_wait(e->fd, WEFT_IO_IN, t0 + n);
			check(e, 5, r, -ETIMEDOUT, weft_now() - t0, n);
		}
	}
	return NULL;
}

static void *await_forever(void *arg) { return (void *)(intptr_t)weft_future_await(arg, -1, NULL); }

static void test_vclock_timeouts_exact(void **state)
{
	(void)state;
	struct exact e = {.fd = -1};
	weft_future_t *gate;
	assert_int_equal(weft_future_create(&e.fut), 0);
	assert_int_equal(weft_future_create(&gate), 0);
	assert_int_equal(weft_chan_create(&e.ch, sizeof(int), 0), 0);
	assert_int_equal(weft_fiber_spawn(&e.target, NULL, await_forever, gate), 0);
#if WT_LINUX
	int p[2];
	assert_int_equal(pipe2(p, O_NONBLOCK | O_CLOEXEC), 0);
	e.fd = p[0];
#endif
	run_forever(timeouts, &e);
	if (e.wrong)
		print_message("kind %d: got %lld, wanted %lld\n", e.first_bad_kind,
			      (long long)e.first_bad_elapsed, (long long)e.first_bad_want);
	assert_int_equal(e.wrong, 0);
	assert_int_equal(weft_future_resolve(gate, NULL), 0);
	join_forever(e.target);
#if WT_LINUX
	weft_fd_forget(p[0]);
	weft_fd_forget(p[1]);
	close(p[0]);
	close(p[1]);
#endif
	weft_chan_destroy(e.ch);
	weft_future_release(e.fut);
	weft_future_release(gate);
}

/* ---- Order ---------------------------------------------------------------- */

enum { N_ORDER = 64 };

struct order {
	int64_t base;
	int64_t deadline[N_ORDER], woke[N_ORDER];
	int seq[N_ORDER];
	int r[N_ORDER];
	_Atomic int next_seq;
};

struct order_arg {
	struct order *o;
	int i;
};

static void *sleep_in_order(void *arg)
{
	struct order_arg *a = arg;
	struct order *o = a->o;
	o->r[a->i] = weft_sleep_until(o->deadline[a->i]);
	o->woke[a->i] = weft_now();
	o->seq[a->i] = atomic_fetch_add(&o->next_seq, 1);
	return NULL;
}

/* Spawns them all in one go (the clock cannot move meanwhile) and joins. */
static void *spawn_sleepers(void *arg)
{
	struct order *o = arg;
	struct order_arg a[N_ORDER];
	weft_fiber_t f[N_ORDER];
	o->base = weft_now();
	for (int i = 0; i < N_ORDER; i++) {
		o->deadline[i] += o->base;
		a[i] = (struct order_arg){o, i};
		if (weft_fiber_spawn(&f[i], NULL, sleep_in_order, &a[i]) != 0)
			return (void *)1;
	}
	for (int i = 0; i < N_ORDER; i++)
		if (weft_fiber_join(f[i], -1, NULL, NULL) != 0)
			return (void *)2;
	return NULL;
}

static void test_vclock_timer_order(void **state)
{
	(void)state;
	struct order o = {0};
	/* Distinct offsets 1..N ms in a random order, except that pairs
	 * (2k, 2k+1) share one, so some timers are due together. */
	int perm[N_ORDER / 2];
	for (int i = 0; i < N_ORDER / 2; i++)
		perm[i] = i + 1;
	wt_rng_seed();
	for (int i = N_ORDER / 2 - 1; i > 0; i--) {
		int j = (int)(wt_rng_next() % (uint64_t)(i + 1));
		int t = perm[i];
		perm[i] = perm[j];
		perm[j] = t;
	}
	for (int i = 0; i < N_ORDER; i++)
		o.deadline[i] = perm[i / 2] * MS;
	assert_null(run_forever(spawn_sleepers, &o));
	int bad_time = 0, bad_order = 0;
	for (int i = 0; i < N_ORDER; i++) {
		if (o.r[i] != 0 || o.woke[i] != o.deadline[i])
			bad_time++;
		for (int j = 0; j < N_ORDER; j++)
			if (o.deadline[i] < o.deadline[j] && o.seq[i] > o.seq[j])
				bad_order++;
	}
	assert_int_equal(bad_time, 0);
	assert_int_equal(bad_order, 0);
	assert_true(weft_now() == o.base + (N_ORDER / 2) * MS);
}

/* ---- A busy worker holds the clock -------------------------------------- */

struct busy {
	int64_t t0, woke_b, woke_a;
	int moved; /* times the clock moved while A was running */
	int r_a, r_b;
};

static void *sleep_1ms(void *arg)
{
	struct busy *b = arg;
	b->r_b = weft_sleep_until(b->t0 + MS);
	b->woke_b = weft_now();
	return NULL;
}

static void *busy_then_sleep(void *arg)
{
	struct busy *b = arg;
	b->t0 = weft_now();
	weft_fiber_t f;
	if (weft_fiber_spawn(&f, NULL, sleep_1ms, b) != 0)
		return (void *)1;
	/* Runs (yielding, so the sleeper gets to park) while B's timer is
	 * armed: the clock must not move, as this worker is not idle. */
	for (int i = 0; i < 20000; i++) {
		if (weft_now() != b->t0)
			b->moved++;
		weft_fiber_yield();
	}
	b->r_a = weft_sleep_until(b->t0 + 2 * MS);
	b->woke_a = weft_now();
	return weft_fiber_join(f, -1, NULL, NULL) == 0 ? NULL : (void *)2;
}

static void test_vclock_busy_worker_holds_clock(void **state)
{
	(void)state;
	struct busy b = {.r_a = 1, .r_b = 1};
	assert_null(run_forever(busy_then_sleep, &b));
	assert_int_equal(b.moved, 0);
	assert_int_equal(b.r_b, 0);
	assert_int_equal(b.r_a, 0);
	assert_true(b.woke_b == b.t0 + MS);
	assert_true(b.woke_a == b.t0 + 2 * MS);
}

/* ---- Plain threads ------------------------------------------------------- */

/* A plain thread's timed wait is a timer: the clock jumps to it when the
 * workers are idle, and it is exact too. The fiber joined here waits
 * without a timer: had it a deadline of its own, the clock could reach it
 * before this thread's join began (a plain thread does not hold the
 * clock). */
static void test_vclock_plain_thread_deadlines(void **state)
{
	(void)state;
	int64_t t0 = weft_now();
	assert_int_equal(weft_sleep_until(t0 + HOUR), 0);
	assert_true(weft_now() == t0 + HOUR);

	weft_future_t *gate;
	assert_int_equal(weft_future_create(&gate), 0);
	int64_t t1 = weft_now();
	weft_fiber_t f;
	assert_int_equal(weft_fiber_spawn(&f, NULL, await_forever, gate), 0);
	assert_int_equal(weft_fiber_join(f, t1 + HOUR / 2, NULL, NULL), -ETIMEDOUT);
	assert_true(weft_now() == t1 + HOUR / 2);
	assert_int_equal(weft_future_resolve(gate, NULL), 0);
	join_forever(f);
	assert_true(weft_now() == t1 + HOUR / 2);
	weft_future_release(gate);

	weft_future_t *fut;
	assert_int_equal(weft_future_create(&fut), 0);
	int64_t t2 = weft_now();
	assert_int_equal(weft_future_await(fut, t2 + 5 * MS, NULL), -ETIMEDOUT);
	assert_true(weft_now() == t2 + 5 * MS);
	weft_future_release(fut);
}

/* A plain thread's timed wait is a timer of the virtual clock, and the clock
 * stops with the runtime: weft_shutdown times the wait out then
 * (-ETIMEDOUT), and takes the thread's entry out of the timer heap before
 * it empties the heap. In the host loop only weft_poll moves the clock, so
 * the thread's timer is still armed (weft_poll_next shows it) when the
 * shutdown comes. The waits here are bounded in real time (shim_now): the
 * virtual clock stands still meanwhile. Had the shutdown left the thread
 * waiting, the resolve that then wakes it has it take its entry out of a
 * heap emptied under it. A plain thread in weft_fd_wait with a virtual
 * deadline gets the reactor's answer, -ESRCH. */
struct vwaiter {
	weft_future_t *fut;
	int fd;
	int64_t deadline;
	_Atomic int done;
	int r;
};

static void *await_virtual(void *arg)
{
	struct vwaiter *v = arg;
	v->r = weft_future_await(v->fut, v->deadline, NULL);
	atomic_store(&v->done, 1);
	return NULL;
}

static void *fd_wait_virtual(void *arg)
{
	struct vwaiter *v = arg;
	v->r = weft_fd_wait(v->fd, WEFT_IO_IN, v->deadline);
	atomic_store(&v->done, 1);
	return NULL;
}

/* Whether cond() holds within 5 s of real time. */
static int within_5s(int (*cond)(void *), void *arg)
{
	int64_t end = shim_now() + 5 * SEC;
	while (!cond(arg) && shim_now() < end)
		wt_thread_yield();
	return cond(arg);
}

static int timer_armed(void *arg) { return weft_poll_next() == ((struct vwaiter *)arg)->deadline; }

static int waiter_done(void *arg) { return atomic_load(&((struct vwaiter *)arg)->done); }

static void test_vclock_shutdown_ends_plain_thread_timer(void **state)
{
	(void)state;
	assert_int_equal(weft_run(), 0);
	assert_int_equal(weft_shutdown(), 0);
	weft_config_t c = {.flags = WEFT_CFG_HOST_LOOP | WEFT_CFG_VIRTUAL_CLOCK};
	assert_int_equal(weft_init(&c), 0);
	struct vwaiter v = {.deadline = weft_now() + HOUR, .r = 1};
	assert_int_equal(weft_future_create(&v.fut), 0);
	wt_thread_t t = wt_thread_start(await_virtual, &v);
	int armed = within_5s(timer_armed, &v);
	assert_int_equal(weft_shutdown(), 0);
	int done = within_5s(waiter_done, &v);
	/* Let it go in any case, so that a failure ends here. */
	weft_future_resolve(v.fut, NULL);
	wt_thread_join(t);
	weft_future_release(v.fut);
	assert_true(armed);
	assert_true(done);
	assert_int_equal(v.r, -ETIMEDOUT);

	/* An fd wait with a virtual deadline ends as every fd wait does at
	 * the shutdown: -ESRCH, the reactor's answer coming first. */
	assert_int_equal(weft_init(&c), 0);
	int p[2];
	wt_pipe(p);
	struct vwaiter fw = {.fd = p[0], .deadline = weft_now() + HOUR, .r = 1};
	t = wt_thread_start(fd_wait_virtual, &fw);
	armed = within_5s(timer_armed, &fw);
	assert_int_equal(weft_shutdown(), 0);
	done = within_5s(waiter_done, &fw);
	if (done) /* else it waits for good: the assertion below fails */
		wt_thread_join(t);
	assert_true(armed);
	assert_true(done);
	assert_int_equal(fw.r, -ESRCH);
	wt_close(p[0]);
	wt_close(p[1]);

	/* Back to the group's runtime for the teardown. */
	assert_int_equal(start_virtual(NULL), 0);
}

/* ---- Several workers ----------------------------------------------------- */

enum { N_MANY = 200, ROUNDS = 5 };

struct many {
	int wrong;
	uint64_t seed;
};

static void *sleep_rounds(void *arg)
{
	struct many *m = arg;
	uint64_t x = m->seed;
	for (int i = 0; i < ROUNDS; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		int64_t d = weft_now() + 1 + (int64_t)(x % (50 * MS));
		if (weft_sleep_until(d) != 0 || weft_now() != d)
			m->wrong++;
	}
	return NULL;
}

static void *spawn_many(void *arg)
{
	struct many *m = arg;
	weft_fiber_t f[N_MANY];
	for (int i = 0; i < N_MANY; i++)
		if (weft_fiber_spawn(&f[i], NULL, sleep_rounds, &m[i]) != 0)
			return (void *)1;
	for (int i = 0; i < N_MANY; i++)
		weft_fiber_join(f[i], -1, NULL, NULL);
	return NULL;
}

static void test_vclock_four_workers(void **state)
{
	(void)state;
	assert_int_equal(weft_shutdown(), 0); /* this one wants its own */
	weft_config_t c = {.workers = 4, .flags = WEFT_CFG_VIRTUAL_CLOCK};
	assert_int_equal(weft_init(&c), 0);
	struct many *m = calloc(N_MANY, sizeof *m);
	assert_non_null(m);
	wt_rng_seed();
	for (int i = 0; i < N_MANY; i++)
		m[i].seed = wt_rng_next() | 1;
	assert_null(run_forever(spawn_many, m));
	int wrong = 0;
	for (int i = 0; i < N_MANY; i++)
		wrong += m[i].wrong;
	free(m);
	assert_int_equal(wrong, 0);
}

/* ---- Configuration ------------------------------------------------------- */

static void test_vclock_config_and_env(void **state)
{
	(void)state;
	assert_int_equal(weft_run(), 0);
	assert_int_equal(weft_shutdown(), 0);
	weft_config_t both = {.flags = WEFT_CFG_VIRTUAL_CLOCK | WEFT_CFG_REAL_CLOCK};
	assert_int_equal(weft_init(&both), -EINVAL);
	weft_config_t unknown = {.flags = 1u << 20};
	assert_int_equal(weft_init(&unknown), -EINVAL);

	setenv("WEFT_CLOCK", "sundial", 1);
	assert_int_equal(weft_init(NULL), -EINVAL);

	setenv("WEFT_CLOCK", "virtual", 1);
	assert_int_equal(weft_init(NULL), 0);
	struct hour h = {.r = 1};
	run_forever(sleep_hour, &h);
	assert_int_equal(h.r, 0);
	assert_true(h.t1 - h.t0 == HOUR);
	assert_int_equal(weft_run(), 0);
	assert_int_equal(weft_shutdown(), 0);

	/* The configuration wins over the environment: a real clock, where a
	 * sleep of 1 ms takes at least 1 ms and not exactly 0 of it. */
	weft_config_t real = {.flags = WEFT_CFG_REAL_CLOCK};
	assert_int_equal(weft_init(&real), 0);
	int64_t t0 = weft_now();
	assert_int_equal(weft_sleep_until(t0 + MS), 0);
	assert_true(weft_now() >= t0 + MS);
	assert_int_equal(weft_run(), 0);
	assert_int_equal(weft_shutdown(), 0);
	unsetenv("WEFT_CLOCK");

	/* Back to the group's runtime for the teardown. */
	assert_int_equal(start_virtual(NULL), 0);
}

/* ---- lwIP's timers follow the clock ------------------------------------ */

/* lwIP runs its timers on the runtime's clock (sys_now is weft_now), so a
 * TCP retransmission happens at its time on the virtual clock, at once in
 * wall time, even an hour into the virtual clock's future. A listener whose backlog is full drops a SYN; the connecting
 * side retransmits it after its initial retransmission timeout (lwIP: 3 s,
 * counted in 500 ms ticks of tcp_slowtmr, so between 2.5 and 3.5 s after
 * the first SYN, wherever that falls between two ticks), and by then the
 * backlog has room. With lwIP on the wall clock this test does not end:
 * an hour behind, its timer fiber finds every deadline past, spins, and
 * keeps the virtual clock from moving (seen before the change: killed at
 * 120 s); the runner's time bound fails it. */
struct syn {
	weft_addr_t at;
	int64_t t0, t1;
	int r;
	weft_sock_t *s;
};

static void *connect_late(void *arg)
{
	struct syn *y = arg;
	y->t0 = weft_now();
	y->r = weft_tcp_connect(&y->s, &y->at, -1);
	y->t1 = weft_now();
	return NULL;
}

struct rtx {
	int r_init, r_listen, r_c1, r_accept1, r_accept2, r_fini;
	struct syn late;
};

static void *syn_retransmitted(void *arg)
{
	struct rtx *x = arg;
	weft_net_config_t cfg = {.stack = "lwip", .netif = "loop"};
	if ((x->r_init = weft_net_init(&cfg)))
		return NULL;
	/* An hour on, the virtual clock is far from the wall clock's reading:
	 * timers that ran on the wall clock would now be an hour off. */
	weft_sleep_until(weft_now() + HOUR);
	weft_sock_t *ls = NULL, *c1 = NULL, *s1 = NULL, *s2 = NULL;
	weft_addr_t any = {.ip = 0, .port = 0}, local;
	if (!(x->r_listen = weft_tcp_listen(&ls, &any, 1))) {
		weft_sock_local(ls, &local);
		x->late.at = local;
		weft_addr_parse("127.0.0.1", &x->late.at);
		x->late.at.port = local.port;
		/* The backlog's one place is taken by a connection not accepted. */
		x->r_c1 = weft_tcp_connect(&c1, &x->late.at, -1);
		weft_fiber_t f;
		if (!x->r_c1 && !weft_fiber_spawn(&f, NULL, connect_late, &x->late)) {
			/* Its SYN is sent and dropped before the clock can move
			 * (this fiber's sleep is the first deadline it reaches). */
			weft_sleep_until(weft_now() + MS);
			x->r_accept1 = weft_tcp_accept(ls, &s1, NULL, 0);
			weft_fiber_join(f, -1, NULL, NULL);
			x->r_accept2 = weft_tcp_accept(ls, &s2, NULL, -1);
		}
	}
	weft_sock_close(s2);
	weft_sock_close(s1);
	weft_sock_close(x->late.s);
	weft_sock_close(c1);
	weft_sock_close(ls);
	x->r_fini = weft_net_fini();
	return NULL;
}

static void test_vclock_lwip_retransmission(void **state)
{
	(void)state;
	struct rtx x;
	memset(&x, 0, sizeof x);
	x.late.r = 1;
	run_forever(syn_retransmitted, &x);
	assert_int_equal(x.r_init, 0);
	assert_int_equal(x.r_listen, 0);
	assert_int_equal(x.r_c1, 0);
	assert_int_equal(x.r_accept1, 0);
	assert_int_equal(x.late.r, 0);
	assert_int_equal(x.r_accept2, 0);
	assert_int_equal(x.r_fini, 0);
	int64_t dt = x.late.t1 - x.late.t0;
	print_message("the retransmitted SYN connected %lld ms after the first\n",
		      (long long)(dt / MS));
	if (dt < 2500 * MS || dt > 3500 * MS)
		fail_msg("the late connection took %lld ms of the virtual clock: lwIP's 3 s "
			 "retransmission timeout (500 ms ticks) did not run on it",
			 (long long)(dt / MS));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vclock_sleep_an_hour),
		cmocka_unit_test(test_vclock_timeouts_exact),
		cmocka_unit_test(test_vclock_timer_order),
		cmocka_unit_test(test_vclock_busy_worker_holds_clock),
		cmocka_unit_test(test_vclock_plain_thread_deadlines),
		cmocka_unit_test(test_vclock_shutdown_ends_plain_thread_timer),
		cmocka_unit_test(test_vclock_four_workers),
		cmocka_unit_test(test_vclock_config_and_env),
		cmocka_unit_test(test_vclock_lwip_retransmission),
	};
	return WT_MAIN("vclock", tests, start_virtual, stop);
}
