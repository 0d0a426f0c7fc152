/* SPDX-License-Identifier: MIT */
/* Channels: bad arguments, buffered and rendezvous transfer, close, deadlines,
 * cancellation, races, heavy traffic between fibers, and plain OS threads. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#include "sleepers.h"

/* Every wait is bounded: a bug fails a test instead of hanging the suite. */
#define LONG_MS 10000

static int64_t far(void) { return wt_ms(WT_WAIT_MS); }

/* Sizes: every loop count and volume below goes through scaled(), which
 * shrinks it about 10x under the sanitizers (wt_sanitized), which run about
 * that much slower, and as much under full-system emulation of a Linux
 * kernel (WT_SLOW, set by qemu/run-rv-kernel.sh), where the threads' and
 * fibers' hand-offs go through the emulated kernel's futexes and scheduler:
 * at full size the suite took 109 s of its 120 s bound there on a quiet
 * machine (2026-12-01). */
static long scaled(long native, long sanitized)
{
	return wt_sanitized() || getenv("WT_SLOW") != NULL ? sanitized : native;
}

/* The exchanges that cross threads most, smaller still under WT_SLOW: at the
 * sanitizers' sizes, 200,000 rendezvous, and the threads' 2,000 values,
 * still ran past the suite's 120 s there on a loaded machine (2026-12-02). */
static long scaled_slow(long native, long sanitized, long slow)
{
	return getenv("WT_SLOW") != NULL ? slow : scaled(native, sanitized);
}

static weft_chan_t *make_chan(size_t elem, size_t cap)
{
	weft_chan_t *c = NULL;
	assert_int_equal(weft_chan_create(&c, elem, cap), 0);
	assert_non_null(c);
	return c;
}

/* One side of an exchange: a fiber, or a plain thread. */
struct party {
	int thread;
	weft_fiber_t f;
	wt_thread_t t;
};

static void party_start(struct party *p, int thread, weft_fn fn, void *arg)
{
	p->thread = thread;
	if (thread)
		p->t = wt_thread_start(fn, arg);
	else
		p->f = wt_spawn(fn, arg);
}

static void party_join(struct party *p)
{
	if (p->thread)
		wt_thread_join(p->t);
	else
		wt_join(p->f);
}

/* Let a fiber or thread that has said it is about to block get there, and
 * the workers go to sleep, so that what wakes it must wake a worker too.
 * The outcome asserted never depends on whether it did. */
static void settle(_Atomic int *started)
{
	assert_true(wt_wait_flag(started));
	wt_let_workers_sleep();
}

/* One channel operation, run by a fiber or a plain thread. */
struct op {
	weft_chan_t *c;
	long val; /* sent, or received */
	int64_t deadline;
	int delay_ms;  /* sleep this long first */
	int r;         /* what the call returned */
	int64_t after; /* weft_now() once it returned */
	_Atomic int started;
};

static void op_init(struct op *o, weft_chan_t *c, long val, int64_t deadline)
{
	memset(o, 0, sizeof *o);
	o->c = c;
	o->val = val;
	o->deadline = deadline;
	o->r = 1;
}

static void *do_send(void *arg)
{
	struct op *o = arg;
	if (o->delay_ms)
		weft_sleep_until(wt_ms(o->delay_ms));
	atomic_store(&o->started, 1);
	o->r = weft_chan_send(o->c, &o->val, o->deadline);
	o->after = weft_now();
	return NULL;
}

static void *do_recv(void *arg)
{
	struct op *o = arg;
	if (o->delay_ms)
		weft_sleep_until(wt_ms(o->delay_ms));
	atomic_store(&o->started, 1);
	o->r = weft_chan_recv(o->c, &o->val, o->deadline);
	o->after = weft_now();
	return NULL;
}

/* ---- Arguments ---------------------------------------------------------- */

static void test_create_bad_args(void **state)
{
	(void)state;
	weft_chan_t *c = NULL;
	assert_int_equal(weft_chan_create(NULL, 8, 0), -EINVAL);
	assert_int_equal(weft_chan_create(NULL, 8, 4), -EINVAL);
	assert_int_equal(weft_chan_create(&c, 0, 0), -EINVAL);
	assert_int_equal(weft_chan_create(&c, 0, 4), -EINVAL);
	assert_int_equal(weft_chan_create(&c, 64 * 1024 + 1, 0), -EINVAL);
	assert_int_equal(weft_chan_create(&c, SIZE_MAX, 1), -EINVAL);
	assert_int_equal(weft_chan_create(&c, 8, ((size_t)1 << 24) + 1), -EINVAL);
	assert_int_equal(weft_chan_create(&c, 8, SIZE_MAX), -EINVAL);

	/* The limits themselves are accepted. */
	c = make_chan(64 * 1024, 0);
	weft_chan_destroy(c);
	c = make_chan(1, (size_t)1 << 24);
	assert_int_equal(weft_chan_len(c), 0);
	weft_chan_destroy(c);
}

/* weft_dump_to's text, to see what a fiber waits on. */
static char dump_text[1 << 16];
static size_t dump_len;

static void dump_collect(const char *text, size_t len, void *ctx)
{
	(void)ctx;
	if (len > sizeof dump_text - 1 - dump_len)
		len = sizeof dump_text - 1 - dump_len;
	memcpy(dump_text + dump_len, text, len);
	dump_len += len;
	dump_text[dump_len] = 0;
}

/* Wait (bounded) until some fiber is parked on why. */
static void wait_parked(const char *why)
{
	char want[64];
	snprintf(want, sizeof want, "parked: %s", why);
	int64_t end = wt_ms(LONG_MS);
	for (;;) {
		dump_len = 0;
		assert_true(weft_dump_to(dump_collect, NULL) >= 0);
		if (strstr(dump_text, want))
			return;
		if (weft_now() > end)
			fail_msg("no fiber \"%s\" within %d ms", want, LONG_MS);
		weft_sleep_until(wt_ms(1));
	}
}

static void *recv_forever(void *arg)
{
	weft_chan_t *c = arg;
	int v;
	return (void *)(intptr_t)weft_chan_recv(c, &v, -1);
}

/* destroy refuses while a call is blocked on the channel, frees nothing,
 * and works once the call has returned; destroy(NULL) is a no-op. */
