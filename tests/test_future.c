/* SPDX-License-Identifier: MIT */
/* Futures: settle once, await from fibers and plain threads with deadlines and
 * cancellation, references, races, and fibers as futures (join). */
#include <stdatomic.h>
#include <string.h>

#include "testutil.h"

#include "sleepers.h"

/* Every wait is bounded: a bug fails a test instead of hanging the suite. */
#define LONG_MS 10000
#define WAKE_NS (WT_WAKE_MS * 1000000LL)

static int64_t far(void) { return wt_ms(WT_WAIT_MS); }

/* Join f, woken by this thread, by the time by. */
static void join_by(weft_fiber_t f, int64_t by)
{
	assert_int_equal(weft_fiber_join(f, by, NULL, NULL), 0);
}

/* Sizes: every loop count and volume below goes through scaled(), which
 * shrinks it about 10x under the sanitizers (wt_sanitized), which run about
 * that much slower. */
static long scaled(long native, long sanitized) { return wt_sanitized() ? sanitized : native; }

#define VAL(n) ((void *)(uintptr_t)(n))

static weft_future_t *make_future(void)
{
	weft_future_t *f = NULL;
	assert_int_equal(weft_future_create(&f), 0);
	assert_non_null(f);
	return f;
}

/* One await, run by a fiber or a plain thread. */
struct aw {
	weft_future_t *f;
	int64_t deadline;
	int r;
	void *v;
	int64_t after;
	_Atomic int started;
};

static void aw_init(struct aw *a, weft_future_t *f, int64_t deadline)
{
	memset(a, 0, sizeof *a);
	a->f = f;
	a->deadline = deadline;
	a->r = 1;
	a->v = VAL(0xbad);
}

static void *do_await(void *arg)
{
	struct aw *a = arg;
	atomic_store(&a->started, 1);
	a->r = weft_future_await(a->f, a->deadline, &a->v);
	a->after = weft_now();
	return NULL;
}

/* ---- Settling ----------------------------------------------------------- */

static void test_create_null_out(void **state)
{
	(void)state;
	assert_int_equal(weft_future_create(NULL), -EINVAL);
}

static void test_check_null_args(void **state)
{
	(void)state;
	void *v = NULL;
	assert_int_equal(weft_future_resolve(NULL, VAL(1)), -EINVAL);
	assert_int_equal(weft_future_reject(NULL, -EIO), -EINVAL);
	assert_int_equal(weft_future_await(NULL, 0, &v), -EINVAL);
	assert_int_equal(weft_future_await(NULL, far(), &v), -EINVAL);
	assert_int_equal(weft_future_await(NULL, far(), NULL), -EINVAL);
}

static void test_await_resolved_value(void **state)
{
	(void)state;
	weft_future_t *f = make_future();
	assert_int_equal(weft_future_resolve(f, VAL(0x1234)), 0);
	void *v = NULL;
	assert_int_equal(weft_future_await(f, far(), &v), 0);
	assert_ptr_equal(v, VAL(0x1234));
	/* Again, and with no place for the value. */
	v = NULL;
	assert_int_equal(weft_future_await(f, -1, &v), 0);
	assert_ptr_equal(v, VAL(0x1234));
	assert_int_equal(weft_future_await(f, 0, NULL), 0);
	/* From a fiber. */
	static struct aw a;
	aw_init(&a, f, far());
	wt_join(wt_spawn(do_await, &a));
	assert_int_equal(a.r, 0);
	assert_ptr_equal(a.v, VAL(0x1234));
	weft_future_release(f);

	/* NULL is a value like any other. */
	f = make_future();
	assert_int_equal(weft_future_resolve(f, NULL), 0);
	v = VAL(1);
	assert_int_equal(weft_future_await(f, 0, &v), 0);
	assert_null(v);
	weft_future_release(f);
}

