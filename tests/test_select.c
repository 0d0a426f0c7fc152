/* SPDX-License-Identifier: MIT */
/* select over channel sends and receives, futures and a deadline: bad
 * arguments, ready cases, waiting cases, closed channels, deadlines,
 * cancellation, fairness among ready cases, and rendezvous channels where a
 * select completed by one case must never be handed an element by another. */
#include <stdatomic.h>
#include <string.h>

#include "testutil.h"

#include "sleepers.h"

static int64_t far(void) { return wt_ms(WT_WAIT_MS); }

static long scaled(long native, long sanitized) { return wt_sanitized() ? sanitized : native; }

#define VAL(n) ((void *)(uintptr_t)(n))

static weft_chan_t *make_chan(size_t cap)
{
	weft_chan_t *c = NULL;
	assert_int_equal(weft_chan_create(&c, sizeof(long), cap), 0);
	return c;
}

static weft_future_t *make_future(void)
{
	weft_future_t *f = NULL;
	assert_int_equal(weft_future_create(&f), 0);
	return f;
}

static weft_select_case_t send_case(weft_chan_t *c, long *v)
{
	return (weft_select_case_t){.op = WEFT_SELECT_SEND, .chan = c, .elem = v, .result = 1};
}

static weft_select_case_t recv_case(weft_chan_t *c, long *v)
{
	return (weft_select_case_t){.op = WEFT_SELECT_RECV, .chan = c, .elem = v, .result = 1};
}

static weft_select_case_t future_case(weft_future_t *f)
{
	return (weft_select_case_t){.op = WEFT_SELECT_FUTURE, .future = f, .result = 1};
}

/* Nobody is left queued on c: a rendezvous send or receive that tries once
 * finds no partner. */
static void assert_no_waiters(weft_chan_t *c)
{
	long v = 0;
	assert_int_equal(weft_chan_send(c, &v, 0), -ETIMEDOUT);
	assert_int_equal(weft_chan_recv(c, &v, 0), -ETIMEDOUT);
}

/* ---- Arguments ---------------------------------------------------------- */

static void test_select_bad_args(void **state)
{
	(void)state;
	weft_chan_t *c = make_chan(1);
	long v = 5;
	weft_select_case_t cs[2];
	assert_int_equal(weft_select(NULL, 1, 0), -EINVAL);
	cs[0] = recv_case(c, &v);
	cs[1] = (weft_select_case_t){.op = 42};
	assert_int_equal(weft_select(cs, 2, far()), -EINVAL);
	cs[1] = recv_case(NULL, &v);
	assert_int_equal(weft_select(cs, 2, far()), -EINVAL);
	cs[1] = send_case(c, NULL);
	assert_int_equal(weft_select(cs, 2, far()), -EINVAL);
	cs[1] = future_case(NULL);
	assert_int_equal(weft_select(cs, 2, far()), -EINVAL);
	/* A bad case anywhere fails the call before anything is done. */
	cs[0] = send_case(c, &v);
	cs[1] = (weft_select_case_t){.op = -1};
	assert_int_equal(weft_select(cs, 2, far()), -EINVAL);
	assert_int_equal(weft_chan_len(c), 0);
	weft_chan_destroy(c);
}

static void test_select_no_cases_waits_for_deadline(void **state)
{
	(void)state;
	assert_int_equal(weft_select(NULL, 0, 0), -ETIMEDOUT);
	int64_t dl = wt_ms(10);
	assert_int_equal(weft_select(NULL, 0, dl), -ETIMEDOUT);
	assert_true(weft_now() >= dl);
	/* Only empty cases: the same. */
	weft_select_case_t cs[3] = {
		{.op = WEFT_SELECT_NONE}, {.op = WEFT_SELECT_NONE}, {.op = WEFT_SELECT_NONE}};
	dl = wt_ms(10);
	assert_int_equal(weft_select(cs, 3, dl), -ETIMEDOUT);
	assert_true(weft_now() >= dl);
}

/* ---- Ready at once ------------------------------------------------------ */