static void test_destroy_busy(void **state)
{
	(void)state;
	assert_int_equal(weft_chan_destroy(NULL), 0);
	weft_chan_t *c = make_chan(sizeof(int), 0);
	weft_fiber_t f;
	assert_int_equal(weft_fiber_spawn(&f, NULL, recv_forever, c), 0);
	wait_parked("chan recv");
	assert_int_equal(weft_chan_destroy(c), -EBUSY);
	/* The channel still works; the close must wake a worker. */
	wt_let_workers_sleep();
	assert_int_equal(weft_chan_close(c), 0);
	void *r;
	assert_int_equal(weft_fiber_join(f, wt_ms(WT_WAKE_MS), &r, NULL), 0);
	assert_int_equal((intptr_t)r, -EPIPE);
	assert_int_equal(weft_chan_destroy(c), 0);
}

static void test_check_null_args(void **state)
{
	(void)state;
	weft_chan_t *c = make_chan(sizeof(long), 2);
	long v = 5;
	assert_int_equal(weft_chan_send(NULL, &v, 0), -EINVAL);
	assert_int_equal(weft_chan_send(NULL, &v, far()), -EINVAL);
	assert_int_equal(weft_chan_send(c, NULL, 0), -EINVAL);
	assert_int_equal(weft_chan_send(c, NULL, far()), -EINVAL);
	assert_int_equal(weft_chan_recv(NULL, &v, 0), -EINVAL);
	assert_int_equal(weft_chan_recv(NULL, &v, far()), -EINVAL);
	assert_int_equal(weft_chan_recv(c, NULL, 0), -EINVAL);
	assert_int_equal(weft_chan_recv(c, NULL, far()), -EINVAL);
	assert_int_equal(weft_chan_close(NULL), -EINVAL);
	/* Nothing was sent or closed by the rejected calls. */
	assert_int_equal(weft_chan_len(c), 0);
	assert_int_equal(weft_chan_send(c, &v, 0), 0);
	assert_int_equal(weft_chan_recv(c, &v, 0), 0);
	assert_int_equal(v, 5);
	weft_chan_destroy(c);
}

/* ---- Buffered ----------------------------------------------------------- */

struct rec {
	uint32_t seq;
	char tag[13]; /* an odd size: exactly elem_size bytes are copied */
};

static void test_keep_fifo_order(void **state)
{
	(void)state;
	enum { CAP = 5, STEPS = 2000 };
	weft_chan_t *c = make_chan(sizeof(struct rec), CAP);
	uint32_t next_send = 0, next_recv = 0, rng = 12345;
	size_t len = 0;
	for (int i = 0; i < STEPS; i++) {
		rng = rng * 1103515245 + 12345;
		struct rec r;
		if ((rng >> 16) & 1) {
			memset(&r, 0, sizeof r);
			r.seq = next_send;
			snprintf(r.tag, sizeof r.tag, "v%u", next_send);
			int e = weft_chan_send(c, &r, 0);
			if (len < CAP) {
				assert_int_equal(e, 0);
				next_send++;
				len++;
			} else {
				assert_int_equal(e, -ETIMEDOUT); /* full */
			}
		} else {
			memset(&r, 0xa5, sizeof r);
			int e = weft_chan_recv(c, &r, 0);
			if (len > 0) {
				assert_int_equal(e, 0);
				assert_int_equal(r.seq, next_recv);
				char want[13];
				snprintf(want, sizeof want, "v%u", next_recv);
				assert_string_equal(r.tag, want);
				next_recv++;
				len--;
			} else {
				assert_int_equal(e, -ETIMEDOUT); /* empty */
			}
		}
		assert_int_equal(weft_chan_len(c), len);
	}
	assert_true(next_recv > 100); /* the ring wrapped many times */
	weft_chan_destroy(c);
}

static unsigned char big_in[64 * 1024], big_out[64 * 1024];

static void test_carry_largest_elements(void **state)
{
	(void)state;
	weft_chan_t *c = make_chan(sizeof big_in, 2);
	for (int k = 0; k < 3; k++) {
		for (size_t i = 0; i < sizeof big_in; i++)
			big_in[i] = (unsigned char)(i * 7 + k);
		assert_int_equal(weft_chan_send(c, big_in, 0), 0);
		memset(big_out, 0, sizeof big_out);
		assert_int_equal(weft_chan_recv(c, big_out, 0), 0);
		assert_memory_equal(big_in, big_out, sizeof big_in);
	}
	weft_chan_destroy(c);
}

static void test_len_counts_buffered(void **state)
{
	(void)state;
	weft_chan_t *c = make_chan(sizeof(long), 3);
	long v = 0;
	assert_int_equal(weft_chan_len(c), 0);
	for (long i = 1; i <= 3; i++) {
		assert_int_equal(weft_chan_send(c, &i, 0), 0);
		assert_int_equal(weft_chan_len(c), (size_t)i);
	}
	assert_int_equal(weft_chan_send(c, &v, 0), -ETIMEDOUT);
	assert_int_equal(weft_chan_len(c), 3);
	assert_int_equal(weft_chan_recv(c, &v, 0), 0);
	assert_int_equal(weft_chan_len(c), 2);
	assert_int_equal(weft_chan_close(c), 0);
	assert_int_equal(weft_chan_len(c), 2);
	assert_int_equal(weft_chan_recv(c, &v, 0), 0);
	assert_int_equal(weft_chan_recv(c, &v, 0), 0);
	assert_int_equal(weft_chan_len(c), 0);
	weft_chan_destroy(c);

	/* A rendezvous buffers nothing, even with a sender waiting. */
	c = make_chan(sizeof(long), 0);
	static struct op s;
	op_init(&s, c, 9, far());
	weft_fiber_t f = wt_spawn(do_send, &s);
	settle(&s.started);
	assert_int_equal(weft_chan_len(c), 0);
	assert_int_equal(weft_chan_recv(c, &v, far()), 0);
	wt_join_soon(f);
	assert_int_equal(s.r, 0);
	assert_int_equal(v, 9);
	assert_int_equal(weft_chan_len(c), 0);
	weft_chan_destroy(c);
}

