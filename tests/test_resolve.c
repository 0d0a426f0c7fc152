/* SPDX-License-Identifier: MIT */
/* weft_addr_resolve (weft_net.h) on every stack the target has: one CMocka
 * group per stack. On Linux that is "kernel" (the host's resolver on a
 * helper thread) and "lwip" over "loop"; on bare metal "lwip" alone.
 *
 * What needs no network (numbers, "localhost") is checked on both, and
 * with the stack down. On "lwip" the DNS server is a fiber of this test on
 * the in-memory wire, 127.0.0.1:53, which answers "known.test" with
 * 10.9.8.7, says "no such name" for any other name, and never answers
 * names starting "silent": so a name, an unknown name, a deadline that
 * passes and a cancellation while the server is silent are all real DNS
 * exchanges. On "kernel" a name goes through getaddrinfo ("127.1" and
 * "0x7f000001" are names to weft and addresses to the C library, so they
 * resolve without a network; an unknown name answers as the host's
 * resolver can), and the lookup that never returns in time is a stand-in
 * put where the helper thread calls the resolver (weft__kresolve_fn),
 * released by the test after its caller gave up: it then writes into the
 * job it was given, which ASan checks is still the job's.
 *
 * Every wait is bounded; nothing asserts timings. */
#include <stdio.h>
#include <stdlib.h>
#include <stdbool.h>
#include <string.h>

#include "testutil.h"
#include "weft_net.h"

#if WT_LINUX
#include <time.h>
#endif

#define LONG_MS 10000
#define SHORT_MS 100

static uint32_t ip4(int a, int b, int c, int d)
{
	const uint8_t x[4] = {(uint8_t)a, (uint8_t)b, (uint8_t)c, (uint8_t)d};
	uint32_t v;
	memcpy(&v, x, 4);
	return v;
}

/* ---- The stack under test ------------------------------------------------ */

/* "lwip" asks the DNS server below. */
static const weft_net_config_t lwip_cfg = {.stack = "lwip", .netif = "loop", .dns = "127.0.0.1"};

/* ---- The DNS server (lwip): a fiber on 127.0.0.1:53 ------------------------ */

static weft_sock_t *dns_sock;
static weft_fiber_t dns_fiber;
static _Atomic int dns_queries, dns_silent_queries;

/* The question's name at q[12..] as "a.b.c", into out; its end offset, or
 * 0 if malformed. */
static size_t qname(const uint8_t *q, size_t n, char *out, size_t cap)
{
	size_t i = 12, o = 0;
	while (i < n && q[i]) {
		size_t len = q[i++];
		if (len > 63 || i + len > n || o + len + 2 > cap)
			return 0;
		if (o)
			out[o++] = '.';
		memcpy(out + o, q + i, len);
		o += len;
		i += len;
	}
	if (i >= n)
		return 0;
	out[o] = 0;
	return i + 1 + 4; /* the root label, type and class */
}

static void *dns_main(void *arg)
{
	(void)arg;
	uint8_t q[512], r[600];
	for (;;) {
		weft_addr_t from;
		ssize_t n = weft_udp_recvfrom(dns_sock, q, sizeof q, &from, wt_ms(60000));
		if (n == -ETIMEDOUT)
			continue;
		if (n < 0)
			return NULL; /* cancelled by dns_stop: the group is over */
		char name[256];
		size_t end = n >= 12 ? qname(q, (size_t)n, name, sizeof name) : 0;
		if (!end || end > (size_t)n)
			continue;
		atomic_fetch_add(&dns_queries, 1);
		if (!strncmp(name, "silent", 6)) {
			atomic_fetch_add(&dns_silent_queries, 1);
			continue;
		}
		bool known = !strcmp(name, "known.test");
		memcpy(r, q, end);
		r[2] = 0x81;                /* a response; recursion desired */
		r[3] = known ? 0x80 : 0x83; /* recursion available; NXDOMAIN */
		r[4] = 0, r[5] = 1;         /* one question */
		r[6] = 0, r[7] = known ? 1 : 0;
		memset(r + 8, 0, 4);
		size_t m = end;
		if (known) {
			const uint8_t ans[] = {0xc0, 12, 0,  1, 0, 1, 0, 0, 1, 44, /* TTL 300 */
					       0,    4,  10, 9, 8, 7};
			memcpy(r + m, ans, sizeof ans);
			m += sizeof ans;
		}
		if (weft_udp_sendto(dns_sock, r, m, &from, wt_ms(LONG_MS)) == -ECANCELED)
			return NULL;
	}
}