static void test_select_ready_cases(void **state)
{
	(void)state;
	weft_chan_t *a = make_chan(2), *b = make_chan(2);
	weft_future_t *f = make_future();
	long x = 0, y = 7;
	/* Only the send can proceed. */
	weft_select_case_t cs[4] = {
		recv_case(a, &x), {.op = WEFT_SELECT_NONE}, send_case(b, &y), future_case(f)};
	assert_int_equal(weft_select(cs, 4, 0), 2);
	assert_int_equal(cs[2].result, 0);
	assert_int_equal(weft_chan_len(b), 1);
	assert_int_equal(weft_chan_len(a), 0);
	/* Only the receive. */
	long z = 99;
	assert_int_equal(weft_chan_send(a, &z, 0), 0);
	weft_select_case_t cs2[2] = {recv_case(a, &x), future_case(f)};
	assert_int_equal(weft_select(cs2, 2, far()), 0);
	assert_int_equal(cs2[0].result, 0);
	assert_int_equal(x, 99);
	/* Only the future, resolved, then rejected. */
	assert_int_equal(weft_future_resolve(f, VAL(0xf00)), 0);
	assert_int_equal(weft_select(cs2, 2, 0), 1);
	assert_int_equal(cs2[1].result, 0);
	assert_ptr_equal(cs2[1].value, VAL(0xf00));
	weft_future_t *g = make_future();
	assert_int_equal(weft_future_reject(g, -EIO), 0);
	cs2[1] = future_case(g);
	cs2[1].value = VAL(1);
	assert_int_equal(weft_select(cs2, 2, 0), 1);
	assert_int_equal(cs2[1].result, -EIO);
	assert_ptr_equal(cs2[1].value, VAL(1));
	/* Nothing ready, deadline 0: nothing done, nothing queued. */
	weft_chan_t *r = make_chan(0);
	weft_select_case_t cs3[2] = {recv_case(r, &x), send_case(r, &y)};
	assert_int_equal(weft_select(cs3, 2, 0), -ETIMEDOUT);
	assert_int_equal(weft_select(cs3, 2, weft_now() - 1), -ETIMEDOUT);
	assert_no_waiters(r);
	weft_chan_destroy(a);
	weft_chan_destroy(b);
	weft_chan_destroy(r);
	weft_future_release(f);
	weft_future_release(g);
}

static void test_select_closed_channel_ready(void **state)
{
	(void)state;
	weft_chan_t *c = make_chan(2), *d = make_chan(0);
	long x = 0, y = 3;
	assert_int_equal(weft_chan_send(c, &y, 0), 0);
	assert_int_equal(weft_chan_close(c), 0);
	weft_select_case_t cs[2] = {recv_case(c, &x), recv_case(d, &x)};
	/* Drains what is buffered first, then -EPIPE. */
	assert_int_equal(weft_select(cs, 2, far()), 0);
	assert_int_equal(cs[0].result, 0);
	assert_int_equal(x, 3);
	assert_int_equal(weft_select(cs, 2, far()), 0);
	assert_int_equal(cs[0].result, -EPIPE);
	/* A send on a closed channel is ready too, with -EPIPE. */
	weft_select_case_t cs2[2] = {recv_case(d, &x), send_case(c, &y)};
	assert_int_equal(weft_select(cs2, 2, far()), 1);
	assert_int_equal(cs2[1].result, -EPIPE);
	assert_no_waiters(d);
	weft_chan_destroy(c);
	weft_chan_destroy(d);
}

/* ---- Waiting ------------------------------------------------------------ */

struct sel {
	weft_select_case_t cs[4];
	size_t n;
	int64_t deadline, after;
	long buf[4];
	int r;
	_Atomic int started;
};

static void *do_select(void *arg)
{
	struct sel *s = arg;
	atomic_store(&s->started, 1);
	s->r = weft_select(s->cs, s->n, s->deadline);
	s->after = weft_now();
	return NULL;
}

/* Until the select is under way: a fiber is seen parked in it; a plain
 * thread's wait shows nowhere, so it may still be on its way in (either
 * order is correct, the fiber's is the one the test is sure of). Then
 * until the workers sleep, so that what completes the select must wake
 * one. */
static void settle(_Atomic int *started, int fiber)
{
	assert_true(wt_wait_flag(started));
	if (fiber)
		assert_true(wt_wait_parked("select", "select"));
	wt_let_workers_sleep();
}

