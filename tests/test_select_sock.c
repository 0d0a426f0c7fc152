/* SPDX-License-Identifier: MIT */
/* weft_select on sockets (WEFT_SELECT_READY with weft_sock_waitable) beside
 * channel cases, on every stack the target has: "kernel" (the reactor's
 * slots) and "lwip" over "loop" on Linux, "lwip" alone on bare metal.
 *
 * A fiber selects on a silent channel and a socket; the test makes one of
 * them ready once the fiber is parked in the select (wt_wait_parked), and
 * checks which case was chosen, that the other did nothing, and that the
 * socket works as before afterwards. Also: readiness that came before the
 * select (level), writability, the end of a stream, closing under the
 * select, a second waiter (-EBUSY on "kernel"), deadlines including past
 * ones, and bad cases. Every wait is bounded; nothing asserts timings. */
#include <stdio.h>
#include <stdlib.h>
#include <stdbool.h>
#include <string.h>

#include "testutil.h"
#include "weft_net.h"

#define LONG_MS 10000
#define SHORT_MS 50

static weft_addr_t lo(uint16_t port)
{
	weft_addr_t a;
	assert_int_equal(weft_addr_parse("127.0.0.1", &a), 0);
	a.port = port;
	return a;
}

/* A connected pair: *c connected, *s accepted. */
static void tcp_pair(weft_sock_t **c, weft_sock_t **s) { assert_int_equal(wt_tcp_pair(c, s), 0); }

/* ---- A fiber that selects on a channel and a socket ---------------------- */

struct sel {
	weft_chan_t *ch;
	weft_sock_t *s;
	unsigned events;
	int64_t deadline;
	int got; /* the channel's element, if received */
	int r;   /* weft_select's return */
	int res[2];
};

static void *select_fiber(void *arg)
{
	struct sel *x = arg;
	weft_select_case_t c[2] = {
		{.op = WEFT_SELECT_RECV, .chan = x->ch, .elem = &x->got},
		{.op = WEFT_SELECT_READY,
		 .waitable = weft_sock_waitable(x->s),
		 .events = x->events},
	};
	x->r = weft_select(c, 2, x->deadline);
	x->res[0] = c[0].result;
	x->res[1] = c[1].result;
	return NULL;
}

static weft_fiber_t start_select(struct sel *x)
{
	weft_fiber_t f = wt_spawn_named(select_fiber, x, "selector");
	assert_true(wt_wait_parked("selector", "select"));
	return f;
}

static weft_chan_t *chan(void)
{
	weft_chan_t *ch;
	assert_int_equal(weft_chan_create(&ch, sizeof(int), 1), 0);
	return ch;
}

/* The socket reads n bytes of "abcdef..." with a deadline. */
static void expect_read(weft_sock_t *s, size_t n)
{
	char buf[64] = {0};
	size_t got = 0;
	while (got < n) {
		ssize_t r = weft_sock_read(s, buf + got, n - got, wt_ms(LONG_MS));
		assert_true(r > 0);
		got += (size_t)r;
	}
	assert_memory_equal(buf, "abcdefghijklmnop", n);
}

/* ---- Tests ------------------------------------------------------------------ */

static void test_socket_wins(void **state)
{
	(void)state;
	weft_sock_t *c, *s;
	tcp_pair(&c, &s);
	/* A short read first: the socket's queue was emptied, so its next read
	 * would wait for news before trying; the select takes that news. */
	char b[8];
	assert_int_equal(weft_sock_write(c, "xy", 2, wt_ms(LONG_MS)), 2);
	assert_int_equal(weft_sock_read(s, b, sizeof b, wt_ms(LONG_MS)), 2);
	struct sel x = {
		.ch = chan(), .s = s, .events = WEFT_IO_IN, .deadline = wt_ms(LONG_MS), .got = -1};
	weft_fiber_t f = start_select(&x);
	assert_int_equal(weft_sock_write(c, "abcd", 4, wt_ms(LONG_MS)), 4);
	wt_join(f);
	assert_int_equal(x.r, 1);
	assert_true(x.res[1] & WEFT_IO_IN);
	assert_int_equal(x.got, -1); /* the channel case took nothing */
	/* The channel still works, and still holds nothing. */
	int v = 0;
	assert_int_equal(weft_chan_recv(x.ch, &v, 0), -ETIMEDOUT);
	/* What made the socket ready is there to read. */
	expect_read(s, 4);
	assert_int_equal(weft_chan_destroy(x.ch), 0);
	assert_int_equal(weft_sock_close(c), 0);
	assert_int_equal(weft_sock_close(s), 0);
}