static int dns_start(void)
{
	weft_addr_t a = {.ip = ip4(127, 0, 0, 1), .port = 53};
	int r = weft_udp_bind(&dns_sock, &a);
	if (r)
		return r;
	return weft_fiber_spawn(&dns_fiber, NULL, dns_main, NULL);
}

/* Stop the server fiber first (a cancellation ends its wait), then close
 * its socket: a handle is not used once closed. */
static void dns_stop(void)
{
	if (dns_fiber) {
		weft_fiber_cancel(dns_fiber);
		weft_fiber_join(dns_fiber, wt_ms(30000), NULL, NULL);
	}
	if (dns_sock)
		weft_sock_close(dns_sock);
	dns_sock = NULL;
	dns_fiber = 0;
}

/* ---- The kernel stack's stand-in lookup ------------------------------------ */

extern int (*weft__kresolve_fn)(const char *name, uint32_t *ip);
int shim_resolve(const char *name, uint32_t *ip);

static _Atomic int slow_entered, slow_release, slow_done;

static void nap(void)
{
#if WT_LINUX
	struct timespec ts = {0, 1000000};
	nanosleep(&ts, NULL);
#else
	wt_thread_yield();
#endif
}

/* On the helper thread: waits (at most 30 s) until the test lets it go,
 * then answers 10.9.8.7 into the job's memory. */
static int slow_lookup(const char *name, uint32_t *ip)
{
	(void)name;
	atomic_store(&slow_entered, 1);
	for (int i = 0; i < 30000 && !atomic_load(&slow_release); i++)
		nap();
	*ip = ip4(10, 9, 8, 7);
	atomic_fetch_add(&slow_done, 1);
	return 0;
}

static void slow_reset(void)
{
	atomic_store(&slow_entered, 0);
	atomic_store(&slow_release, 0);
	atomic_store(&slow_done, 0);
}

/* Let the stand-in go and wait until it has written its answer. */
static void slow_finish(void)
{
	atomic_store(&slow_release, 1);
	for (int i = 0; i < 30000 && !atomic_load(&slow_done); i++)
		nap();
	assert_int_equal(atomic_load(&slow_done), 1);
	weft__kresolve_fn = shim_resolve;
}

/* The name whose lookup never answers in time on this stack. */
static const char *silent_name(void) { return wt_net_is_lwip() ? "silent.test" : "slow.test"; }

static void silence_begin(void)
{
	if (!wt_net_is_lwip()) {
		slow_reset();
		weft__kresolve_fn = slow_lookup;
	}
}

static void silence_end(void)
{
	if (!wt_net_is_lwip())
		slow_finish();
}

/* ---- Resolving in a fiber ------------------------------------------------ */

struct res {
	const char *s;
	int64_t deadline;
	weft_addr_t a;
	int r;
};

static void *resolve_fiber(void *arg)
{
	struct res *x = arg;
	x->r = weft_addr_resolve(x->s, &x->a, x->deadline);
	return NULL;
}

static int resolve(const char *s, weft_addr_t *out, int64_t deadline)
{
	struct res x = {.s = s, .deadline = deadline};
	if (out)
		x.a = *out;
	wt_run_fiber(resolve_fiber, &x);
	if (out)
		*out = x.a;
	return x.r;
}