static void test_select_waits_for_any_case(void **state)
{
	(void)state;
	static struct sel s;
	/* Each of the four cases completes it in turn, from a fiber and from
	 * a plain thread; the other three are withdrawn. */
	for (int thread = 0; thread < 2; thread++) {
		for (int which = 0; which < 4; which++) {
			weft_chan_t *a = make_chan(0), *b = make_chan(0), *c = make_chan(1);
			weft_future_t *f = make_future();
			long full = 1;
			assert_int_equal(weft_chan_send(c, &full, 0), 0); /* c is full */
			memset(&s, 0, sizeof s);
			s.buf[2] = 0x5e;
			s.cs[0] = recv_case(a, &s.buf[0]);
			s.cs[1] = recv_case(b, &s.buf[1]);
			s.cs[2] = send_case(c, &s.buf[2]);
			s.cs[3] = future_case(f);
			s.n = 4;
			s.deadline = far();
			s.r = -1000;
			weft_fiber_t fib = 0;
			wt_thread_t t = NULL;
			if (thread)
				t = wt_thread_start(do_select, &s);
			else
				fib = wt_spawn_named(do_select, &s, "select");
			settle(&s.started, !thread);
			int64_t woken = weft_now();
			long v = 40 + which, got = 0;
			switch (which) {
			case 0:
				assert_int_equal(weft_chan_send(a, &v, far()), 0);
				break;
			case 1:
				assert_int_equal(weft_chan_send(b, &v, far()), 0);
				break;
			case 2:
				assert_int_equal(weft_chan_recv(c, &got, far()), 0);
				assert_int_equal(got, 1);
				break;
			case 3:
				assert_int_equal(weft_future_resolve(f, VAL(v)), 0);
				break;
			}
			if (thread)
				wt_thread_join(t);
			else
				wt_join_soon(fib);
			assert_true(s.after < woken + WT_WAKE_MS * 1000000LL);
			assert_int_equal(s.r, which);
			assert_int_equal(s.cs[which].result, 0);
			if (which < 2)
				assert_int_equal(s.buf[which], v);
			if (which == 2) { /* the selected send moved into the ring */
				assert_int_equal(weft_chan_recv(c, &got, 0), 0);
				assert_int_equal(got, 0x5e);
			}
			if (which == 3)
				assert_ptr_equal(s.cs[3].value, VAL(v));
			assert_no_waiters(a);
			assert_no_waiters(b);
			weft_chan_destroy(a);
			weft_chan_destroy(b);
			weft_chan_destroy(c);
			weft_future_release(f);
		}
	}
}

static void test_select_close_wakes(void **state)
{
	(void)state;
	static struct sel s;
	weft_chan_t *a = make_chan(0), *b = make_chan(0);
	memset(&s, 0, sizeof s);
	s.cs[0] = recv_case(a, &s.buf[0]);
	s.cs[1] = send_case(b, &s.buf[1]);
	s.n = 2;
	s.deadline = far();
	weft_fiber_t f = wt_spawn_named(do_select, &s, "select");
	settle(&s.started, 1);
	assert_int_equal(weft_chan_close(b), 0);
	wt_join_soon(f);
	assert_int_equal(s.r, 1);
	assert_int_equal(s.cs[1].result, -EPIPE);
	assert_no_waiters(a);
	weft_chan_destroy(a);
	weft_chan_destroy(b);
}

static void test_select_deadline(void **state)
{
	(void)state;
	static struct sel s;
	weft_chan_t *a = make_chan(0);
	weft_future_t *f = make_future();
	memset(&s, 0, sizeof s);
	s.cs[0] = recv_case(a, &s.buf[0]);
	s.cs[1] = send_case(a, &s.buf[1]); /* cannot pair with itself */
	s.cs[2] = future_case(f);
	s.n = 3;
	s.deadline = wt_ms(20);
	wt_join(wt_spawn_named(do_select, &s, "select"));
	assert_int_equal(s.r, -ETIMEDOUT);
	assert_true(s.after >= s.deadline);
	assert_no_waiters(a);
	/* The future's waiter is gone too: it settles, and a new select sees it. */
	assert_int_equal(weft_future_resolve(f, VAL(1)), 0);
	assert_int_equal(weft_select(s.cs, 3, 0), 2);
	weft_chan_destroy(a);
	weft_future_release(f);
}