static void test_channel_wins(void **state)
{
	(void)state;
	weft_sock_t *c, *s;
	tcp_pair(&c, &s);
	struct sel x = {
		.ch = chan(), .s = s, .events = WEFT_IO_IN, .deadline = wt_ms(LONG_MS), .got = -1};
	weft_fiber_t f = start_select(&x);
	int v = 42;
	assert_int_equal(weft_chan_send(x.ch, &v, wt_ms(LONG_MS)), 0);
	wt_join(f);
	assert_int_equal(x.r, 0);
	assert_int_equal(x.res[0], 0);
	assert_int_equal(x.got, 42);
	/* The socket's wait was withdrawn: nothing to read, and a reader may
	 * wait on it now (no -EBUSY), and gets what comes. */
	char b;
	assert_int_equal(weft_sock_read(s, &b, 1, 0), -ETIMEDOUT);
	assert_int_equal(weft_sock_write(c, "abc", 3, wt_ms(LONG_MS)), 3);
	expect_read(s, 3);
	assert_int_equal(weft_chan_destroy(x.ch), 0);
	assert_int_equal(weft_sock_close(c), 0);
	assert_int_equal(weft_sock_close(s), 0);
}

static void test_deadlines(void **state)
{
	(void)state;
	weft_sock_t *c, *s;
	tcp_pair(&c, &s);
	weft_chan_t *ch = chan();
	const int64_t d[] = {-2, INT64_MIN, 0, -5};
	for (int round = 0; round < 5; round++) {
		struct sel x = {.ch = ch, .s = s, .events = WEFT_IO_IN, .got = -1};
		x.deadline = round < 4 ? d[round] : wt_ms(SHORT_MS);
		wt_run_fiber(select_fiber, &x);
		assert_int_equal(x.r, -ETIMEDOUT);
		assert_int_equal(x.got, -1);
	}
	/* From the test's own thread, too. */
	int got = -1;
	weft_select_case_t cs[2] = {
		{.op = WEFT_SELECT_RECV, .chan = ch, .elem = &got},
		{.op = WEFT_SELECT_READY, .waitable = weft_sock_waitable(s), .events = WEFT_IO_IN},
	};
	assert_int_equal(weft_select(cs, 2, wt_ms(SHORT_MS)), -ETIMEDOUT);
	/* Nothing was left behind: the socket reads as before. */
	assert_int_equal(weft_sock_write(c, "ab", 2, wt_ms(LONG_MS)), 2);
	expect_read(s, 2);
	assert_int_equal(weft_chan_destroy(ch), 0);
	assert_int_equal(weft_sock_close(c), 0);
	assert_int_equal(weft_sock_close(s), 0);
}

static void test_ready_before(void **state)
{
	(void)state;
	weft_sock_t *c, *s;
	tcp_pair(&c, &s);
	weft_chan_t *ch = chan();
	/* Data that arrived before the select: it answers without anything
	 * new coming (level, not edge). */
	assert_int_equal(weft_sock_write(c, "abcdef", 6, wt_ms(LONG_MS)), 6);
	for (int i = 0; i < 2; i++) {
		struct sel x = {.ch = ch,
				.s = s,
				.events = WEFT_IO_IN,
				.deadline = wt_ms(LONG_MS),
				.got = -1};
		wt_run_fiber(select_fiber, &x);
		assert_int_equal(x.r, 1);
		assert_true(x.res[1] & WEFT_IO_IN);
	}
	expect_read(s, 6);
	/* A connected socket can be written to. */
	struct sel w = {.ch = ch, .s = c, .events = WEFT_IO_OUT, .deadline = wt_ms(LONG_MS)};
	wt_run_fiber(select_fiber, &w);
	assert_int_equal(w.r, 1);
	assert_int_equal(w.res[1], WEFT_IO_OUT);
	/* Both cases ready: either may be chosen, and exactly one is. */
	int v = 7;
	assert_int_equal(weft_chan_send(ch, &v, wt_ms(LONG_MS)), 0);
	struct sel both = {
		.ch = ch, .s = c, .events = WEFT_IO_OUT, .deadline = wt_ms(LONG_MS), .got = -1};
	wt_run_fiber(select_fiber, &both);
	assert_true(both.r == 0 || both.r == 1);
	if (both.r == 0)
		assert_int_equal(both.got, 7);
	else
		assert_int_equal(weft_chan_recv(ch, &v, 0), 0);
	assert_int_equal(weft_chan_destroy(ch), 0);
	assert_int_equal(weft_sock_close(c), 0);
	assert_int_equal(weft_sock_close(s), 0);
}