static void test_release_blocked_on_buffered(void **state)
{
	(void)state;
	weft_chan_t *c = make_chan(sizeof(long), 1);
	long one = 1, v = 0;

	/* A sender blocked on a full channel is released by a receiver and its
	 * element follows the buffered one. */
	assert_int_equal(weft_chan_send(c, &one, 0), 0);
	static struct op s;
	op_init(&s, c, 2, far());
	weft_fiber_t f = wt_spawn(do_send, &s);
	settle(&s.started);
	assert_int_equal(weft_chan_recv(c, &v, far()), 0);
	assert_int_equal(v, 1);
	assert_int_equal(weft_chan_recv(c, &v, far()), 0);
	assert_int_equal(v, 2);
	wt_join_soon(f);
	assert_int_equal(s.r, 0);
	assert_int_equal(weft_chan_len(c), 0);

	/* A receiver blocked on an empty channel is released by a sender, and
	 * the element goes to it rather than into the ring. */
	static struct op r;
	op_init(&r, c, 0, far());
	f = wt_spawn(do_recv, &r);
	settle(&r.started);
	long three = 3;
	assert_int_equal(weft_chan_send(c, &three, 0), 0);
	wt_join_soon(f);
	assert_int_equal(r.r, 0);
	assert_int_equal(r.val, 3);
	assert_int_equal(weft_chan_len(c), 0);
	weft_chan_destroy(c);
}

/* ---- Rendezvous --------------------------------------------------------- */

static void test_rendezvous_try_times_out(void **state)
{
	(void)state;
	weft_chan_t *c = make_chan(sizeof(long), 0);
	long v = 1;
	assert_int_equal(weft_chan_send(c, &v, 0), -ETIMEDOUT);
	assert_int_equal(weft_chan_recv(c, &v, 0), -ETIMEDOUT);

	static struct op s, r;
	op_init(&s, c, 1, 0);
	wt_join(wt_spawn(do_send, &s));
	assert_int_equal(s.r, -ETIMEDOUT);
	op_init(&r, c, 0, 0);
	wt_join(wt_spawn(do_recv, &r));
	assert_int_equal(r.r, -ETIMEDOUT);

	/* No failed attempt left a waiter behind: a real exchange works. */
	op_init(&r, c, 0, far());
	weft_fiber_t f = wt_spawn(do_recv, &r);
	v = 77;
	assert_int_equal(weft_chan_send(c, &v, far()), 0);
	wt_join(f);
	assert_int_equal(r.r, 0);
	assert_int_equal(r.val, 77);
	weft_chan_destroy(c);
}

static void test_rendezvous_release_blocked(void **state)
{
	(void)state;
	weft_chan_t *c = make_chan(sizeof(long), 0);
	static struct op s, r;

	/* Sender first: it blocks until the (later) receiver takes the value. */
	op_init(&s, c, 11, far());
	op_init(&r, c, 0, far());
	r.delay_ms = 20;
	weft_fiber_t fs = wt_spawn(do_send, &s);
	weft_fiber_t fr = wt_spawn(do_recv, &r);
	wt_join(fs);
	wt_join(fr);
	assert_int_equal(s.r, 0);
	assert_int_equal(r.r, 0);
	assert_int_equal(r.val, 11);

	/* Receiver first: it blocks until the (later) sender comes. */
	op_init(&s, c, 12, far());
	op_init(&r, c, 0, far());
	s.delay_ms = 20;
	fr = wt_spawn(do_recv, &r);
	fs = wt_spawn(do_send, &s);
	wt_join(fr);
	wt_join(fs);
	assert_int_equal(s.r, 0);
	assert_int_equal(r.r, 0);
	assert_int_equal(r.val, 12);

	/* A send that nobody takes does not complete. */
	op_init(&s, c, 13, wt_ms(20));
	wt_join(wt_spawn(do_send, &s));
	assert_int_equal(s.r, -ETIMEDOUT);
	assert_true(s.after >= s.deadline);
	weft_chan_destroy(c);
}

/* ---- Close -------------------------------------------------------------- */

static void test_send_closed_fails(void **state)
{
	(void)state;
	for (size_t cap = 0; cap <= 2; cap += 2) {
		weft_chan_t *c = make_chan(sizeof(long), cap);
		long v = 3;
		assert_int_equal(weft_chan_close(c), 0);
		assert_int_equal(weft_chan_send(c, &v, 0), -EPIPE);
		assert_int_equal(weft_chan_send(c, &v, far()), -EPIPE);
		static struct op s;
		op_init(&s, c, 4, far());
		wt_join(wt_spawn(do_send, &s));
		assert_int_equal(s.r, -EPIPE);
		assert_int_equal(weft_chan_len(c), 0);
		assert_int_equal(weft_chan_recv(c, &v, far()), -EPIPE);
		weft_chan_destroy(c);
	}
}

static void test_close_twice_fails(void **state)
{
	(void)state;
	weft_chan_t *c = make_chan(sizeof(long), 1);
	assert_int_equal(weft_chan_close(c), 0);
	assert_int_equal(weft_chan_close(c), -EPIPE);
	assert_int_equal(weft_chan_close(c), -EPIPE);
	weft_chan_destroy(c);
}

static void test_close_drains_then_fails(void **state)
{
	(void)state;
	weft_chan_t *c = make_chan(sizeof(long), 4);
	for (long i = 10; i < 13; i++)
		assert_int_equal(weft_chan_send(c, &i, 0), 0);
	assert_int_equal(weft_chan_close(c), 0);
	assert_int_equal(weft_chan_len(c), 3);
	long v = 0;
	assert_int_equal(weft_chan_recv(c, &v, 0), 0);
	assert_int_equal(v, 10);
	/* A fiber drains too. */
	static struct op r;
	op_init(&r, c, 0, far());
	wt_join(wt_spawn(do_recv, &r));
	assert_int_equal(r.r, 0);
	assert_int_equal(r.val, 11);
	assert_int_equal(weft_chan_recv(c, &v, far()), 0);
	assert_int_equal(v, 12);
	assert_int_equal(weft_chan_recv(c, &v, far()), -EPIPE);
	assert_int_equal(weft_chan_recv(c, &v, 0), -EPIPE);
	op_init(&r, c, 0, far());
	wt_join(wt_spawn(do_recv, &r));
	assert_int_equal(r.r, -EPIPE);
	assert_int_equal(weft_chan_len(c), 0);
	weft_chan_destroy(c);
}