static void test_select_send_recv_same_channel(void **state)
{
	(void)state;
	/* One select both sends and receives on a rendezvous channel: another
	 * party completes one of them, never the select with itself. */
	static struct sel s;
	weft_chan_t *a = make_chan(0);
	for (int round = 0; round < 2; round++) {
		memset(&s, 0, sizeof s);
		s.buf[1] = 77;
		s.cs[0] = recv_case(a, &s.buf[0]);
		s.cs[1] = send_case(a, &s.buf[1]);
		s.n = 2;
		s.deadline = far();
		weft_fiber_t f = wt_spawn_named(do_select, &s, "select");
		settle(&s.started, 1);
		long v = 5;
		if (round == 0) {
			assert_int_equal(weft_chan_send(a, &v, far()), 0);
		} else {
			assert_int_equal(weft_chan_recv(a, &v, far()), 0);
			assert_int_equal(v, 77);
		}
		wt_join_soon(f);
		assert_int_equal(s.r, round);
		if (round == 0)
			assert_int_equal(s.buf[0], 5);
		assert_no_waiters(a);
	}
	weft_chan_destroy(a);
}

/* ---- Cancellation ------------------------------------------------------- */

static void test_select_cancelled(void **state)
{
	(void)state;
	static struct sel s;
	weft_chan_t *a = make_chan(0);
	weft_future_t *f = make_future();
	memset(&s, 0, sizeof s);
	s.cs[0] = recv_case(a, &s.buf[0]);
	s.cs[1] = future_case(f);
	s.n = 2;
	s.deadline = far();
	weft_fiber_t fib = wt_spawn_named(do_select, &s, "select");
	settle(&s.started, 1);
	assert_int_equal(weft_fiber_cancel(fib), 0);
	wt_join_soon(fib);
	assert_int_equal(s.r, -ECANCELED); /* not -ETIMEDOUT: the request ended it */
	assert_no_waiters(a);
	assert_int_equal(weft_future_await(f, 0, NULL), -ETIMEDOUT); /* untouched */
	weft_chan_destroy(a);
	weft_future_release(f);
}

/* Cancellation racing with the send that completes the select: delivered
 * exactly once; the element goes either to the select or, when the select
 * was cancelled, stays for the main thread to receive: never both, never
 * lost. */
struct crace {
	weft_chan_t *a, *b;
	long got, v;
	int r, later, sr;
	_Atomic int phase, started, sending, returned, sent;
};

static void *crace_fiber(void *arg)
{
	struct crace *x = arg;
	weft_select_case_t cs[2] = {recv_case(x->a, &x->got), recv_case(x->b, &x->got)};
	atomic_store(&x->started, 1);
	x->r = weft_select(cs, 2, far());
	atomic_store(&x->returned, 1);
	x->later = wt_yield_count_cancels(&x->phase);
	return NULL;
}

static void *crace_send(void *arg)
{
	struct crace *x = arg;
	atomic_store(&x->sending, 1);
	x->sr = weft_chan_send(x->b, &x->v, far());
	atomic_store(&x->sent, 1);
	return NULL;
}