static void test_await_rejected_error(void **state)
{
	(void)state;
	weft_future_t *f = make_future();
	assert_int_equal(weft_future_reject(f, -ENOENT), 0);
	assert_int_equal(weft_future_await(f, far(), NULL), -ENOENT);
	void *v = NULL;
	assert_int_equal(weft_future_await(f, 0, &v), -ENOENT);
	static struct aw a;
	aw_init(&a, f, far());
	wt_join(wt_spawn(do_await, &a));
	assert_int_equal(a.r, -ENOENT);
	weft_future_release(f);
}

static void test_reject_nonnegative_fails(void **state)
{
	(void)state;
	weft_future_t *f = make_future();
	assert_int_equal(weft_future_reject(f, 0), -EINVAL);
	assert_int_equal(weft_future_reject(f, 1), -EINVAL);
	assert_int_equal(weft_future_reject(f, EIO), -EINVAL);
	/* Still pending, still settleable. */
	assert_int_equal(weft_future_await(f, 0, NULL), -ETIMEDOUT);
	assert_int_equal(weft_future_reject(f, -EIO), 0);
	assert_int_equal(weft_future_await(f, 0, NULL), -EIO);
	weft_future_release(f);
}

static void test_settle_twice_keeps_first(void **state)
{
	(void)state;
	void *v = NULL;
	weft_future_t *f = make_future();
	assert_int_equal(weft_future_resolve(f, VAL(1)), 0);
	assert_int_equal(weft_future_resolve(f, VAL(2)), -EALREADY);
	assert_int_equal(weft_future_reject(f, -EIO), -EALREADY);
	assert_int_equal(weft_future_await(f, 0, &v), 0);
	assert_ptr_equal(v, VAL(1));
	weft_future_release(f);

	f = make_future();
	assert_int_equal(weft_future_reject(f, -EIO), 0);
	assert_int_equal(weft_future_resolve(f, VAL(2)), -EALREADY);
	assert_int_equal(weft_future_reject(f, -EBADF), -EALREADY);
	assert_int_equal(weft_future_await(f, 0, &v), -EIO);
	weft_future_release(f);
}

/* ---- Deadlines ---------------------------------------------------------- */

static void test_await_try_pending_times_out(void **state)
{
	(void)state;
	weft_future_t *f = make_future();
	void *v = NULL;
	assert_int_equal(weft_future_await(f, 0, &v), -ETIMEDOUT);
	assert_int_equal(weft_future_await(f, 1, &v), -ETIMEDOUT);
	assert_int_equal(weft_future_await(f, weft_now() - 1, &v), -ETIMEDOUT);
	static struct aw a;
	aw_init(&a, f, 0);
	wt_join(wt_spawn(do_await, &a));
	assert_int_equal(a.r, -ETIMEDOUT);
	aw_init(&a, f, weft_now() - 1000000);
	wt_join(wt_spawn(do_await, &a));
	assert_int_equal(a.r, -ETIMEDOUT);
	/* The failed tries left nothing behind. */
	assert_int_equal(weft_future_resolve(f, VAL(5)), 0);
	assert_int_equal(weft_future_await(f, 0, &v), 0);
	assert_ptr_equal(v, VAL(5));
	weft_future_release(f);
}

static void test_await_deadline_times_out(void **state)
{
	(void)state;
	enum { NF = 3 };
	weft_future_t *f = make_future();
	static struct aw a[NF];
	weft_fiber_t fib[NF];
	for (int i = 0; i < NF; i++) {
		aw_init(&a[i], f, wt_ms(10 * (i + 1)));
		fib[i] = wt_spawn(do_await, &a[i]);
	}
	int64_t dl = wt_ms(20);
	assert_int_equal(weft_future_await(f, dl, NULL), -ETIMEDOUT);
	assert_true(weft_now() >= dl);
	for (int i = 0; i < NF; i++) {
		wt_join(fib[i]);
		assert_int_equal(a[i].r, -ETIMEDOUT);
		assert_true(a[i].after >= a[i].deadline);
	}
	/* Still pending and usable after the timeouts. */
	aw_init(&a[0], f, far());
	fib[0] = wt_spawn(do_await, &a[0]);
	assert_true(wt_wait_flag(&a[0].started));
	assert_int_equal(weft_future_resolve(f, VAL(9)), 0);
	wt_join(fib[0]);
	assert_int_equal(a[0].r, 0);
	assert_ptr_equal(a[0].v, VAL(9));
	weft_future_release(f);
}