static void test_close_wakes_receivers(void **state)
{
	(void)state;
	enum { NF = 4 };
	static struct op r[NF + 1];
	for (size_t cap = 0; cap <= 3; cap += 3) {
		weft_chan_t *c = make_chan(sizeof(long), cap);
		weft_fiber_t f[NF];
		for (int i = 0; i < NF; i++) {
			op_init(&r[i], c, 0, far());
			f[i] = wt_spawn(do_recv, &r[i]);
		}
		op_init(&r[NF], c, 0, far());
		wt_thread_t t = wt_thread_start(do_recv, &r[NF]);
		for (int i = 0; i <= NF; i++)
			assert_true(wt_wait_flag(&r[i].started));
		wt_let_workers_sleep();
		int64_t closed = weft_now();
		assert_int_equal(weft_chan_close(c), 0);
		for (int i = 0; i < NF; i++)
			wt_join_soon(f[i]);
		wt_thread_join(t);
		for (int i = 0; i <= NF; i++) {
			assert_int_equal(r[i].r, -EPIPE);
			assert_true(r[i].after < closed + WT_WAKE_MS * 1000000LL);
		}
		weft_chan_destroy(c);
	}
}

static void test_close_wakes_senders(void **state)
{
	(void)state;
	enum { NF = 3 };
	static struct op s[NF + 1];
	for (size_t cap = 0; cap <= 1; cap++) {
		weft_chan_t *c = make_chan(sizeof(long), cap);
		long v = 1;
		if (cap)
			assert_int_equal(weft_chan_send(c, &v, 0), 0); /* now full */
		weft_fiber_t f[NF];
		for (int i = 0; i < NF; i++) {
			op_init(&s[i], c, 100 + i, far());
			f[i] = wt_spawn(do_send, &s[i]);
		}
		op_init(&s[NF], c, 100 + NF, far());
		wt_thread_t t = wt_thread_start(do_send, &s[NF]);
		for (int i = 0; i <= NF; i++)
			assert_true(wt_wait_flag(&s[i].started));
		wt_let_workers_sleep();
		int64_t closed = weft_now();
		assert_int_equal(weft_chan_close(c), 0);
		for (int i = 0; i < NF; i++)
			wt_join_soon(f[i]);
		wt_thread_join(t);
		for (int i = 0; i <= NF; i++) {
			assert_int_equal(s[i].r, -EPIPE);
			assert_true(s[i].after < closed + WT_WAKE_MS * 1000000LL);
		}
		/* Only what was buffered before the close comes out. */
		if (cap) {
			assert_int_equal(weft_chan_recv(c, &v, far()), 0);
			assert_int_equal(v, 1);
		}
		assert_int_equal(weft_chan_recv(c, &v, far()), -EPIPE);
		weft_chan_destroy(c);
	}
}

/* ---- Deadlines ---------------------------------------------------------- */

struct past {
	weft_chan_t *rdv, *empty, *full, *one;
	int r[8];
};

static void past_calls(struct past *p, int64_t dl)
{
	long v = 0;
	p->r[0] = weft_chan_send(p->rdv, &v, dl);
	p->r[1] = weft_chan_recv(p->rdv, &v, dl);
	p->r[2] = weft_chan_recv(p->empty, &v, dl);
	p->r[3] = weft_chan_send(p->full, &v, dl);
	/* With an element there, a past deadline still tries once. */
	p->r[4] = weft_chan_recv(p->one, &v, dl);
	p->r[5] = (int)v;
	p->r[6] = weft_chan_send(p->one, &v, dl);
}

static void *past_fiber(void *arg)
{
	struct past *p = arg;
	past_calls(p, weft_now() - 1000000);
	return NULL;
}

static void check_past(struct past *p)
{
	assert_int_equal(p->r[0], -ETIMEDOUT);
	assert_int_equal(p->r[1], -ETIMEDOUT);
	assert_int_equal(p->r[2], -ETIMEDOUT);
	assert_int_equal(p->r[3], -ETIMEDOUT);
	assert_int_equal(p->r[4], 0);
	assert_int_equal(p->r[5], 42);
	assert_int_equal(p->r[6], 0);
}

static void test_past_deadline_times_out(void **state)
{
	(void)state;
	static struct past p;
	long v = 42;
	p.rdv = make_chan(sizeof(long), 0);
	p.empty = make_chan(sizeof(long), 2);
	p.full = make_chan(sizeof(long), 1);
	p.one = make_chan(sizeof(long), 1);
	assert_int_equal(weft_chan_send(p.full, &v, 0), 0);
	assert_int_equal(weft_chan_send(p.one, &v, 0), 0);

	/* In a fiber first: were a past deadline taken as "forever", the join
	 * would fail instead of the suite hanging. */
	memset(p.r, 0, sizeof p.r);
	wt_join(wt_spawn(past_fiber, &p));
	check_past(&p);

	/* From the test's own thread, with 1 ns after boot as the deadline. */
	memset(p.r, 0, sizeof p.r);
	past_calls(&p, 1);
	check_past(&p);
	memset(p.r, 0, sizeof p.r);
	past_calls(&p, weft_now() - 1);
	check_past(&p);

	assert_int_equal(weft_chan_len(p.full), 1);
	assert_int_equal(weft_chan_len(p.one), 1);
	weft_chan_destroy(p.rdv);
	weft_chan_destroy(p.empty);
	weft_chan_destroy(p.full);
	weft_chan_destroy(p.one);
}

static void test_recv_timeout_keeps_chan_usable(void **state)
{
	(void)state;
	static struct op r;
	long v;
	for (size_t cap = 0; cap <= 2; cap += 2) {
		weft_chan_t *c = make_chan(sizeof(long), cap);

		/* A fiber's recv times out, not before its deadline. */
		op_init(&r, c, -1, wt_ms(20));
		wt_join(wt_spawn(do_recv, &r));
		assert_int_equal(r.r, -ETIMEDOUT);
		assert_true(r.after >= r.deadline);

		/* So does the test thread's. */
		int64_t dl = wt_ms(20);
		assert_int_equal(weft_chan_recv(c, &v, dl), -ETIMEDOUT);
		assert_true(weft_now() >= dl);

		/* The timed-out receivers are gone: a later value is not handed
		 * to them but to the next receiver. */
		v = 500;
		if (cap == 0) {
			assert_int_equal(weft_chan_send(c, &v, 0), -ETIMEDOUT);
		} else {
			assert_int_equal(weft_chan_send(c, &v, 0), 0);
			assert_int_equal(weft_chan_len(c), 1);
		}
		op_init(&r, c, -1, far());
		weft_fiber_t f = wt_spawn(do_recv, &r);
		v = 501;
		assert_int_equal(weft_chan_send(c, &v, far()), 0);
		wt_join(f);
		assert_int_equal(r.r, 0);
		assert_int_equal(r.val, cap ? 500 : 501);
		if (cap) {
			assert_int_equal(weft_chan_recv(c, &v, 0), 0);
			assert_int_equal(v, 501);
		}
		assert_int_equal(weft_chan_len(c), 0);
		weft_chan_destroy(c);
	}
}