static void test_select_cancel_races_send(void **state)
{
	(void)state;
	long iters = scaled(1000, 100);
	static struct crace x;
	weft_chan_t *a = make_chan(0), *b = make_chan(0);
	long got = 0, cancelled = 0;
	for (long i = 0; i < iters; i++) {
		memset(&x, 0, sizeof x);
		x.a = a;
		x.b = b;
		x.r = -1000;
		x.sr = 1;
		x.got = -1;
		x.v = i;
		weft_fiber_t f = wt_spawn_named(crace_fiber, &x, "racer"), s;
		/* Vary the timing: sometimes the select is under way first,
		 * sometimes the send has a head start over the cancel. */
		if (i & 2)
			while (!atomic_load(&x.started))
				wt_thread_yield();
		for (long k = 0; k < (i % 7) * 50; k++)
			atomic_signal_fence(memory_order_seq_cst);
		if (i < 2) {
			/* Each side forced once, the select parked: the send
			 * surely lands first (a rendezvous with the parked
			 * select: it has returned before the cancellation), or
			 * the cancellation does and the select has returned
			 * before the sender starts. */
			assert_true(wt_wait_parked("racer", "select"));
			if (i == 0) {
				s = wt_spawn(crace_send, &x);
				assert_true(wt_wait_flag(&x.sent));
				assert_int_equal(weft_fiber_cancel(f), 0);
			} else {
				assert_int_equal(weft_fiber_cancel(f), 0);
				assert_true(wt_wait_flag(&x.returned));
				s = wt_spawn(crace_send, &x);
			}
		} else if (i & 1) {
			s = wt_spawn(crace_send, &x);
			while (!atomic_load(&x.sending))
				wt_thread_yield();
			for (long k = 0; k < (i % 5) * 100; k++)
				atomic_signal_fence(memory_order_seq_cst);
			assert_int_equal(weft_fiber_cancel(f), 0);
		} else {
			assert_int_equal(weft_fiber_cancel(f), 0);
			s = wt_spawn(crace_send, &x);
		}
		atomic_store(&x.phase, 1);
		wt_join_soon(f);
		assert_int_equal((x.r == -ECANCELED) + x.later, 1);
		if (i < 2)
			assert_int_equal(x.r, i == 0 ? 1 : -ECANCELED);
		long v = -1;
		if (x.r == 1) {
			got++;
			assert_int_equal(x.got, i);
			assert_int_equal(weft_chan_recv(b, &v, 0), -ETIMEDOUT);
		} else {
			cancelled++;
			assert_int_equal(x.r, -ECANCELED);
			assert_int_equal(x.got, -1);
			assert_int_equal(weft_chan_recv(b, &v, far()), 0);
			assert_int_equal(v, i);
		}
		wt_join(s);
		assert_int_equal(x.sr, 0);
		assert_no_waiters(a);
		assert_no_waiters(b);
	}
	print_message("select %ld, cancelled %ld\n", got, cancelled);
	assert_int_equal(got + cancelled, iters);
	assert_true(got >= 1 && cancelled >= 1); /* both sides were raced */
	weft_chan_destroy(a);
	weft_chan_destroy(b);
}

/* ---- Fairness ----------------------------------------------------------- */

/* n selects over ncase receive cases, of which the ones in ready[] always
 * have an element. Counts the choices. */
static void count_choices(size_t ncase, const int *ready, long n, long *hits)
{
	weft_chan_t *c[4];
	long v = 1, buf;
	weft_select_case_t cs[4];
	for (size_t i = 0; i < ncase; i++) {
		c[i] = make_chan(1);
		if (ready[i])
			assert_int_equal(weft_chan_send(c[i], &v, 0), 0);
		cs[i] = recv_case(c[i], &buf);
		hits[i] = 0;
	}
	for (long k = 0; k < n; k++) {
		int r = weft_select(cs, ncase, 0);
		assert_true(r >= 0 && (size_t)r < ncase);
		assert_true(ready[r]);
		assert_int_equal(cs[r].result, 0);
		hits[r]++;
		assert_int_equal(weft_chan_send(c[r], &v, 0), 0); /* ready again */
	}
	for (size_t i = 0; i < ncase; i++)
		weft_chan_destroy(c[i]);
}

/* The bound: each of two ready cases at least 30% of n. For a fair choice
 * the count is Binomial(n, 1/2); Hoeffding gives P(count < 0.3n) <=
 * exp(-2 n 0.2^2): e^-800 for n = 10,000 and e^-80 for the 1,000 the
 * sanitizers run. A choice biased to the first (or to the first after a
 * random start, below) fails it every time. */
static void assert_fair(long hits, long n) { assert_true(hits * 10 >= n * 3); }

static void test_select_fair_two_ready(void **state)
{
	(void)state;
	long n = scaled(10000, 1000);
	long hits[4];
	static const int ready[2] = {1, 1};
	count_choices(2, ready, n, hits);
	print_message("two ready: %ld / %ld\n", hits[0], hits[1]);
	assert_fair(hits[0], n);
	assert_fair(hits[1], n);
}

static void test_select_fair_not_positional(void **state)
{
	(void)state;
	/* Cases 2 and 3 ready: a random starting point scanning in order would
	 * pick case 2 three times in four. */
	long n = scaled(10000, 1000);
	long hits[4];
	static const int ready[4] = {0, 0, 1, 1};
	count_choices(4, ready, n, hits);
	print_message("cases 2, 3 ready: %ld / %ld\n", hits[2], hits[3]);
	assert_fair(hits[2], n);
	assert_fair(hits[3], n);
}