/* ---- Waiters ------------------------------------------------------------ */

static void test_await_many_waiters(void **state)
{
	(void)state;
	enum { NF = 100, NT = 2 };
	static struct aw a[NF + NT];
	weft_fiber_t fib[NF];
	wt_thread_t th[NT];
	for (int round = 0; round < 2; round++) {
		weft_future_t *f = make_future();
		for (int i = 0; i < NF + NT; i++)
			aw_init(&a[i], f, far());
		for (int i = 0; i < NF; i++)
			fib[i] = wt_spawn(do_await, &a[i]);
		for (int i = 0; i < NT; i++)
			th[i] = wt_thread_start(do_await, &a[NF + i]);
		for (int i = 0; i < NF + NT; i++)
			assert_true(wt_wait_flag(&a[i].started));
		wt_let_workers_sleep(); /* so that the settle must wake them */
		int64_t by = weft_now() + WAKE_NS;
		if (round == 0)
			assert_int_equal(weft_future_resolve(f, VAL(0x777)), 0);
		else
			assert_int_equal(weft_future_reject(f, -ECONNRESET), 0);
		for (int i = 0; i < NF; i++)
			join_by(fib[i], by);
		for (int i = 0; i < NT; i++)
			wt_thread_join(th[i]);
		for (int i = 0; i < NF + NT; i++) {
			assert_true(a[i].after < by);
			if (round == 0) {
				assert_int_equal(a[i].r, 0);
				assert_ptr_equal(a[i].v, VAL(0x777));
			} else {
				assert_int_equal(a[i].r, -ECONNRESET);
			}
		}
		weft_future_release(f);
	}
}

struct settler {
	weft_future_t *f;
	int delay_ms;
	int r;
	int64_t at; /* when it settled */
};

static void *resolve_later(void *arg)
{
	struct settler *s = arg;
	weft_sleep_until(wt_ms(s->delay_ms));
	s->at = weft_now();
	s->r = weft_future_resolve(s->f, VAL(0xf1b));
	return NULL;
}

/* From a plain thread: once the workers sleep, so that the settle must
 * wake one. */
static void *resolve_asleep(void *arg)
{
	struct settler *s = arg;
	wt_let_workers_sleep();
	s->at = weft_now();
	s->r = weft_future_resolve(s->f, VAL(0xf1b));
	return NULL;
}

static void test_await_thread_fiber_resolves(void **state)
{
	(void)state;
	/* A plain thread waits; a fiber settles. */
	weft_future_t *f = make_future();
	static struct aw a;
	static struct settler s;
	aw_init(&a, f, far());
	s = (struct settler){.f = f, .delay_ms = 20, .r = 1};
	wt_thread_t t;
	t = wt_thread_start(do_await, &a);
	weft_fiber_t fs = wt_spawn(resolve_later, &s);
	wt_join(fs);
	wt_thread_join(t);
	assert_int_equal(s.r, 0);
	assert_int_equal(a.r, 0);
	assert_true(a.after < s.at + WAKE_NS);
	assert_ptr_equal(a.v, VAL(0xf1b));
	weft_future_release(f);

	/* A fiber waits; a plain thread settles. */
	f = make_future();
	aw_init(&a, f, far());
	s = (struct settler){.f = f, .delay_ms = 20, .r = 1};
	weft_fiber_t fa = wt_spawn(do_await, &a);
	assert_true(wt_wait_flag(&a.started));
	t = wt_thread_start(resolve_asleep, &s);
	wt_thread_join(t);
	join_by(fa, s.at + WAKE_NS);
	assert_int_equal(s.r, 0);
	assert_int_equal(a.r, 0);
	assert_ptr_equal(a.v, VAL(0xf1b));
	weft_future_release(f);
}