static void test_send_timeout_keeps_chan_usable(void **state)
{
	(void)state;
	static struct op s;
	long v;
	for (size_t cap = 0; cap <= 1; cap++) {
		weft_chan_t *c = make_chan(sizeof(long), cap);
		v = 1;
		if (cap)
			assert_int_equal(weft_chan_send(c, &v, 0), 0); /* now full */

		op_init(&s, c, 2, wt_ms(20));
		wt_join(wt_spawn(do_send, &s));
		assert_int_equal(s.r, -ETIMEDOUT);
		assert_true(s.after >= s.deadline);

		v = 3;
		int64_t dl = wt_ms(20);
		assert_int_equal(weft_chan_send(c, &v, dl), -ETIMEDOUT);
		assert_true(weft_now() >= dl);

		/* Neither timed-out element was delivered. */
		if (cap) {
			assert_int_equal(weft_chan_recv(c, &v, 0), 0);
			assert_int_equal(v, 1);
		}
		assert_int_equal(weft_chan_recv(c, &v, 0), -ETIMEDOUT);
		assert_int_equal(weft_chan_len(c), 0);

		/* And the channel still carries values. */
		op_init(&s, c, 4, far());
		weft_fiber_t f = wt_spawn(do_send, &s);
		assert_int_equal(weft_chan_recv(c, &v, far()), 0);
		assert_int_equal(v, 4);
		wt_join(f);
		assert_int_equal(s.r, 0);
		weft_chan_destroy(c);
	}
}

/* ---- Cancellation ------------------------------------------------------- */

struct cancel_recv {
	weft_chan_t *c;
	int r1, r2, r3, yield_errs;
	long v2;
	_Atomic int started, first_done;
};

static void *cancel_recv_fiber(void *arg)
{
	struct cancel_recv *x = arg;
	long v;
	atomic_store(&x->started, 1);
	x->r1 = weft_chan_recv(x->c, &v, far()); /* cancelled while blocked */
	atomic_store(&x->first_done, 1);
	/* Wait for the value without blocking calls that a second (wrong)
	 * delivery could hit, except yield, which is counted. */
	int64_t end = far();
	while (weft_chan_len(x->c) == 0 && weft_now() < end)
		if (weft_fiber_yield() != 0)
			x->yield_errs++;
	x->r2 = weft_chan_recv(x->c, &x->v2, far()); /* a value is there */
	x->r3 = weft_chan_recv(x->c, &v, wt_ms(20)); /* blocks: times out */
	return NULL;
}

static void test_cancel_blocked_recv(void **state)
{
	(void)state;
	static struct cancel_recv x;
	memset(&x, 0, sizeof x);
	x.c = make_chan(sizeof(long), 1);
	x.r1 = x.r2 = x.r3 = 1;
	weft_fiber_t f = wt_spawn(cancel_recv_fiber, &x);
	settle(&x.started);
	assert_int_equal(weft_fiber_cancel(f), 0);
	assert_true(wt_wait_flag(&x.first_done));
	long v = 7;
	assert_int_equal(weft_chan_send(x.c, &v, 0), 0);
	wt_join(f);
	assert_int_equal(x.r1, -ECANCELED);
	assert_int_equal(x.yield_errs, 0);
	assert_int_equal(x.r2, 0);
	assert_int_equal(x.v2, 7);
	assert_int_equal(x.r3, -ETIMEDOUT);
	assert_int_equal(weft_fiber_cancel(f), -ESRCH); /* joined */
	weft_chan_destroy(x.c);
}

struct cancel_send {
	weft_chan_t *c;
	int r1, r2;
	_Atomic int started, first_done, go;
};

static void *cancel_send_fiber(void *arg)
{
	struct cancel_send *x = arg;
	long v = 2;
	atomic_store(&x->started, 1);
	x->r1 = weft_chan_send(x->c, &v, far()); /* the channel is full */
	atomic_store(&x->first_done, 1);
	int64_t end = far();
	while (!atomic_load(&x->go) && weft_now() < end)
		weft_fiber_yield();
	v = 3;
	x->r2 = weft_chan_send(x->c, &v, far()); /* there is room now */
	return NULL;
}

static void test_cancel_blocked_send(void **state)
{
	(void)state;
	static struct cancel_send x;
	memset(&x, 0, sizeof x);
	x.c = make_chan(sizeof(long), 1);
	x.r1 = x.r2 = 1;
	long v = 1;
	assert_int_equal(weft_chan_send(x.c, &v, 0), 0);
	weft_fiber_t f = wt_spawn(cancel_send_fiber, &x);
	settle(&x.started);
	assert_int_equal(weft_fiber_cancel(f), 0);
	assert_true(wt_wait_flag(&x.first_done));
	/* The cancelled send delivered nothing. */
	assert_int_equal(weft_chan_recv(x.c, &v, 0), 0);
	assert_int_equal(v, 1);
	assert_int_equal(weft_chan_recv(x.c, &v, 0), -ETIMEDOUT);
	atomic_store(&x.go, 1);
	wt_join(f);
	assert_int_equal(x.r1, -ECANCELED);
	assert_int_equal(x.r2, 0);
	assert_int_equal(weft_chan_recv(x.c, &v, 0), 0);
	assert_int_equal(v, 3);
	weft_chan_destroy(x.c);
}

/* Two requests made before the first is delivered merge into one (weft.h,
 * weft_fiber_cancel): the blocked recv returns -ECANCELED and nothing after
 * it is cancelled. Whether the second request came before delivery is
 * decided by the fiber's flag, set as soon as its recv has returned. */
struct twice {
	weft_chan_t *c;
	int r1, r2, later_cancels;
	_Atomic int started, delivered, go;
};

static void *twice_fiber(void *arg)
{
	struct twice *x = arg;
	long v;
	atomic_store(&x->started, 1);
	x->r1 = weft_chan_recv(x->c, &v, far());
	atomic_store(&x->delivered, 1);
	int64_t end = far();
	while (!atomic_load(&x->go) && weft_now() < end)
		if (weft_fiber_yield() == -ECANCELED)
			x->later_cancels++;
	x->r2 = weft_chan_recv(x->c, &v, wt_ms(20));
	if (x->r2 == -ECANCELED)
		x->later_cancels++;
	return NULL;
}