static void test_select_fair_futures(void **state)
{
	(void)state;
	long n = scaled(10000, 1000);
	weft_future_t *f = make_future(), *g = make_future();
	assert_int_equal(weft_future_resolve(f, VAL(1)), 0);
	assert_int_equal(weft_future_reject(g, -EIO), 0);
	weft_select_case_t cs[2] = {future_case(f), future_case(g)};
	long hits[2] = {0, 0};
	for (long k = 0; k < n; k++) {
		int r = weft_select(cs, 2, -1);
		assert_true(r == 0 || r == 1);
		assert_int_equal(cs[r].result, r ? -EIO : 0);
		hits[r]++;
	}
	assert_fair(hits[0], n);
	assert_fair(hits[1], n);
	weft_future_release(f);
	weft_future_release(g);
}

/* ---- Rendezvous: exactly one case completes ----------------------------- */

/* Several selecting receivers over two rendezvous channels and several
 * senders on each: every element sent (the send returned 0) is received by
 * exactly one select, and no select receives twice or loses an element. A
 * sender that chose a waiter of a select already completed by the other
 * channel would report a send nobody received. */
enum { NSEL = 4, NSEND = 4 };

struct rdv {
	weft_chan_t *c[2];
	long per_sender;
	_Atomic long received, sum_recv, sum_sent, sent;
	_Atomic int senders_done;
	int errors;
};

static void *rdv_sender(void *arg)
{
	struct rdv *x = arg;
	static _Atomic long next_id;
	long id = atomic_fetch_add(&next_id, 1);
	weft_chan_t *c = x->c[id & 1];
	for (long i = 0; i < x->per_sender; i++) {
		long v = id * 1000000 + i + 1;
		int r = weft_chan_send(c, &v, far());
		if (r != 0) {
			x->errors++;
			break;
		}
		atomic_fetch_add(&x->sent, 1);
		atomic_fetch_add(&x->sum_sent, v);
	}
	atomic_fetch_add(&x->senders_done, 1);
	return NULL;
}

static void *rdv_selector(void *arg)
{
	struct rdv *x = arg;
	long b0 = 0, b1 = 0;
	weft_select_case_t cs[2] = {recv_case(x->c[0], &b0), recv_case(x->c[1], &b1)};
	for (;;) {
		b0 = b1 = 0;
		int r = weft_select(cs, 2, wt_ms(20));
		if (r == -ETIMEDOUT) {
			if (atomic_load(&x->senders_done) == NSEND)
				break;
			continue;
		}
		if (r < 0 || cs[r].result != 0) {
			x->errors++;
			break;
		}
		long v = r ? b1 : b0;
		if ((r ? b0 : b1) != 0 || v == 0) /* the other buffer is untouched */
			x->errors++;
		atomic_fetch_add(&x->received, 1);
		atomic_fetch_add(&x->sum_recv, v);
	}
	return NULL;
}

static void test_select_rendezvous_exactly_once(void **state)
{
	(void)state;
	static struct rdv x;
	memset(&x, 0, sizeof x);
	x.c[0] = make_chan(0);
	x.c[1] = make_chan(0);
	x.per_sender = scaled(3000, 300);
	weft_fiber_t s[NSEND], r[NSEL];
	wt_thread_t t = wt_thread_start(rdv_selector, &x); /* one is a thread */
	for (int i = 0; i < NSEL - 1; i++)
		r[i] = wt_spawn(rdv_selector, &x);
	for (int i = 0; i < NSEND; i++)
		s[i] = wt_spawn(rdv_sender, &x);
	for (int i = 0; i < NSEND; i++)
		wt_join(s[i]);
	for (int i = 0; i < NSEL - 1; i++)
		wt_join(r[i]);
	wt_thread_join(t);
	assert_int_equal(x.errors, 0);
	assert_int_equal(atomic_load(&x.sent), NSEND * x.per_sender);
	assert_int_equal(atomic_load(&x.received), atomic_load(&x.sent));
	assert_int_equal(atomic_load(&x.sum_recv), atomic_load(&x.sum_sent));
	assert_no_waiters(x.c[0]);
	assert_no_waiters(x.c[1]);
	weft_chan_destroy(x.c[0]);
	weft_chan_destroy(x.c[1]);
}

/* Selects that send on two rendezvous channels, and plain receivers: each
 * received element was sent by exactly one select. */