/* A plain thread that waits again, or ends, as soon as its wait returns:
 * the waker must be done with the thread's stand-in record (thread-local,
 * gone with the thread) once the thread can see the wake. (A waker that
 * read the record after releasing the thread was reported by TSan as a
 * race with the thread's next wait, in test_chan's
 * test_cancel_races_recv; this test did not catch that one itself.) */
#define WAKES 8

struct wakes {
	weft_future_t *f[WAKES];
	int r[WAKES];
	void *v[WAKES];
};

static void *await_each(void *arg)
{
	struct wakes *x = arg;
	for (int i = 0; i < WAKES; i++)
		x->r[i] = weft_future_await(x->f[i], far(), &x->v[i]);
	return NULL;
}

static void *resolve_each(void *arg)
{
	struct wakes *x = arg;
	intptr_t bad = 0;
	for (int i = 0; i < WAKES; i++) {
		/* Mostly after the thread has parked (it holds either way). */
		weft_sleep_until(wt_ms(1));
		bad += weft_future_resolve(x->f[i], VAL(i + 1)) != 0;
	}
	return (void *)bad;
}

static void test_thread_ends_right_after_its_wake(void **state)
{
	(void)state;
	long rounds = scaled(50, 10);
	static struct wakes x;
	for (long n = 0; n < rounds; n++) {
		for (int i = 0; i < WAKES; i++) {
			x.f[i] = make_future();
			x.r[i] = 1;
			x.v[i] = NULL;
		}
		wt_thread_t t = wt_thread_start(await_each, &x);
		weft_fiber_t fs = wt_spawn(resolve_each, &x);
		wt_thread_join(t);
		assert_int_equal((intptr_t)wt_join(fs), 0);
		for (int i = 0; i < WAKES; i++) {
			assert_int_equal(x.r[i], 0);
			assert_ptr_equal(x.v[i], VAL(i + 1));
			weft_future_release(x.f[i]);
		}
	}
}

static void *await_settled(void *arg)
{
	weft_future_t **fs = arg;
	void *v = NULL;
	intptr_t bad = 0;
	/* Settled: deadline 0 (or past) is enough, the value is there. */
	if (weft_future_await(fs[0], 0, &v) != 0 || v != VAL(3))
		bad |= 1;
	v = NULL;
	if (weft_future_await(fs[0], weft_now() - 1, &v) != 0 || v != VAL(3))
		bad |= 2;
	if (weft_future_await(fs[1], 0, &v) != -EPERM)
		bad |= 4;
	for (int i = 0; i < 1000; i++)
		if (weft_future_await(fs[0], 0, NULL) != 0)
			bad |= 8;
	return (void *)bad;
}

static void test_await_settled_at_once(void **state)
{
	(void)state;
	static weft_future_t *fs[2];
	fs[0] = make_future();
	fs[1] = make_future();
	assert_int_equal(weft_future_resolve(fs[0], VAL(3)), 0);
	assert_int_equal(weft_future_reject(fs[1], -EPERM), 0);
	assert_ptr_equal(wt_join(wt_spawn(await_settled, fs)), VAL(0));
	weft_future_release(fs[0]);
	weft_future_release(fs[1]);
}

/* ---- Cancellation ------------------------------------------------------- */

struct cancel_aw {
	weft_future_t *f;
	int r1, r2, r3;
	void *v3;
	_Atomic int started, second_done;
};

static void *cancel_await_fiber(void *arg)
{
	struct cancel_aw *x = arg;
	atomic_store(&x->started, 1);
	x->r1 = weft_future_await(x->f, far(), NULL);     /* cancelled */
	x->r2 = weft_future_await(x->f, wt_ms(20), NULL); /* once: this times out */
	atomic_store(&x->second_done, 1);
	x->r3 = weft_future_await(x->f, far(), &x->v3); /* resolved */
	return NULL;
}