static void test_cancel_twice_delivers_once(void **state)
{
	(void)state;
	long iters = scaled(20, 5);
	weft_chan_t *c = make_chan(sizeof(long), 0);
	static struct twice x;
	for (long i = 0; i < iters; i++) {
		memset(&x, 0, sizeof x);
		x.c = c;
		x.r1 = x.r2 = 1;
		weft_fiber_t f = wt_spawn(twice_fiber, &x);
		settle(&x.started);
		assert_int_equal(weft_fiber_cancel(f), 0);
		assert_int_equal(weft_fiber_cancel(f), 0);
		int before = !atomic_load(&x.delivered);
		atomic_store(&x.go, 1);
		wt_join_soon(f);
		assert_int_equal(x.r1, -ECANCELED);
		if (before) {
			/* Both requests preceded the delivery: one cancellation. */
			assert_int_equal(x.later_cancels, 0);
			assert_int_equal(x.r2, -ETIMEDOUT);
		} else {
			assert_true(x.later_cancels <= 1);
		}
	}
	weft_chan_destroy(c);
}

/* A cancellation racing with the value that completes the recv: either the
 * recv gets the value and the request stays pending for the next suspension
 * point, or the recv is cancelled and the value stays in the channel. Never
 * both, never neither, and never a lost value. */
struct race {
	weft_chan_t *c;
	long got;
	int r1, later_cancels;
	_Atomic int phase;
};

static void *race_recv(void *arg)
{
	struct race *x = arg;
	x->r1 = weft_chan_recv(x->c, &x->got, far());
	x->later_cancels += wt_yield_count_cancels(&x->phase);
	return NULL;
}

static void test_cancel_races_send(void **state)
{
	(void)state;
	long iters = scaled(2000, 200);
	static struct race x;
	for (size_t cap = 0; cap <= 1; cap++) {
		weft_chan_t *c = make_chan(sizeof(long), cap);
		long got_value = 0, got_cancel = 0;
		for (long i = 0; i < iters; i++) {
			memset(&x, 0, sizeof x);
			x.c = c;
			x.got = -1;
			x.r1 = 1;
			weft_fiber_t f = wt_spawn(race_recv, &x);
			for (long k = 0; k < (i % 7) * 50; k++)
				atomic_signal_fence(memory_order_seq_cst); /* vary the timing */
			int sent;
			if (i & 1) {
				sent = weft_chan_send(c, &i, 0);
				assert_int_equal(weft_fiber_cancel(f), 0);
			} else {
				assert_int_equal(weft_fiber_cancel(f), 0);
				sent = weft_chan_send(c, &i, 0);
			}
			/* A buffered send always succeeds; a rendezvous one only if
			 * the receiver was waiting and not yet cancelled. */
			if (cap)
				assert_int_equal(sent, 0);
			else if (sent != 0)
				assert_int_equal(sent, -ETIMEDOUT);
			atomic_store(&x.phase, 1);
			wt_join_soon(f);
			assert_int_equal((x.r1 == -ECANCELED) + x.later_cancels, 1);
			if (x.r1 == 0) {
				got_value++;
				assert_int_equal(sent, 0);
				assert_int_equal(x.got, i);
				assert_int_equal(weft_chan_len(c), 0);
			} else {
				got_cancel++;
				assert_int_equal(x.r1, -ECANCELED);
				long v = -1;
				if (cap) {
					/* The value stayed in the channel. */
					assert_int_equal(weft_chan_recv(c, &v, 0), 0);
					assert_int_equal(v, i);
				} else {
					assert_int_equal(sent, -ETIMEDOUT);
					assert_int_equal(weft_chan_recv(c, &v, 0), -ETIMEDOUT);
				}
			}
		}
		assert_int_equal(got_value + got_cancel, iters);
		weft_chan_destroy(c);
	}
}

/* The same race on the sending side: a cancelled send delivers nothing, a
 * completed one delivers its value, and the request is delivered once. */
struct race_tx {
	weft_chan_t *c;
	long val;
	int r1, later_cancels;
	_Atomic int phase;
};

static void *race_send(void *arg)
{
	struct race_tx *x = arg;
	x->r1 = weft_chan_send(x->c, &x->val, far());
	x->later_cancels += wt_yield_count_cancels(&x->phase);
	return NULL;
}

static void test_cancel_races_recv(void **state)
{
	(void)state;
	long iters = scaled(2000, 200);
	static struct race_tx x;
	for (size_t cap = 0; cap <= 1; cap++) {
		weft_chan_t *c = make_chan(sizeof(long), cap);
		for (long i = 0; i < iters; i++) {
			long filler = -5, v = -1;
			if (cap)
				assert_int_equal(weft_chan_send(c, &filler, 0), 0); /* full */
			memset(&x, 0, sizeof x);
			x.c = c;
			x.val = i;
			x.r1 = 1;
			weft_fiber_t f = wt_spawn(race_send, &x);
			for (long k = 0; k < (i % 7) * 50; k++)
				atomic_signal_fence(memory_order_seq_cst); /* vary the timing */
			int got;
			if (i & 1) {
				got = weft_chan_recv(c, &v, 0);
				assert_int_equal(weft_fiber_cancel(f), 0);
			} else {
				assert_int_equal(weft_fiber_cancel(f), 0);
				got = weft_chan_recv(c, &v, 0);
			}
			atomic_store(&x.phase, 1);
			wt_join_soon(f);
			assert_int_equal((x.r1 == -ECANCELED) + x.later_cancels, 1);
			if (x.r1 != 0)
				assert_int_equal(x.r1, -ECANCELED);
			if (cap) {
				/* The filler came out; the sender's value is in the
				 * ring if and only if its send completed. */
				assert_int_equal(got, 0);
				assert_int_equal(v, filler);
				long w = -1;
				int e = weft_chan_recv(c, &w, 0);
				if (x.r1 == 0) {
					assert_int_equal(e, 0);
					assert_int_equal(w, i);
				} else {
					assert_int_equal(e, -ETIMEDOUT);
				}
			} else if (x.r1 == 0) {
				assert_int_equal(got, 0);
				assert_int_equal(v, i);
			} else {
				assert_int_equal(got, -ETIMEDOUT);
			}
			assert_int_equal(weft_chan_len(c), 0);
		}
		weft_chan_destroy(c);
	}
}