#define EXPECT_ADDR(got, IP, PORT)                                                       \
	do {                                                                             \
		weft_addr_t g_ = (got);                                                  \
		char b_[32];                                                             \
		if (g_.ip != (IP) || g_.port != (PORT))                                  \
			fail_msg("%s = %s", #got, weft_addr_format(&g_, b_, sizeof b_)); \
	} while (0)

/* ---- Tests ------------------------------------------------------------------ */

static void test_numbers_and_localhost(void **state)
{
	(void)state;
	weft_addr_t a;
	assert_int_equal(resolve("10.1.2.3:80", &a, wt_ms(LONG_MS)), 0);
	EXPECT_ADDR(a, ip4(10, 1, 2, 3), 80);
	assert_int_equal(resolve("10.1.2.3", &a, wt_ms(LONG_MS)), 0);
	EXPECT_ADDR(a, ip4(10, 1, 2, 3), 0);
	const char *lh[] = {"localhost", "localhost:8080", "LocalHost.:8080", "LOCALHOST:0"};
	const uint16_t port[] = {0, 8080, 8080, 0};
	for (size_t i = 0; i < sizeof lh / sizeof lh[0]; i++) {
		a = (weft_addr_t){0};
		assert_int_equal(resolve(lh[i], &a, wt_ms(LONG_MS)), 0);
		EXPECT_ADDR(a, ip4(127, 0, 0, 1), port[i]);
	}
	/* From the test's own thread too (not a fiber). */
	assert_int_equal(weft_addr_resolve("localhost:1", &a, wt_ms(LONG_MS)), 0);
	EXPECT_ADDR(a, ip4(127, 0, 0, 1), 1);
}

static void test_malformed(void **state)
{
	(void)state;
	weft_addr_t a;
	assert_int_equal(weft_addr_resolve(NULL, &a, -1), -EINVAL);
	assert_int_equal(weft_addr_resolve("localhost", NULL, -1), -EINVAL);
	char longname[300];
	memset(longname, 'a', sizeof longname);
	for (int i = 60; i < 299; i += 61)
		longname[i] = '.';
	longname[299] = 0;
	char label64[70];
	memset(label64, 'b', 64);
	strcpy(label64 + 64, ".test");
	const char *bad[] = {"",         ":80",       "host:",      "host:65536", "host:-1",
			     "host:8x",  "a..b",      ".a",         "a b",        "a_b.test",
			     "host:1:2", "1.2.3.4:x", "\xc3\xa9.t", longname,     label64};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		int r = weft_addr_resolve(bad[i], &a, wt_ms(LONG_MS));
		if (r != -EINVAL)
			fail_msg("resolve(\"%.40s\") = %d, expected -EINVAL", bad[i], r);
	}
}

static void test_name(void **state)
{
	(void)state;
	weft_addr_t a = {0};
	if (wt_net_is_lwip()) {
		assert_int_equal(resolve("known.test:443", &a, wt_ms(LONG_MS)), 0);
		EXPECT_ADDR(a, ip4(10, 9, 8, 7), 443);
		assert_true(atomic_load(&dns_queries) >= 1);
		/* Answered from lwIP's cache: deadline 0, and past ones as 0. */
		int q = atomic_load(&dns_queries);
		const int64_t now[] = {0, -2, INT64_MIN};
		for (size_t i = 0; i < 3; i++) {
			a = (weft_addr_t){0};
			assert_int_equal(resolve("known.test", &a, now[i]), 0);
			EXPECT_ADDR(a, ip4(10, 9, 8, 7), 0);
		}
		assert_int_equal(atomic_load(&dns_queries), q);
	} else {
		/* Names to weft, addresses to getaddrinfo (inet_aton's forms). */
		assert_int_equal(resolve("127.1:7", &a, wt_ms(LONG_MS)), 0);
		EXPECT_ADDR(a, ip4(127, 0, 0, 1), 7);
		assert_int_equal(resolve("0x7f000002", &a, wt_ms(LONG_MS)), 0);
		EXPECT_ADDR(a, ip4(127, 0, 0, 2), 0);
		/* From a plain thread's side: the test's own. */
		assert_int_equal(weft_addr_resolve("127.2", &a, wt_ms(LONG_MS)), 0);
		EXPECT_ADDR(a, ip4(127, 0, 0, 2), 0);
	}
}

static void test_unknown_name(void **state)
{
	(void)state;
	weft_addr_t a = {0};
	int r = resolve("no-such-host.invalid:80", &a, wt_ms(wt_net_is_lwip() ? LONG_MS : 60000));
	if (wt_net_is_lwip()) {
		assert_int_equal(r, -ENOENT);
	} else {
		/* RFC 6761: .invalid never exists. The host's resolver says so
		 * (-ENOENT), or reaches no server (-EAGAIN). */
		print_message("kernel: no-such-host.invalid: %d\n", r);
		assert_true(r == -ENOENT || r == -EAGAIN);
	}
}

static void test_negative_deadlines(void **state)
{
	(void)state;
	const int64_t past[] = {0, -2, -5, INT64_MIN};
	for (size_t i = 0; i < 4; i++) {
		weft_addr_t a = {0};
		/* No network needed: answered whatever the deadline. */
		assert_int_equal(resolve("localhost:9", &a, past[i]), 0);
		EXPECT_ADDR(a, ip4(127, 0, 0, 1), 9);
		assert_int_equal(resolve("192.0.2.1:9", &a, past[i]), 0);
		/* A name not known yet: tried once, as deadline 0, never a
		 * wait without end. */
		char name[32];
		snprintf(name, sizeof name, "silent-%zu.test", i);
		assert_int_equal(resolve(wt_net_is_lwip() ? name : "nothing.test", &a, past[i]),
				 -ETIMEDOUT);
	}
}