static void test_cancel_awaiting_fiber(void **state)
{
	(void)state;
	static struct cancel_aw x;
	static struct aw other;
	memset(&x, 0, sizeof x);
	x.f = make_future();
	x.r1 = x.r2 = x.r3 = 1;
	aw_init(&other, x.f, far());
	weft_fiber_t f = wt_spawn(cancel_await_fiber, &x);
	weft_fiber_t g = wt_spawn(do_await, &other);
	assert_true(wt_wait_flag(&x.started));
	assert_true(wt_wait_flag(&other.started));
	wt_let_workers_sleep(); /* so that each wake below must wake one */
	int64_t by = weft_now() + WAKE_NS;
	assert_int_equal(weft_fiber_cancel(f), 0);
	while (!atomic_load(&x.second_done) && weft_now() < by)
		weft_sleep_until(wt_ms(1));
	assert_true(atomic_load(&x.second_done));
	wt_let_workers_sleep();
	by = weft_now() + WAKE_NS;
	assert_int_equal(weft_future_resolve(x.f, VAL(0xc)), 0);
	join_by(f, by);
	join_by(g, by);
	assert_int_equal(x.r1, -ECANCELED);
	assert_int_equal(x.r2, -ETIMEDOUT);
	assert_int_equal(x.r3, 0);
	assert_ptr_equal(x.v3, VAL(0xc));
	/* The other waiter was not disturbed. */
	assert_int_equal(other.r, 0);
	assert_ptr_equal(other.v, VAL(0xc));
	weft_future_release(x.f);
}

/* Cancellation racing with the resolve that completes the await: delivered
 * exactly once, either by the await or at the next suspension point. */
struct race {
	weft_future_t *f;
	int r1, later_cancels;
	void *v;
	_Atomic int phase, returned;
};

static void *race_await(void *arg)
{
	struct race *x = arg;
	x->r1 = weft_future_await(x->f, far(), &x->v);
	atomic_store(&x->returned, 1);
	x->later_cancels += wt_yield_count_cancels(&x->phase);
	return NULL;
}

static void test_cancel_races_resolve(void **state)
{
	(void)state;
	long iters = scaled(2000, 200);
	static struct race x;
	long resolved = 0, cancelled = 0;
	for (long i = 0; i < iters; i++) {
		memset(&x, 0, sizeof x);
		x.f = make_future();
		x.r1 = 1;
		weft_fiber_t f = wt_spawn_named(race_await, &x, "racer");
		for (long k = 0; k < (i % 7) * 50; k++)
			atomic_signal_fence(memory_order_seq_cst); /* vary the timing */
		if (i < 2) {
			/* Each side forced once: the await is parked, then the
			 * resolve surely lands first (0: the cancellation waits
			 * for the next suspension point), or the cancellation
			 * does and the await has returned before the resolve. */
			assert_true(wt_wait_parked("racer", "future"));
			if (i == 0) {
				assert_int_equal(weft_future_resolve(x.f, VAL(i + 1)), 0);
				assert_int_equal(weft_fiber_cancel(f), 0);
			} else {
				assert_int_equal(weft_fiber_cancel(f), 0);
				assert_true(wt_wait_flag(&x.returned));
				assert_int_equal(weft_future_resolve(x.f, VAL(i + 1)), 0);
			}
		} else if (i & 1) {
			assert_int_equal(weft_future_resolve(x.f, VAL(i + 1)), 0);
			assert_int_equal(weft_fiber_cancel(f), 0);
		} else {
			assert_int_equal(weft_fiber_cancel(f), 0);
			assert_int_equal(weft_future_resolve(x.f, VAL(i + 1)), 0);
		}
		atomic_store(&x.phase, 1);
		join_by(f, wt_ms(WT_WAKE_MS));
		assert_int_equal((x.r1 == -ECANCELED) + x.later_cancels, 1);
		if (i < 2)
			assert_int_equal(x.r1, i == 0 ? 0 : -ECANCELED);
		if (x.r1 == 0) {
			resolved++;
			assert_ptr_equal(x.v, VAL(i + 1));
		} else {
			cancelled++;
			assert_int_equal(x.r1, -ECANCELED);
		}
		weft_future_release(x.f);
	}
	print_message("resolved %ld, cancelled %ld\n", resolved, cancelled);
	assert_int_equal(resolved + cancelled, iters);
	assert_true(resolved >= 1 && cancelled >= 1); /* both sides were raced */
}