/* ---- Races between timeouts and transfers ------------------------------- */

/* Senders and receivers with tiny deadlines (one of each a plain thread):
 * every value whose send returned 0 is received exactly once, and no value
 * whose send failed is received. */
#define RACE_MAX 40000
static _Atomic unsigned char race_sent[RACE_MAX];
static _Atomic unsigned char race_got[RACE_MAX];

struct tx {
	weft_chan_t *c;
	long first, n;
	uint64_t rng;
	long ok, timeouts, errors, received;
};

static int64_t tiny_deadline(uint64_t *rng)
{
	*rng = *rng * 6364136223846793005ull + 1442695040888963407ull;
	unsigned k = (unsigned)(*rng >> 33) % 8;
	return k == 0 ? 0 : weft_deadline_in((int64_t)k * 25000); /* 0..175 us */
}

static void *race_sender(void *arg)
{
	struct tx *t = arg;
	for (long v = t->first; v < t->first + t->n; v++) {
		int e = weft_chan_send(t->c, &v, tiny_deadline(&t->rng));
		if (e == 0) {
			atomic_store(&race_sent[v], 1);
			t->ok++;
		} else if (e == -ETIMEDOUT) {
			t->timeouts++;
		} else {
			t->errors++;
		}
	}
	return NULL;
}

static void *race_receiver(void *arg)
{
	struct tx *t = arg;
	int64_t end = far();
	while (weft_now() < end) {
		long v = -1;
		int e = weft_chan_recv(t->c, &v, tiny_deadline(&t->rng));
		if (e == 0) {
			if (v >= 0 && v < RACE_MAX)
				atomic_fetch_add(&race_got[v], 1);
			else
				t->errors++;
			t->received++;
		} else if (e == -EPIPE) {
			break;
		} else if (e == -ETIMEDOUT) {
			t->timeouts++;
		} else {
			t->errors++;
		}
	}
	return NULL;
}

static void test_timeouts_race_transfers(void **state)
{
	(void)state;
	enum { NS = 4, NR = 4 };
	long per = scaled(RACE_MAX / NS, 1000);
	static struct tx s[NS], r[NR];
	for (size_t cap = 0; cap <= 4; cap += 4) {
		for (long v = 0; v < RACE_MAX; v++) {
			atomic_store(&race_sent[v], 0);
			atomic_store(&race_got[v], 0);
		}
		weft_chan_t *c = make_chan(sizeof(long), cap);
		struct party ps[NS], pr[NR];
		for (int i = 0; i < NR; i++) {
			r[i] = (struct tx){.c = c, .rng = 1000 + i};
			party_start(&pr[i], i == 0, race_receiver, &r[i]);
		}
		for (int i = 0; i < NS; i++) {
			s[i] = (struct tx){.c = c, .first = i * per, .n = per, .rng = 77 + i};
			party_start(&ps[i], i == 0, race_sender, &s[i]);
		}
		long ok = 0, received = 0;
		for (int i = 0; i < NS; i++) {
			party_join(&ps[i]);
			assert_int_equal(s[i].errors, 0);
			ok += s[i].ok;
		}
		assert_int_equal(weft_chan_close(c), 0);
		for (int i = 0; i < NR; i++) {
			party_join(&pr[i]);
			assert_int_equal(r[i].errors, 0);
			received += r[i].received;
		}
		assert_true(ok > 0);
		assert_int_equal(received, ok);
		for (long v = 0; v < NS * per; v++)
			if (atomic_load(&race_got[v]) != atomic_load(&race_sent[v]))
				fail_msg("value %ld: sent %d, received %d times (cap %zu)", v,
					 atomic_load(&race_sent[v]), atomic_load(&race_got[v]),
					 cap);
		weft_chan_destroy(c);
	}
}

/* ---- Volume ------------------------------------------------------------- */

struct stream {
	weft_chan_t *c;
	long n; /* values 1..n */
	long count, last, disorder;
	int err;
};

static void *stream_send(void *arg)
{
	struct stream *s = arg;
	for (long i = 1; i <= s->n; i++) {
		int e = weft_chan_send(s->c, &i, weft_deadline_in(WT_WAIT_MS * 1000000LL));
		if (e) {
			s->err = e;
			break;
		}
	}
	int e = weft_chan_close(s->c);
	if (e && !s->err)
		s->err = e;
	return NULL;
}

static void *stream_recv(void *arg)
{
	struct stream *s = arg;
	for (;;) {
		long v;
		int e = weft_chan_recv(s->c, &v, weft_deadline_in(WT_WAIT_MS * 1000000LL));
		if (e == -EPIPE)
			break;
		if (e) {
			s->err = e;
			break;
		}
		if (v != s->last + 1)
			s->disorder++;
		s->last = v;
		s->count++;
	}
	return NULL;
}

static void check_stream(const struct stream *tx, const struct stream *rx, long n)
{
	assert_int_equal(tx->err, 0);
	assert_int_equal(rx->err, 0);
	assert_int_equal(rx->disorder, 0);
	assert_int_equal(rx->count, n);
	assert_int_equal(rx->last, n);
}

/* Acceptance: two fibers exchange 1,000,000 values over a rendezvous, none
 * lost or reordered (200,000 under the sanitizers, which are ~10x slower;
 * 20,000 under WT_SLOW). */
static void test_exchange_million_rendezvous(void **state)
{
	(void)state;
	long n = scaled_slow(1000000, 200000, 20000);
	weft_chan_t *c = make_chan(sizeof(long), 0);
	static struct stream tx, rx;
	tx = (struct stream){.c = c, .n = n};
	rx = (struct stream){.c = c};
	weft_fiber_t fr = wt_spawn(stream_recv, &rx);
	weft_fiber_t fs = wt_spawn(stream_send, &tx);
	void *r;
	assert_int_equal(weft_fiber_join(fs, wt_ms(120000), &r, NULL), 0);
	assert_int_equal(weft_fiber_join(fr, wt_ms(120000), &r, NULL), 0);
	check_stream(&tx, &rx, n);
	weft_chan_destroy(c);
}

struct mp {
	weft_chan_t *c;
	long id, n, err;
	long count, sum, disorder;
	long last[8];
};

#define MP_STRIDE 1000000L