static void test_deadline_silent_server(void **state)
{
	(void)state;
	silence_begin();
	int before = atomic_load(&dns_silent_queries);
	weft_addr_t a = {.ip = 1, .port = 2};
	assert_int_equal(resolve(silent_name(), &a, wt_ms(SHORT_MS)), -ETIMEDOUT);
	EXPECT_ADDR(a, 1, 2); /* untouched */
	if (wt_net_is_lwip())
		assert_true(atomic_load(&dns_silent_queries) > before);
	else
		assert_int_equal(atomic_load(&slow_entered), 1);
	/* The abandoned lookup ends after its caller; then another works. */
	silence_end();
	assert_int_equal(resolve(wt_net_is_lwip() ? "known.test" : "127.1", &a, wt_ms(LONG_MS)), 0);
	EXPECT_ADDR(a, wt_net_is_lwip() ? ip4(10, 9, 8, 7) : ip4(127, 0, 0, 1), 0);
}

static void test_cancel(void **state)
{
	(void)state;
	silence_begin();
	struct res x = {.s = silent_name(), .deadline = wt_ms(60000), .a = {.ip = 1}};
	weft_fiber_t f = wt_spawn_named(resolve_fiber, &x, "resolver");
	assert_true(wt_wait_parked("resolver", NULL));
	/* While it runs, the stack cannot go down. */
	assert_int_equal(weft_net_fini(), -EBUSY);
	assert_int_equal(weft_fiber_cancel(f), 0);
	wt_join(f);
	assert_int_equal(x.r, -ECANCELED);
	assert_int_equal(x.a.ip, 1);
	silence_end();
}

static void test_stack_down(void **state)
{
	(void)state;
	assert_int_equal(weft_net_fini(), 0);
	weft_addr_t a;
	assert_int_equal(weft_addr_resolve("localhost:5", &a, -1), 0);
	EXPECT_ADDR(a, ip4(127, 0, 0, 1), 5);
	assert_int_equal(weft_addr_resolve("10.0.0.1", &a, -1), 0);
	assert_int_equal(weft_addr_resolve("known.test", &a, wt_ms(LONG_MS)), -ESRCH);
	if (wt_net_is_lwip()) {
		/* No server: said so at once. */
		weft_net_config_t c = {.stack = "lwip", .netif = "loop"};
		char *env = getenv("WEFT_DNS");
		if (!env || !*env) {
			assert_int_equal(weft_net_init(&c), 0);
			assert_int_equal(resolve("other.test", &a, wt_ms(LONG_MS)), -EDESTADDRREQ);
			assert_int_equal(weft_net_fini(), 0);
		}
		c.dns = "300.1.1.1";
		assert_int_equal(weft_net_init(&c), -EINVAL);
		c.dns = "1.2.3.4:53";
		assert_int_equal(weft_net_init(&c), -EINVAL);
		c.dns = "";
		assert_int_equal(weft_net_init(&c), -EINVAL);
	}
	assert_int_equal(weft_net_init(wt_net_cfg()), 0);
	if (wt_net_is_lwip()) {
		/* The server fiber's socket went with... nothing: it was
		 * closed before fini (group teardown order); start it again. */
		assert_int_equal(dns_start(), 0);
	}
}

/* ---- Fixtures ------------------------------------------------------------------- */

/* The DNS server runs while the group's stack is up (wt_net_groups' up and
 * down). */
static int dns_up(void) { return wt_net_is_lwip() ? dns_start() : 0; }

/* test_stack_down closes the DNS server's socket before the stack goes down
 * (fini refuses with a socket open) and starts it again after. */
static int down_setup(void **state)
{
	(void)state;
	if (wt_net_is_lwip())
		dns_stop();
	return 0;
}

static const struct CMUnitTest tests[] = {
	cmocka_unit_test(test_numbers_and_localhost),
	cmocka_unit_test(test_malformed),
	cmocka_unit_test(test_name),
	cmocka_unit_test(test_unknown_name),
	cmocka_unit_test(test_negative_deadlines),
	cmocka_unit_test(test_deadline_silent_server),
	cmocka_unit_test(test_cancel),
	cmocka_unit_test_setup(test_stack_down, down_setup),
};

int main(void)
{
	const struct wt_net_suite suite = {
		.prefix = "resolve",
		.tests = tests,
		.n = sizeof tests / sizeof tests[0],
		.bare_why = "bare metal has no kernel sockets and no host resolver",
		.lwip = &lwip_cfg,
		.up = dns_up,
		.down = dns_stop,
	};
	return wt_net_groups(&suite);
}