static void test_end_of_stream_and_close(void **state)
{
	(void)state;
	weft_sock_t *c, *s;
	tcp_pair(&c, &s);
	weft_chan_t *ch = chan();
	/* The peer shuts down writing while the select waits: readable (a
	 * read returns the end at once). */
	struct sel x = {
		.ch = ch, .s = s, .events = WEFT_IO_IN, .deadline = wt_ms(LONG_MS), .got = -1};
	weft_fiber_t f = start_select(&x);
	assert_int_equal(weft_sock_shutdown(c, WEFT_SHUT_WR), 0);
	wt_join(f);
	assert_int_equal(x.r, 1);
	assert_true(x.res[1] & WEFT_IO_IN);
	char b;
	assert_int_equal(weft_sock_read(s, &b, 1, wt_ms(LONG_MS)), 0);
	/* Closing the socket under a select wakes it with -EBADF. */
	weft_sock_t *c2, *s2;
	tcp_pair(&c2, &s2);
	struct sel y = {
		.ch = ch, .s = s2, .events = WEFT_IO_IN, .deadline = wt_ms(LONG_MS), .got = -1};
	f = start_select(&y);
	assert_int_equal(weft_sock_close(s2), 0);
	wt_join(f);
	assert_int_equal(y.r, 1);
	assert_int_equal(y.res[1], -EBADF);
	assert_int_equal(weft_chan_destroy(ch), 0);
	assert_int_equal(weft_sock_close(c), 0);
	assert_int_equal(weft_sock_close(s), 0);
	assert_int_equal(weft_sock_close(c2), 0);
}

struct rd {
	weft_sock_t *s;
	ssize_t r;
};

static void *read_fiber(void *arg)
{
	struct rd *x = arg;
	char b[8];
	x->r = weft_sock_read(x->s, b, sizeof b, wt_ms(LONG_MS));
	return NULL;
}

static void test_beside_a_reader(void **state)
{
	(void)state;
	weft_sock_t *c, *s;
	tcp_pair(&c, &s);
	weft_chan_t *ch = chan();
	struct rd r = {.s = s};
	weft_fiber_t rf = wt_spawn_named(read_fiber, &r, "reader");
	assert_true(wt_wait_parked("reader", wt_net_is_lwip() ? "wait list" : "fd"));
	struct sel x = {
		.ch = ch, .s = s, .events = WEFT_IO_IN, .deadline = wt_ms(LONG_MS), .got = -1};
	if (wt_net_is_lwip()) {
		/* lwIP: both wait; data wakes both, the reader takes it. */
		weft_fiber_t f = start_select(&x);
		assert_int_equal(weft_sock_write(c, "abc", 3, wt_ms(LONG_MS)), 3);
		wt_join(f);
		wt_join(rf);
		assert_int_equal(x.r, 1);
		assert_true(x.res[1] & WEFT_IO_IN);
		assert_int_equal(r.r, 3);
	} else {
		/* kernel: the reader holds the socket's read slot. */
		wt_run_fiber(select_fiber, &x);
		assert_int_equal(x.r, 1);
		assert_int_equal(x.res[1], -EBUSY);
		assert_int_equal(weft_sock_write(c, "abc", 3, wt_ms(LONG_MS)), 3);
		wt_join(rf);
		assert_int_equal(r.r, 3);
	}
	assert_int_equal(weft_chan_destroy(ch), 0);
	assert_int_equal(weft_sock_close(c), 0);
	assert_int_equal(weft_sock_close(s), 0);
}

static void test_udp_and_listener(void **state)
{
	(void)state;
	weft_chan_t *ch = chan();
	/* A listener is readable when a connection waits to be accepted. */
	weft_sock_t *ls, *c, *s;
	weft_addr_t a = lo(0), l;
	assert_int_equal(weft_tcp_listen(&ls, &a, 0), 0);
	assert_int_equal(weft_sock_local(ls, &l), 0);
	struct sel x = {
		.ch = ch, .s = ls, .events = WEFT_IO_IN, .deadline = wt_ms(LONG_MS), .got = -1};
	weft_fiber_t f = start_select(&x);
	assert_int_equal(weft_tcp_connect(&c, &l, wt_ms(LONG_MS)), 0);
	wt_join(f);
	assert_int_equal(x.r, 1);
	assert_true(x.res[1] & WEFT_IO_IN);
	assert_int_equal(weft_tcp_accept(ls, &s, NULL, wt_ms(LONG_MS)), 0);
	/* A UDP socket is readable when a datagram comes. */
	weft_sock_t *u1, *u2;
	weft_addr_t ua = lo(0), u2a;
	assert_int_equal(weft_udp_bind(&u1, &ua), 0);
	assert_int_equal(weft_udp_bind(&u2, &ua), 0);
	assert_int_equal(weft_sock_local(u2, &u2a), 0);
	struct sel y = {
		.ch = ch, .s = u2, .events = WEFT_IO_IN, .deadline = wt_ms(LONG_MS), .got = -1};
	f = start_select(&y);
	assert_int_equal(weft_udp_sendto(u1, "xy", 2, &u2a, wt_ms(LONG_MS)), 2);
	wt_join(f);
	assert_int_equal(y.r, 1);
	assert_true(y.res[1] & WEFT_IO_IN);
	char b[4];
	assert_int_equal(weft_udp_recvfrom(u2, b, sizeof b, NULL, wt_ms(LONG_MS)), 2);
	assert_int_equal(weft_chan_destroy(ch), 0);
	weft_sock_close(u1);
	weft_sock_close(u2);
	weft_sock_close(ls);
	weft_sock_close(c);
	weft_sock_close(s);
}