static void *mp_produce(void *arg)
{
	struct mp *p = arg;
	for (long i = 1; i <= p->n; i++) {
		long v = p->id * MP_STRIDE + i;
		int e = weft_chan_send(p->c, &v, far());
		if (e) {
			p->err = e;
			break;
		}
	}
	return NULL;
}

static void *mp_consume(void *arg)
{
	struct mp *p = arg;
	for (;;) {
		long v;
		int e = weft_chan_recv(p->c, &v, far());
		if (e == -EPIPE)
			break;
		if (e) {
			p->err = e;
			break;
		}
		long who = v / MP_STRIDE, i = v % MP_STRIDE;
		if (who < 0 || who >= 8) {
			p->err = -ERANGE;
			break;
		}
		/* One FIFO: each producer's values reach any consumer in order. */
		if (i <= p->last[who])
			p->disorder++;
		p->last[who] = i;
		p->count++;
		p->sum += v;
	}
	return NULL;
}

/* 8 producers x 10,000 values (2,000 under the sanitizers) through a channel
 * of 16 to 8 consumers: first all fibers, then with two producers and two
 * consumers on plain threads. */
static void test_exchange_many_to_many(void **state)
{
	(void)state;
	enum { NP = 8, NC = 8 };
	long n = scaled_slow(10000, 2000, 400);
	static struct mp prod[NP], cons[NC];
	struct party pp[NP], pc[NC];
	for (int mixed = 0; mixed <= 1; mixed++) {
		weft_chan_t *c = make_chan(sizeof(long), 16);
		for (int i = 0; i < NC; i++) {
			cons[i] = (struct mp){.c = c};
			party_start(&pc[i], mixed && i < 2, mp_consume, &cons[i]);
		}
		long want_sum = 0;
		for (int i = 0; i < NP; i++) {
			prod[i] = (struct mp){.c = c, .id = i, .n = n};
			party_start(&pp[i], mixed && i < 2, mp_produce, &prod[i]);
			want_sum += i * MP_STRIDE * n + n * (n + 1) / 2;
		}
		for (int i = 0; i < NP; i++) {
			party_join(&pp[i]);
			assert_int_equal(prod[i].err, 0);
		}
		assert_int_equal(weft_chan_close(c), 0);
		long count = 0, sum = 0;
		for (int i = 0; i < NC; i++) {
			party_join(&pc[i]);
			assert_int_equal(cons[i].err, 0);
			assert_int_equal(cons[i].disorder, 0);
			count += cons[i].count;
			sum += cons[i].sum;
		}
		assert_int_equal(count, NP * n);
		assert_int_equal(sum, want_sum);
		assert_int_equal(weft_chan_len(c), 0);
		weft_chan_destroy(c);
	}
}

/* ---- Plain OS threads --------------------------------------------------- */

static void test_send_thread_to_fiber(void **state)
{
	(void)state;
	long n = scaled_slow(20000, 2000, 400);
	static struct stream tx, rx;
	for (size_t cap = 0; cap <= 4; cap += 4) {
		weft_chan_t *c = make_chan(sizeof(long), cap);
		tx = (struct stream){.c = c, .n = n};
		rx = (struct stream){.c = c};
		weft_fiber_t f = wt_spawn(stream_recv, &rx);
		wt_thread_t t = wt_thread_start(stream_send, &tx);
		wt_thread_join(t);
		wt_join(f);
		check_stream(&tx, &rx, n);
		weft_chan_destroy(c);
	}
}

static void test_send_fiber_to_thread(void **state)
{
	(void)state;
	long n = scaled_slow(20000, 2000, 400);
	static struct stream tx, rx;
	for (size_t cap = 0; cap <= 4; cap += 4) {
		weft_chan_t *c = make_chan(sizeof(long), cap);
		tx = (struct stream){.c = c, .n = n};
		rx = (struct stream){.c = c};
		wt_thread_t t = wt_thread_start(stream_recv, &rx);
		weft_fiber_t f = wt_spawn(stream_send, &tx);
		wt_join(f);
		wt_thread_join(t);
		check_stream(&tx, &rx, n);
		weft_chan_destroy(c);
	}
}

static void test_send_thread_to_thread(void **state)
{
	(void)state;
	long n = scaled_slow(20000, 2000, 400);
	static struct stream tx, rx;
	for (size_t cap = 0; cap <= 4; cap += 4) {
		weft_chan_t *c = make_chan(sizeof(long), cap);
		tx = (struct stream){.c = c, .n = n};
		rx = (struct stream){.c = c};
		wt_thread_t tr = wt_thread_start(stream_recv, &rx);
		wt_thread_t ts = wt_thread_start(stream_send, &tx);
		wt_thread_join(ts);
		wt_thread_join(tr);
		check_stream(&tx, &rx, n);
		weft_chan_destroy(c);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_create_bad_args),
		cmocka_unit_test(test_check_null_args),
		cmocka_unit_test(test_destroy_busy),
		cmocka_unit_test(test_keep_fifo_order),
		cmocka_unit_test(test_carry_largest_elements),
		cmocka_unit_test(test_len_counts_buffered),
		cmocka_unit_test(test_release_blocked_on_buffered),
		cmocka_unit_test(test_rendezvous_try_times_out),
		cmocka_unit_test(test_rendezvous_release_blocked),
		cmocka_unit_test(test_send_closed_fails),
		cmocka_unit_test(test_close_twice_fails),
		cmocka_unit_test(test_close_drains_then_fails),
		cmocka_unit_test(test_close_wakes_receivers),
		cmocka_unit_test(test_close_wakes_senders),
		cmocka_unit_test(test_past_deadline_times_out),
		cmocka_unit_test(test_recv_timeout_keeps_chan_usable),
		cmocka_unit_test(test_send_timeout_keeps_chan_usable),
		cmocka_unit_test(test_cancel_blocked_recv),
		cmocka_unit_test(test_cancel_blocked_send),
		cmocka_unit_test(test_cancel_twice_delivers_once),
		cmocka_unit_test(test_cancel_races_send),
		cmocka_unit_test(test_cancel_races_recv),
		cmocka_unit_test(test_timeouts_race_transfers),
		cmocka_unit_test(test_exchange_million_rendezvous),
		cmocka_unit_test(test_exchange_many_to_many),
		cmocka_unit_test(test_send_thread_to_fiber),
		cmocka_unit_test(test_send_fiber_to_thread),
		cmocka_unit_test(test_send_thread_to_thread),
	};
	return WT_MAIN("chan", tests, wt_start, wt_stop);
}