/* Resolve racing with awaits' deadlines: each await gets the value or times
 * out at (not before) its deadline, nothing else. */
static void test_resolve_races_timeouts(void **state)
{
	(void)state;
	enum { NF = 8 };
	long rounds = scaled(300, 40);
	static struct aw a[NF];
	weft_fiber_t fib[NF];
	long got = 0, timed_out = 0;
	uint64_t rng = 99;
	for (long round = 0; round < rounds; round++) {
		weft_future_t *f = make_future();
		for (int i = 0; i < NF; i++) {
			rng = rng * 6364136223846793005ull + 1442695040888963407ull;
			aw_init(&a[i], f, weft_deadline_in((int64_t)((rng >> 33) % 300) * 1000));
			fib[i] = wt_spawn(do_await, &a[i]);
		}
		weft_sleep_until(weft_deadline_in((int64_t)(round % 150) * 1000));
		assert_int_equal(weft_future_resolve(f, VAL(round + 1)), 0);
		for (int i = 0; i < NF; i++) {
			wt_join(fib[i]);
			if (a[i].r == 0) {
				got++;
				assert_ptr_equal(a[i].v, VAL(round + 1));
			} else {
				timed_out++;
				assert_int_equal(a[i].r, -ETIMEDOUT);
				assert_true(a[i].after >= a[i].deadline);
			}
		}
		void *v = NULL;
		assert_int_equal(weft_future_await(f, 0, &v), 0);
		assert_ptr_equal(v, VAL(round + 1));
		weft_future_release(f);
	}
	assert_int_equal(got + timed_out, rounds * NF);
}

/* ---- References --------------------------------------------------------- */

struct holder {
	weft_future_t *f; /* its own reference, dropped after resolving */
	_Atomic int *go;
	int r;
};

static void *resolve_and_release(void *arg)
{
	struct holder *h = arg;
	wt_wait_flag(h->go);
	weft_sleep_until(wt_ms(20));
	h->r = weft_future_resolve(h->f, VAL(0xfeed));
	weft_future_release(h->f);
	return NULL;
}

static void test_release_while_awaiting(void **state)
{
	(void)state;
	static _Atomic int go;
	static struct aw a;
	static struct holder h;
	atomic_store(&go, 0);
	weft_future_t *f = make_future(); /* the creator's reference */
	h = (struct holder){weft_future_retain(f), &go, 1};
	assert_ptr_equal(h.f, f);
	aw_init(&a, f, far()); /* the awaiter takes none */
	weft_fiber_t fa = wt_spawn_named(do_await, &a, "awaiter");
	weft_fiber_t fh = wt_spawn(resolve_and_release, &h);
	assert_true(wt_wait_parked("awaiter", "future"));
	weft_future_release(f); /* the creator lets go */
	atomic_store(&go, 1);   /* the other holder settles and lets go */
	wt_join(fh);
	wt_join(fa);
	assert_int_equal(h.r, 0);
	assert_int_equal(a.r, 0);
	assert_ptr_equal(a.v, VAL(0xfeed));
}

static void test_retain_release_balance(void **state)
{
	(void)state;
	weft_future_t *f = make_future();
	for (int i = 0; i < 10; i++)
		assert_ptr_equal(weft_future_retain(f), f);
	for (int i = 0; i < 10; i++)
		weft_future_release(f);
	/* Still alive with the creator's reference. */
	assert_int_equal(weft_future_resolve(f, VAL(4)), 0);
	void *v = NULL;
	assert_int_equal(weft_future_await(f, 0, &v), 0);
	assert_ptr_equal(v, VAL(4));
	weft_future_release(f);
}

/* ---- Fibers are futures ------------------------------------------------- */

static void *return_arg(void *arg) { return arg; }