struct rdv2 {
	weft_chan_t *c[2];
	long per_sel;
	_Atomic long sent, sum_sent, received, sum_recv;
	_Atomic int sel_done;
	int errors;
};

static void *rdv2_selector(void *arg)
{
	struct rdv2 *x = arg;
	static _Atomic long next_id;
	long id = atomic_fetch_add(&next_id, 1);
	for (long i = 0; i < x->per_sel; i++) {
		long v = id * 1000000 + i + 1;
		weft_select_case_t cs[2] = {send_case(x->c[0], &v), send_case(x->c[1], &v)};
		int r = weft_select(cs, 2, far());
		if (r < 0 || cs[r].result != 0) {
			x->errors++;
			break;
		}
		atomic_fetch_add(&x->sent, 1);
		atomic_fetch_add(&x->sum_sent, v);
	}
	atomic_fetch_add(&x->sel_done, 1);
	return NULL;
}

static void *rdv2_receiver(void *arg)
{
	struct rdv2 *x = arg;
	static _Atomic long next_id;
	weft_chan_t *c = x->c[atomic_fetch_add(&next_id, 1) & 1];
	for (;;) {
		long v = 0;
		int r = weft_chan_recv(c, &v, wt_ms(20));
		if (r == -ETIMEDOUT) {
			if (atomic_load(&x->sel_done) == NSEL)
				break;
			continue;
		}
		if (r != 0) {
			x->errors++;
			break;
		}
		atomic_fetch_add(&x->received, 1);
		atomic_fetch_add(&x->sum_recv, v);
	}
	return NULL;
}

static void test_select_send_rendezvous_exactly_once(void **state)
{
	(void)state;
	static struct rdv2 x;
	memset(&x, 0, sizeof x);
	x.c[0] = make_chan(0);
	x.c[1] = make_chan(0);
	x.per_sel = scaled(3000, 300);
	weft_fiber_t s[NSEL], r[NSEND];
	for (int i = 0; i < NSEND; i++)
		r[i] = wt_spawn(rdv2_receiver, &x);
	for (int i = 0; i < NSEL; i++)
		s[i] = wt_spawn(rdv2_selector, &x);
	for (int i = 0; i < NSEL; i++)
		wt_join(s[i]);
	for (int i = 0; i < NSEND; i++)
		wt_join(r[i]);
	assert_int_equal(x.errors, 0);
	assert_int_equal(atomic_load(&x.sent), NSEL * x.per_sel);
	assert_int_equal(atomic_load(&x.received), atomic_load(&x.sent));
	assert_int_equal(atomic_load(&x.sum_recv), atomic_load(&x.sum_sent));
	weft_chan_destroy(x.c[0]);
	weft_chan_destroy(x.c[1]);
}

/* A select on two rendezvous channels whose senders fire in the same
 * instant: one case completes, and the select is woken once (its next wait
 * is undisturbed); the other sender's element is not taken by the select:
 * the main thread receives it afterwards. */
struct pair {
	weft_chan_t *c[2];
	long got;
	int r, r_after;
	weft_future_t *after;
	_Atomic int go, waiting, returned;
	int sr[2];
};

static void *pair_select(void *arg)
{
	struct pair *x = arg;
	weft_select_case_t cs[2] = {recv_case(x->c[0], &x->got), recv_case(x->c[1], &x->got)};
	atomic_store(&x->waiting, 1);
	x->r = weft_select(cs, 2, far());
	atomic_store(&x->returned, 1);
	x->r_after = weft_future_await(x->after, far(), NULL);
	return NULL;
}

static void pair_send(struct pair *x, int i)
{
	long v = i + 1;
	while (!atomic_load(&x->go))
		wt_thread_yield();
	x->sr[i] = weft_chan_send(x->c[i], &v, far());
}

static void *pair_send0(void *arg)
{
	pair_send(arg, 0);
	return NULL;
}

static void *pair_send1(void *arg)
{
	pair_send(arg, 1);
	return NULL;
}