static void test_bad_cases(void **state)
{
	(void)state;
	weft_sock_t *c, *s;
	tcp_pair(&c, &s);
	assert_null(weft_sock_waitable(NULL));
	const unsigned bad_ev[] = {0, WEFT_IO_IN | WEFT_IO_OUT, WEFT_IO_ERR, 8};
	for (size_t i = 0; i < 4; i++) {
		weft_select_case_t cs = {.op = WEFT_SELECT_READY,
					 .waitable = weft_sock_waitable(s),
					 .events = bad_ev[i]};
		assert_int_equal(weft_select(&cs, 1, 0), -EINVAL);
	}
	weft_select_case_t none = {.op = WEFT_SELECT_READY, .events = WEFT_IO_IN};
	assert_int_equal(weft_select(&none, 1, 0), -EINVAL);
	/* One socket twice, same direction, nothing to read: on the kernel
	 * stack the second to wait is busy (the first holds the slot); on
	 * lwIP both wait. Either way the socket works afterwards. */
	weft_select_case_t twice[2] = {
		{.op = WEFT_SELECT_READY, .waitable = weft_sock_waitable(s), .events = WEFT_IO_IN},
		{.op = WEFT_SELECT_READY, .waitable = weft_sock_waitable(s), .events = WEFT_IO_IN},
	};
	int r = weft_select(twice, 2, wt_ms(SHORT_MS));
	if (wt_net_is_lwip()) {
		assert_int_equal(r, -ETIMEDOUT);
	} else {
		assert_true(r == 0 || r == 1);
		assert_int_equal(twice[r].result, -EBUSY);
	}
	assert_int_equal(weft_sock_write(c, "abc", 3, wt_ms(LONG_MS)), 3);
	expect_read(s, 3);
	/* Many cases (more than fit on the stack): every socket at once. */
	weft_select_case_t many[12];
	weft_sock_t *cc[6], *ss[6];
	for (int i = 0; i < 6; i++) {
		tcp_pair(&cc[i], &ss[i]);
		many[2 * i] = (weft_select_case_t){.op = WEFT_SELECT_READY,
						   .waitable = weft_sock_waitable(ss[i]),
						   .events = WEFT_IO_IN};
		many[2 * i + 1] = (weft_select_case_t){.op = WEFT_SELECT_NONE};
	}
	assert_int_equal(weft_sock_write(cc[4], "a", 1, wt_ms(LONG_MS)), 1);
	assert_int_equal(weft_select(many, 12, wt_ms(LONG_MS)), 8);
	assert_true(many[8].result & WEFT_IO_IN);
	for (int i = 0; i < 6; i++) {
		weft_sock_close(cc[i]);
		weft_sock_close(ss[i]);
	}
	weft_sock_close(c);
	weft_sock_close(s);
}

static const struct CMUnitTest tests[] = {
	cmocka_unit_test(test_socket_wins),
	cmocka_unit_test(test_channel_wins),
	cmocka_unit_test(test_deadlines),
	cmocka_unit_test(test_ready_before),
	cmocka_unit_test(test_end_of_stream_and_close),
	cmocka_unit_test(test_beside_a_reader),
	cmocka_unit_test(test_udp_and_listener),
	cmocka_unit_test(test_bad_cases),
};

int main(void)
{
	const struct wt_net_suite suite = {
		.prefix = "select-sock",
		.tests = tests,
		.n = sizeof tests / sizeof tests[0],
		.bare_why = "bare metal has no kernel sockets",
	};
	return wt_net_groups(&suite);
}