static __attribute__((noinline)) void exit_deep(int depth, void *result)
{
	if (depth == 0)
		weft_fiber_exit(result);
	else
		exit_deep(depth - 1, result);
}

static void *exit_arg(void *arg)
{
	exit_deep(5, arg);
	return VAL(0xdead); /* not reached */
}

static void test_join_returns_result(void **state)
{
	(void)state;
	assert_ptr_equal(wt_join(wt_spawn(return_arg, VAL(0xabc))), VAL(0xabc));
	assert_ptr_equal(wt_join(wt_spawn(return_arg, NULL)), NULL);
	assert_ptr_equal(wt_join(wt_spawn(exit_arg, VAL(0xdef))), VAL(0xdef));
}

struct gated {
	weft_future_t *go;
	int r;
};

static void *await_then_sleep(void *arg)
{
	struct gated *g = arg;
	/* Not far(): with the join below unbounded, a lost wake shows as
	 * this deadline's rescue, after WT_WAKE_MS. */
	g->r = weft_future_await(g->go, wt_ms(LONG_MS), NULL);
	weft_sleep_until(wt_ms(20));
	return VAL(0x5eed);
}

static void test_join_awaits(void **state)
{
	(void)state;
	static struct gated g;
	g = (struct gated){make_future(), 1};
	weft_fiber_t f = wt_spawn(await_then_sleep, &g);
	void *r = NULL;
	/* It cannot have finished: it waits for go. */
	assert_int_equal(weft_fiber_join(f, 0, &r, NULL), -ETIMEDOUT);
	int64_t dl = wt_ms(20);
	assert_int_equal(weft_fiber_join(f, dl, &r, NULL), -ETIMEDOUT);
	assert_true(weft_now() >= dl);
	/* It sleeps, then returns: join waits for that. */
	wt_let_workers_sleep(); /* so that the resolve must wake one */
	int64_t resolved = weft_now();
	assert_int_equal(weft_future_resolve(g.go, NULL), 0);
	assert_int_equal(weft_fiber_join(f, -1, &r, NULL), 0);
	assert_true(weft_now() < resolved + WAKE_NS);
	assert_ptr_equal(r, VAL(0x5eed));
	assert_int_equal(g.r, 0);
	assert_int_equal(weft_fiber_join(f, 0, &r, NULL), -ESRCH);
	weft_future_release(g.go);
}

static void *join_from_fiber(void *arg)
{
	weft_fiber_t f = 0;
	if (weft_fiber_spawn(&f, NULL, return_arg, arg) != 0)
		return VAL(1);
	void *r = NULL;
	if (weft_fiber_join(f, far(), &r, NULL) != 0)
		return VAL(2);
	return r;
}

static void test_join_from_fiber(void **state)
{
	(void)state;
	assert_ptr_equal(wt_join(wt_spawn(join_from_fiber, VAL(0x77))), VAL(0x77));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_create_null_out),
		cmocka_unit_test(test_check_null_args),
		cmocka_unit_test(test_await_resolved_value),
		cmocka_unit_test(test_await_rejected_error),
		cmocka_unit_test(test_reject_nonnegative_fails),
		cmocka_unit_test(test_settle_twice_keeps_first),
		cmocka_unit_test(test_await_try_pending_times_out),
		cmocka_unit_test(test_await_deadline_times_out),
		cmocka_unit_test(test_await_many_waiters),
		cmocka_unit_test(test_await_thread_fiber_resolves),
		cmocka_unit_test(test_thread_ends_right_after_its_wake),
		cmocka_unit_test(test_await_settled_at_once),
		cmocka_unit_test(test_cancel_awaiting_fiber),
		cmocka_unit_test(test_cancel_races_resolve),
		cmocka_unit_test(test_resolve_races_timeouts),
		cmocka_unit_test(test_release_while_awaiting),
		cmocka_unit_test(test_retain_release_balance),
		cmocka_unit_test(test_join_returns_result),
		cmocka_unit_test(test_join_awaits),
		cmocka_unit_test(test_join_from_fiber),
	};
	return WT_MAIN("future", tests, wt_start, wt_stop);
}