static void test_select_two_senders_together(void **state)
{
	(void)state;
	WT_SIM_SKIP("its plain threads spin until this thread, after a 1 ms sleep, "
		    "says go: the virtual clock holds while a plain thread runs, so "
		    "the sleep never ends");
	/* The senders spin: fewer rounds on one bare-metal hart. */
	long iters = WT_LINUX ? scaled(200, 50) : 50;
	static struct pair x;
	weft_chan_t *c0 = make_chan(0), *c1 = make_chan(0);
	for (long i = 0; i < iters; i++) {
		memset(&x, 0, sizeof x);
		x.c[0] = c0;
		x.c[1] = c1;
		x.r = -1000;
		x.sr[0] = x.sr[1] = 1;
		x.after = make_future();
		weft_fiber_t f = wt_spawn(pair_select, &x);
		wt_thread_t t0 = wt_thread_start(pair_send0, &x);
		wt_thread_t t1 = wt_thread_start(pair_send1, &x);
		while (!atomic_load(&x.waiting))
			wt_thread_yield();
		if (i & 1)
			weft_sleep_until(wt_ms(1));
		atomic_store(&x.go, 1);
		while (!atomic_load(&x.returned))
			wt_thread_yield();
		assert_true(x.r == 0 || x.r == 1);
		assert_int_equal(x.got, x.r + 1);
		/* The other element is still there for us. */
		long v = 0;
		assert_int_equal(weft_chan_recv(x.c[1 - x.r], &v, far()), 0);
		assert_int_equal(v, 2 - x.r);
		wt_thread_join(t0);
		wt_thread_join(t1);
		assert_int_equal(x.sr[0], 0);
		assert_int_equal(x.sr[1], 0);
		assert_int_equal(weft_future_resolve(x.after, NULL), 0);
		wt_join(f);
		assert_int_equal(x.r_after, 0);
		weft_future_release(x.after);
		assert_no_waiters(c0);
		assert_no_waiters(c1);
	}
	weft_chan_destroy(c0);
	weft_chan_destroy(c1);
}

/* More cases than fit on the stack: the main thread (not a fiber) waits on
 * 40 rendezvous channels, a fiber sends on one of them. */
struct late_send {
	weft_chan_t *c;
	long v;
	int r;
};

static void *send_late(void *arg)
{
	struct late_send *l = arg;
	weft_sleep_until(wt_ms(5));
	l->r = weft_chan_send(l->c, &l->v, far());
	return NULL;
}

static void test_select_many_cases(void **state)
{
	(void)state;
	enum { N = 40 };
	weft_chan_t *c[N];
	static weft_select_case_t cs[N];
	static long buf[N];
	for (int i = 0; i < N; i++) {
		c[i] = make_chan(0);
		cs[i] = recv_case(c[i], &buf[i]);
	}
	for (int round = 0; round < 3; round++) {
		int which = (round * 17 + 5) % N;
		static struct late_send l;
		l = (struct late_send){c[which], 1000 + round, 1};
		assert_int_equal(weft_select(cs, N, 0), -ETIMEDOUT);
		weft_fiber_t f = wt_spawn(send_late, &l);
		assert_int_equal(weft_select(cs, N, far()), which);
		wt_join(f);
		assert_int_equal(l.r, 0);
		assert_int_equal(cs[which].result, 0);
		assert_int_equal(buf[which], 1000 + round);
		for (int i = 0; i < N; i++)
			assert_no_waiters(c[i]);
	}
	for (int i = 0; i < N; i++)
		weft_chan_destroy(c[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_select_bad_args),
		cmocka_unit_test(test_select_no_cases_waits_for_deadline),
		cmocka_unit_test(test_select_ready_cases),
		cmocka_unit_test(test_select_closed_channel_ready),
		cmocka_unit_test(test_select_waits_for_any_case),
		cmocka_unit_test(test_select_close_wakes),
		cmocka_unit_test(test_select_deadline),
		cmocka_unit_test(test_select_send_recv_same_channel),
		cmocka_unit_test(test_select_cancelled),
		cmocka_unit_test(test_select_cancel_races_send),
		cmocka_unit_test(test_select_fair_two_ready),
		cmocka_unit_test(test_select_fair_not_positional),
		cmocka_unit_test(test_select_fair_futures),
		cmocka_unit_test(test_select_rendezvous_exactly_once),
		cmocka_unit_test(test_select_send_rendezvous_exactly_once),
		cmocka_unit_test(test_select_two_senders_together),
		cmocka_unit_test(test_select_many_cases),
	};
	return WT_MAIN("select", tests, wt_start, wt_stop);
}
