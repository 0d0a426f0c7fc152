/* SPDX-License-Identifier: MIT */
/* IPv6 in weft_net.h: the address type, and the two stacks over ::1.
 *
 * Three CMocka groups. "ipv6-addr" needs no network: weft_addr_parse and
 * weft_addr_format round trips and refusals, and weft_addr_resolve_family
 * on numbers and "localhost" with the stack down. "ipv6-kernel" (Linux;
 * skipped on bare metal, which has no kernel sockets) and "ipv6-lwip"
 * (lwIP over "loop", which holds ::1 beside 127.0.0.1, on every target):
 * TCP echo and UDP over ::1, the addresses a socket reports, an IPv4 and an
 * IPv6 listener on one port side by side, and names resolved by family
 * preference. A name's lookup is real on each stack's path but answered by
 * the test: on "kernel" by stand-ins put where the helper thread calls the
 * host's resolver (weft__kresolve_fn, weft__kresolve6_fn); on "lwip" by a
 * DNS server fiber on [::1]:53 (so lwIP's client also talks to a server
 * over IPv6) that answers A and AAAA queries.
 *
 * Every wait is bounded; nothing asserts timings. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "weft_net.h"

#define LONG_MS 10000

static uint32_t ip4(int a, int b, int c, int d)
{
	const uint8_t x[4] = {(uint8_t)a, (uint8_t)b, (uint8_t)c, (uint8_t)d};
	uint32_t v;
	memcpy(&v, x, 4);
	return v;
}

static weft_addr_t v6(const char *s, uint16_t port)
{
	weft_addr_t a;
	assert_int_equal(weft_addr_parse(s, &a), 0);
	assert_int_equal(a.family, WEFT_AF_INET6);
	a.port = port;
	return a;
}

static weft_addr_t v4(int a, int b, int c, int d, uint16_t port)
{
	return (weft_addr_t){.ip = ip4(a, b, c, d), .port = port};
}

static const uint8_t LO6[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};

/* got is the address want is, port and scope included. */
#define EXPECT_ADDR(got, want)                                                                \
	do {                                                                                  \
		weft_addr_t g_ = (got), w_ = (want);                                          \
		char bg_[WEFT_ADDR_STRLEN], bw_[WEFT_ADDR_STRLEN];                            \
		bool same_ = g_.family == w_.family && g_.port == w_.port &&                  \
			     (g_.family == WEFT_AF_INET                                       \
				      ? g_.ip == w_.ip                                        \
				      : !memcmp(g_.ip6, w_.ip6, 16) && g_.scope == w_.scope); \
		if (!same_)                                                                   \
			fail_msg("%s = %s, expected %s", #got,                                \
				 weft_addr_format(&g_, bg_, sizeof bg_),                      \
				 weft_addr_format(&w_, bw_, sizeof bw_));                     \
	} while (0)

/* ---- ipv6-addr: parsing and formatting ------------------------------------ */

static void test_parse_format(void **state)
{
	(void)state;
	/* Text in, the same text out (RFC 5952's form already). */
	const char *same[] = {
		"[::1]:80",
		"[::]:0",
		"[fe80::1%2]:8080",
		"[2001:db8::1]:65535",
		"[2001:db8:0:1:1:1:1:1]:1",
		"[2001:0:0:1::1]:1",
		"[1::]:2",
		"[1:2:3:4:5:6:7:8]:3",
		"[::ffff:1.2.3.4]:4",
		"[fe80::abcd:ef01%4294967295]:9",
		"1.2.3.4:80",
		"0.0.0.0:0",
		"255.255.255.255:65535",
	};
	for (size_t i = 0; i < sizeof same / sizeof same[0]; i++) {
		weft_addr_t a;
		char buf[WEFT_ADDR_STRLEN];
		int r = weft_addr_parse(same[i], &a);
		if (r)
			fail_msg("parse(\"%s\") = %d", same[i], r);
		weft_addr_format(&a, buf, sizeof buf);
		if (strcmp(buf, same[i]))
			fail_msg("format(parse(\"%s\")) = \"%s\"", same[i], buf);
	}
	/* Other spellings of an address: its RFC 5952 form. */
	const char *in[] = {"::1",
			    "[0:0:0:0:0:0:0:1]",
			    "2001:DB8:0:0:0:0:0:1",
			    "[2001:db8:0000:0:1:0:0:1]:7",
			    "fe80::1%02",
			    "1:0:0:2:0:0:0:3",
			    "0:0:1:0:0:0:0:0",
			    "1:2:3:4:5:6:7::",
			    "::2:3:4:5:6:7:8",
			    "::ffff:0102:0304",
			    "[::1.2.3.4]:5",
			    "1:2:3:4:5:6:1.2.3.4"};
	const char *out[] = {"[::1]:0",
			     "[::1]:0",
			     "[2001:db8::1]:0",
			     "[2001:db8::1:0:0:1]:7",
			     "[fe80::1%2]:0",
			     "[1:0:0:2::3]:0",
			     "[0:0:1::]:0",
			     "[1:2:3:4:5:6:7:0]:0",
			     "[0:2:3:4:5:6:7:8]:0",
			     "[::ffff:1.2.3.4]:0",
			     "[::102:304]:5",
			     "[1:2:3:4:5:6:102:304]:0"};
	for (size_t i = 0; i < sizeof in / sizeof in[0]; i++) {
		weft_addr_t a;
		char buf[WEFT_ADDR_STRLEN];
		int r = weft_addr_parse(in[i], &a);
		if (r)
			fail_msg("parse(\"%s\") = %d", in[i], r);
		weft_addr_format(&a, buf, sizeof buf);
		if (strcmp(buf, out[i]))
			fail_msg("format(parse(\"%s\")) = \"%s\", expected \"%s\"", in[i], buf,
				 out[i]);
		weft_addr_t b;
		assert_int_equal(weft_addr_parse(buf, &b), 0);
		EXPECT_ADDR(b, a);
	}
	/* The fields. */
	weft_addr_t a;
	assert_int_equal(weft_addr_parse("[fe80::102:304%7]:443", &a), 0);
	const uint8_t want[16] = {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4};
	assert_int_equal(a.family, WEFT_AF_INET6);
	assert_memory_equal(a.ip6, want, 16);
	assert_int_equal(a.scope, 7);
	assert_int_equal(a.port, 443);
	assert_int_equal(a.ip, 0);
	/* IPv4 as before: family 0, what a zeroed address is. */
	assert_int_equal(weft_addr_parse("10.1.2.3:99", &a), 0);
	EXPECT_ADDR(a, v4(10, 1, 2, 3, 99));
	weft_addr_t zero = {0};
	char buf[WEFT_ADDR_STRLEN];
	assert_string_equal(weft_addr_format(&zero, buf, sizeof buf), "0.0.0.0:0");
	/* The longest text fits WEFT_ADDR_STRLEN; a short buffer is cut, ended. */
	assert_int_equal(
		weft_addr_parse("[ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe%4294967295]:65535", &a),
		0);
	weft_addr_format(&a, buf, sizeof buf);
	assert_string_equal(buf, "[ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe%4294967295]:65535");
	assert_true(strlen(buf) < WEFT_ADDR_STRLEN);
	char small[8];
	memset(small, 'x', sizeof small);
	weft_addr_format(&a, small, sizeof small);
	assert_string_equal(small, "[ffff:f");
	/* A family neither: said, not guessed. */
	a.family = 7;
	assert_string_equal(weft_addr_format(&a, buf, sizeof buf), "(bad family)");
}

static void test_parse_bad(void **state)
{
	(void)state;
	const char *bad[] = {
		"",
		"[",
		"[]",
		"[::1",
		"::1]",
		"[::1]:",
		"[::1]80",
		"[::1]:65536",
		"[::1]:-1",
		"[::1]:8x",
		"::1:80:",
		":::",
		":1",
		"1:",
		"1::2::3",
		"12345::",
		"1:2:3:4:5:6:7",
		"1:2:3:4:5:6:7:8:9",
		"::1:2:3:4:5:6:7:8",
		"1:2:3:4:5:6:7:8::",
		"g::1",
		"::1.2.3",
		"::1.2.3.256",
		"1:2:3:4:5:6:7:1.2.3.4",
		"::1.2.3.4:5",
		"fe80::1%",
		"fe80::1%0",
		"fe80::1%4294967296",
		"fe80::1%eth0",
		"[fe80::1%1:80",
		"%1",
		"[1.2.3.4]:80",
		"[1.2.3.4]",
		"1.2.3.4:",
		"1.2.3",
		"1.2.3.4.5",
		"[::1] :80",
		" ::1",
		"::1 ",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		weft_addr_t a = {.port = 4242};
		int r = weft_addr_parse(bad[i], &a);
		if (r != -EINVAL)
			fail_msg("parse(\"%s\") = %d, expected -EINVAL", bad[i], r);
		/* Left as it was. */
		assert_int_equal(a.port, 4242);
		assert_int_equal(a.family, WEFT_AF_INET);
	}
	weft_addr_t a;
	assert_int_equal(weft_addr_parse(NULL, &a), -EINVAL);
	assert_int_equal(weft_addr_parse("::1", NULL), -EINVAL);
}

/* Numbers and "localhost": no network, the stack down (the group starts
 * no stack). */
static void test_resolve_offline(void **state)
{
	(void)state;
	weft_addr_t a;
	assert_int_equal(weft_addr_resolve("[::1]:80", &a, wt_ms(LONG_MS)), 0);
	EXPECT_ADDR(a, v6("::1", 80));
	assert_int_equal(weft_addr_resolve("::1", &a, wt_ms(LONG_MS)), 0);
	EXPECT_ADDR(a, v6("::1", 0));
	assert_int_equal(weft_addr_resolve_family("[fe80::1%3]:22", WEFT_RESOLVE_INET6, &a, 0), 0);
	EXPECT_ADDR(a, v6("fe80::1%3", 22));
	/* localhost: IPv4 first unless asked otherwise. */
	assert_int_equal(weft_addr_resolve("localhost:8", &a, wt_ms(LONG_MS)), 0);
	EXPECT_ADDR(a, v4(127, 0, 0, 1, 8));
	const int prefs[] = {WEFT_RESOLVE_INET_FIRST, WEFT_RESOLVE_INET6_FIRST, WEFT_RESOLVE_INET,
			     WEFT_RESOLVE_INET6};
	const bool six[] = {false, true, false, true};
	for (size_t i = 0; i < 4; i++) {
		a = (weft_addr_t){0};
		assert_int_equal(weft_addr_resolve_family("LocalHost.:9", prefs[i], &a, -1), 0);
		EXPECT_ADDR(a, six[i] ? v6("::1", 9) : v4(127, 0, 0, 1, 9));
	}
	/* A number of the family excluded: no such address. */
	assert_int_equal(weft_addr_resolve_family("::1", WEFT_RESOLVE_INET, &a, -1), -ENOENT);
	assert_int_equal(weft_addr_resolve_family("1.2.3.4", WEFT_RESOLVE_INET6, &a, -1), -ENOENT);
	assert_int_equal(weft_addr_resolve_family("1.2.3.4:5", WEFT_RESOLVE_INET6_FIRST, &a, -1),
			 0);
	EXPECT_ADDR(a, v4(1, 2, 3, 4, 5));
	/* Bad arguments. */
	assert_int_equal(weft_addr_resolve_family("::1", 4, &a, -1), -EINVAL);
	assert_int_equal(weft_addr_resolve_family("::1", -1, &a, -1), -EINVAL);
	assert_int_equal(weft_addr_resolve_family(NULL, 0, &a, -1), -EINVAL);
	assert_int_equal(weft_addr_resolve_family("::1", 0, NULL, -1), -EINVAL);
	assert_int_equal(weft_addr_resolve("[::1", &a, -1), -EINVAL);
	assert_int_equal(weft_addr_resolve("[localhost]:80", &a, -1), -EINVAL);
	/* A name needs a stack. */
	assert_int_equal(weft_addr_resolve_family("six.test", WEFT_RESOLVE_INET6, &a, -1), -ESRCH);
}

/* ---- The stacks --------------------------------------------------------------- */

static const weft_net_config_t kernel_cfg = {.stack = "kernel"};
static const weft_net_config_t lwip_cfg = {.stack = "lwip", .netif = "loop", .dns = "::1"};
static const char *stack_name;
static const weft_net_config_t *stack_cfg;
static bool is_lwip(void) { return strcmp(stack_name, "lwip") == 0; }

/* ---- TCP echo ------------------------------------------------------------------- */

struct echo {
	weft_sock_t *ls;
	int err;
	weft_addr_t peer, local;
	size_t bytes;
};

/* Accept one connection and echo it to its end. */
static void *echo_main(void *arg)
{
	struct echo *e = arg;
	weft_sock_t *c;
	e->err = weft_tcp_accept(e->ls, &c, &e->peer, wt_ms(LONG_MS));
	if (e->err)
		return NULL;
	e->err = weft_sock_local(c, &e->local);
	char buf[4096];
	ssize_t n = 0;
	while (!e->err && (n = weft_sock_read(c, buf, sizeof buf, wt_ms(LONG_MS))) > 0) {
		ssize_t w = weft_sock_write(c, buf, (size_t)n, wt_ms(LONG_MS));
		if (w != n)
			e->err = w < 0 ? (int)w : -EIO;
		e->bytes += (size_t)n;
	}
	if (!e->err && n < 0)
		e->err = (int)n;
	weft_sock_close(c);
	return NULL;
}

static void test_tcp_echo(void **state)
{
	(void)state;
	struct echo e = {0};
	weft_addr_t at = v6("::1", 0), l;
	assert_int_equal(weft_tcp_listen(&e.ls, &at, 0), 0);
	assert_int_equal(weft_sock_local(e.ls, &l), 0);
	assert_int_equal(l.family, WEFT_AF_INET6);
	assert_memory_equal(l.ip6, LO6, 16);
	assert_true(l.port != 0);
	weft_fiber_t f = wt_spawn(echo_main, &e);

	weft_sock_t *c;
	assert_int_equal(weft_tcp_connect(&c, &l, wt_ms(LONG_MS)), 0);
	weft_addr_t cl, cp;
	assert_int_equal(weft_sock_local(c, &cl), 0);
	assert_int_equal(weft_sock_peer(c, &cp), 0);
	EXPECT_ADDR(cp, l);
	assert_int_equal(cl.family, WEFT_AF_INET6);
	assert_memory_equal(cl.ip6, LO6, 16);
	/* Bytes that span several segments, back as they went. */
	static char out[20000], in[sizeof out];
	for (size_t i = 0; i < sizeof out; i++)
		out[i] = (char)(i * 7 + 3);
	assert_int_equal(weft_sock_write(c, out, sizeof out, wt_ms(LONG_MS)), (ssize_t)sizeof out);
	size_t got = 0;
	while (got < sizeof in) {
		ssize_t n = weft_sock_read(c, in + got, sizeof in - got, wt_ms(LONG_MS));
		assert_true(n > 0);
		got += (size_t)n;
	}
	assert_memory_equal(in, out, sizeof out);
	assert_int_equal(weft_sock_shutdown(c, WEFT_SHUT_WR), 0);
	char x;
	assert_int_equal(weft_sock_read(c, &x, 1, wt_ms(LONG_MS)), 0);
	wt_join(f);
	assert_int_equal(e.err, 0);
	assert_int_equal(e.bytes, sizeof out);
	/* The server saw the client's address, and its own. */
	EXPECT_ADDR(e.peer, cl);
	EXPECT_ADDR(e.local, l);
	assert_int_equal(weft_sock_close(c), 0);
	assert_int_equal(weft_sock_close(e.ls), 0);
}

/* ---- UDP -------------------------------------------------------------------------- */

static void test_udp(void **state)
{
	(void)state;
	weft_sock_t *a, *b;
	weft_addr_t lo0 = v6("::1", 0), la, lb, from;
	assert_int_equal(weft_udp_bind(&a, &lo0), 0);
	assert_int_equal(weft_udp_bind(&b, &lo0), 0);
	assert_int_equal(weft_sock_local(a, &la), 0);
	assert_int_equal(weft_sock_local(b, &lb), 0);
	assert_int_equal(la.family, WEFT_AF_INET6);
	assert_memory_equal(lb.ip6, LO6, 16);
	assert_true(la.port && lb.port && la.port != lb.port);
	for (int i = 0; i < 3; i++) {
		char msg[64], buf[64];
		int n = snprintf(msg, sizeof msg, "datagram %d over ::1", i);
		assert_int_equal(weft_udp_sendto(a, msg, (size_t)n, &lb, wt_ms(LONG_MS)), n);
		memset(&from, 0xaa, sizeof from);
		assert_int_equal(weft_udp_recvfrom(b, buf, sizeof buf, &from, wt_ms(LONG_MS)), n);
		assert_memory_equal(buf, msg, (size_t)n);
		EXPECT_ADDR(from, la);
		/* And back to where it came from. */
		assert_int_equal(weft_udp_sendto(b, buf, (size_t)n, &from, wt_ms(LONG_MS)), n);
		assert_int_equal(weft_udp_recvfrom(a, buf, sizeof buf, &from, wt_ms(LONG_MS)), n);
		EXPECT_ADDR(from, lb);
	}
	/* An IPv6 socket sends to IPv6 addresses only, and the reverse. */
	weft_addr_t to4 = v4(127, 0, 0, 1, lb.port);
	assert_int_equal(weft_udp_sendto(a, "x", 1, &to4, wt_ms(LONG_MS)), -EAFNOSUPPORT);
	weft_sock_t *c;
	weft_addr_t any4 = {0};
	assert_int_equal(weft_udp_bind(&c, &any4), 0);
	assert_int_equal(weft_udp_sendto(c, "x", 1, &lb, wt_ms(LONG_MS)), -EAFNOSUPPORT);
	/* Nothing arrived from either. */
	char buf[4];
	assert_int_equal(weft_udp_recvfrom(b, buf, sizeof buf, NULL, 0), -ETIMEDOUT);
	/* A family neither is refused before the stack sees it. */
	weft_addr_t odd = lb;
	odd.family = 9;
	assert_int_equal(weft_udp_sendto(a, "x", 1, &odd, wt_ms(LONG_MS)), -EINVAL);
	weft_sock_t *d;
	assert_int_equal(weft_udp_bind(&d, &odd), -EINVAL);
	assert_int_equal(weft_tcp_connect(&d, &odd, wt_ms(LONG_MS)), -EINVAL);
	assert_int_equal(weft_tcp_listen(&d, &odd, 0), -EINVAL);
	assert_int_equal(weft_sock_close(a), 0);
	assert_int_equal(weft_sock_close(b), 0);
	assert_int_equal(weft_sock_close(c), 0);
}

/* ---- An IPv4 and an IPv6 listener on one port ------------------------------------- */

/* Connect to at and accept on ls: the peer's family is at's. */
static void connect_accept(weft_sock_t *ls, const weft_addr_t *at)
{
	weft_sock_t *c, *s;
	assert_int_equal(weft_tcp_connect(&c, at, wt_ms(LONG_MS)), 0);
	weft_addr_t peer, cl;
	assert_int_equal(weft_tcp_accept(ls, &s, &peer, wt_ms(LONG_MS)), 0);
	assert_int_equal(weft_sock_local(c, &cl), 0);
	EXPECT_ADDR(peer, cl);
	assert_int_equal(peer.family, at->family);
	/* One byte each way tells the two connections are one. */
	char x = 0;
	assert_int_equal(weft_sock_write(c, "4", 1, wt_ms(LONG_MS)), 1);
	assert_int_equal(weft_sock_read(s, &x, 1, wt_ms(LONG_MS)), 1);
	assert_int_equal(x, '4');
	assert_int_equal(weft_sock_close(c), 0);
	assert_int_equal(weft_sock_close(s), 0);
}

static void test_side_by_side(void **state)
{
	(void)state;
	/* Loopback addresses first, then any address of each family. */
	for (int any = 0; any < 2; any++) {
		weft_sock_t *l4, *l6, *l6b;
		weft_addr_t a4 = any ? v4(0, 0, 0, 0, 0) : v4(127, 0, 0, 1, 0), got;
		assert_int_equal(weft_tcp_listen(&l4, &a4, 0), 0);
		assert_int_equal(weft_sock_local(l4, &got), 0);
		uint16_t port = got.port;
		weft_addr_t a6 = v6(any ? "::" : "::1", port);
		int r = weft_tcp_listen(&l6, &a6, 0);
		if (r)
			fail_msg("%s: listen on [%s]:%u beside IPv4: %d", stack_name,
				 any ? "::" : "::1", port, r);
		assert_int_equal(weft_sock_local(l6, &got), 0);
		assert_int_equal(got.family, WEFT_AF_INET6);
		assert_int_equal(got.port, port);
		/* A second IPv6 listener on that port does conflict. */
		weft_addr_t other = v6(any ? "::1" : "::", port);
		assert_int_equal(weft_tcp_listen(&l6b, &other, 0), -EADDRINUSE);
		weft_addr_t to4 = v4(127, 0, 0, 1, port), to6 = v6("::1", port);
		connect_accept(l4, &to4);
		connect_accept(l6, &to6);
		/* Each took only its own. */
		weft_sock_t *s;
		assert_int_equal(weft_tcp_accept(l4, &s, NULL, 0), -ETIMEDOUT);
		assert_int_equal(weft_tcp_accept(l6, &s, NULL, 0), -ETIMEDOUT);
		assert_int_equal(weft_sock_close(l4), 0);
		/* The IPv6 listener still serves with the IPv4 one gone. */
		connect_accept(l6, &to6);
		assert_int_equal(weft_sock_close(l6), 0);
	}
}

/* ---- Names ------------------------------------------------------------------------ */

/* The answers: "both.test" has 10.9.8.7 and fd00::7, "four.test" only the
 * first, "six.test" only the second; any other name does not exist. */
static const uint8_t FD7[16] = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7};

static bool has4(const char *n) { return !strcmp(n, "both.test") || !strcmp(n, "four.test"); }
static bool has6(const char *n) { return !strcmp(n, "both.test") || !strcmp(n, "six.test"); }

/* kernel: stand-ins for the host's resolver, on the helper thread. */
extern int (*weft__kresolve_fn)(const char *name, uint32_t *ip);
extern int (*weft__kresolve6_fn)(const char *name, uint8_t ip6[16], uint32_t *scope);
static int (*saved4)(const char *name, uint32_t *ip);
static int (*saved6)(const char *name, uint8_t ip6[16], uint32_t *scope);
static _Atomic int asked4, asked6;

static int fake4(const char *name, uint32_t *ip)
{
	atomic_fetch_add(&asked4, 1);
	if (!has4(name))
		return -ENOENT;
	*ip = ip4(10, 9, 8, 7);
	return 0;
}

static int fake6(const char *name, uint8_t ip6[16], uint32_t *scope)
{
	atomic_fetch_add(&asked6, 1);
	if (!has6(name))
		return -ENOENT;
	memcpy(ip6, FD7, 16);
	*scope = 0;
	return 0;
}

/* lwip: a DNS server fiber on [::1]:53. */
static weft_sock_t *dns_sock;
static weft_fiber_t dns_fiber;

/* The question's name at q[12..] as "a.b.c" into out, and its type; the
 * question's end, or 0 if malformed. */
static size_t question(const uint8_t *q, size_t n, char *out, size_t cap, unsigned *type)
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
	if (i + 5 > n)
		return 0;
	out[o] = 0;
	*type = (unsigned)q[i + 1] << 8 | q[i + 2];
	return i + 1 + 4;
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
			return NULL; /* cancelled: the group is over */
		char name[256];
		unsigned type = 0;
		size_t end = n >= 12 ? question(q, (size_t)n, name, sizeof name, &type) : 0;
		if (!end || end > (size_t)n)
			continue;
		bool exists = has4(name) || has6(name);
		bool answer = (type == 1 && has4(name)) || (type == 28 && has6(name));
		if (type == 1)
			atomic_fetch_add(&asked4, 1);
		else if (type == 28)
			atomic_fetch_add(&asked6, 1);
		memcpy(r, q, end);
		r[2] = 0x81;                 /* a response; recursion desired */
		r[3] = exists ? 0x80 : 0x83; /* recursion available; NXDOMAIN */
		r[4] = 0, r[5] = 1;          /* one question */
		r[6] = 0, r[7] = answer ? 1 : 0;
		memset(r + 8, 0, 4);
		size_t m = end;
		if (answer && type == 1) {
			const uint8_t a[] = {0xc0, 12, 0, 1, 0, 1, 0, 0, 1, 44, 0, 4, 10, 9, 8, 7};
			memcpy(r + m, a, sizeof a);
			m += sizeof a;
		} else if (answer) {
			const uint8_t aaaa[] = {0xc0, 12, 0, 28, 0, 1, 0, 0, 1, 44, 0, 16};
			memcpy(r + m, aaaa, sizeof aaaa);
			m += sizeof aaaa;
			memcpy(r + m, FD7, 16);
			m += 16;
		}
		if (weft_udp_sendto(dns_sock, r, m, &from, wt_ms(LONG_MS)) == -ECANCELED)
			return NULL;
	}
}

static void test_names(void **state)
{
	(void)state;
	atomic_store(&asked4, 0);
	atomic_store(&asked6, 0);
	weft_addr_t a, four = v4(10, 9, 8, 7, 80), six = v6("fd00::7", 80);
	struct {
		const char *name;
		int pref;
		int r;
		const weft_addr_t *want;
	} cases[] = {
		{"both.test:80", WEFT_RESOLVE_INET_FIRST, 0, &four},
		{"both.test:80", WEFT_RESOLVE_INET6_FIRST, 0, &six},
		{"both.test:80", WEFT_RESOLVE_INET, 0, &four},
		{"both.test:80", WEFT_RESOLVE_INET6, 0, &six},
		{"six.test:80", WEFT_RESOLVE_INET_FIRST, 0, &six},
		{"six.test:80", WEFT_RESOLVE_INET6_FIRST, 0, &six},
		{"six.test:80", WEFT_RESOLVE_INET, -ENOENT, NULL},
		{"six.test:80", WEFT_RESOLVE_INET6, 0, &six},
		{"four.test:80", WEFT_RESOLVE_INET6_FIRST, 0, &four},
		{"four.test:80", WEFT_RESOLVE_INET6, -ENOENT, NULL},
		{"none.test:80", WEFT_RESOLVE_INET6_FIRST, -ENOENT, NULL},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		a = (weft_addr_t){0};
		int r = weft_addr_resolve_family(cases[i].name, cases[i].pref, &a, wt_ms(LONG_MS));
		if (r != cases[i].r)
			fail_msg("%s: resolve(%s, pref %d) = %d, expected %d", stack_name,
				 cases[i].name, cases[i].pref, r, cases[i].r);
		if (!r)
			EXPECT_ADDR(a, *cases[i].want);
	}
	/* weft_addr_resolve is IPv4 first: a name with only an IPv6 address
	 * resolves to it. */
	assert_int_equal(weft_addr_resolve("six.test:80", &a, wt_ms(LONG_MS)), 0);
	EXPECT_ADDR(a, six);
	/* Both families were asked for, each of its own. */
	assert_true(atomic_load(&asked4) > 0);
	assert_true(atomic_load(&asked6) > 0);
	/* The localhost and ::1 the stack is up with: no lookup. */
	int before4 = atomic_load(&asked4), before6 = atomic_load(&asked6);
	assert_int_equal(weft_addr_resolve_family("localhost", WEFT_RESOLVE_INET6, &a, 0), 0);
	EXPECT_ADDR(a, v6("::1", 0));
	assert_int_equal(weft_addr_resolve_family("[::1]:7", WEFT_RESOLVE_INET6_FIRST, &a, 0), 0);
	EXPECT_ADDR(a, v6("::1", 7));
	assert_int_equal(atomic_load(&asked4), before4);
	assert_int_equal(atomic_load(&asked6), before6);
	/* And what it resolved to is where a listener is. */
	weft_sock_t *ls, *c, *s;
	weft_addr_t l0 = v6("::1", 0), l;
	assert_int_equal(weft_tcp_listen(&ls, &l0, 0), 0);
	assert_int_equal(weft_sock_local(ls, &l), 0);
	char spec[32];
	snprintf(spec, sizeof spec, "localhost:%u", l.port);
	assert_int_equal(weft_addr_resolve_family(spec, WEFT_RESOLVE_INET6, &a, wt_ms(LONG_MS)), 0);
	assert_int_equal(weft_tcp_connect(&c, &a, wt_ms(LONG_MS)), 0);
	assert_int_equal(weft_tcp_accept(ls, &s, NULL, wt_ms(LONG_MS)), 0);
	assert_int_equal(weft_sock_close(s), 0);
	assert_int_equal(weft_sock_close(c), 0);
	assert_int_equal(weft_sock_close(ls), 0);
}

/* ---- Fixtures ------------------------------------------------------------------- */

static int group_failures;

static int stack_setup(void **state)
{
	(void)state;
	if (weft_init(NULL) != 0)
		return -1;
	int r = weft_net_init(stack_cfg);
	if (r != 0) {
		print_message("%s: weft_net_init: %d\n", stack_name, r);
		weft_run();
		weft_shutdown();
		return -1;
	}
	if (is_lwip()) {
		weft_addr_t a = v6("::1", 53);
		if (weft_udp_bind(&dns_sock, &a) ||
		    weft_fiber_spawn(&dns_fiber, NULL, dns_main, NULL))
			return -1;
	} else {
		saved4 = weft__kresolve_fn;
		saved6 = weft__kresolve6_fn;
		weft__kresolve_fn = fake4;
		weft__kresolve6_fn = fake6;
	}
	return 0;
}

static int stack_teardown(void **state)
{
	(void)state;
	if (is_lwip()) {
		weft_fiber_cancel(dns_fiber);
		weft_fiber_join(dns_fiber, wt_ms(30000), NULL, NULL);
		weft_sock_close(dns_sock);
		dns_sock = NULL;
		dns_fiber = 0;
	} else {
		weft__kresolve_fn = saved4;
		weft__kresolve6_fn = saved6;
	}
	int r = weft_net_fini(), r2 = weft_run(), r3 = weft_shutdown();
	if (r != 0 || r2 != 0 || r3 != 0) {
		print_message("%s teardown: weft_net_fini %d, weft_run %d, weft_shutdown %d\n",
			      stack_name, r, r2, r3);
		group_failures++;
		return -1;
	}
	return 0;
}

static const struct CMUnitTest addr_tests[] = {
	cmocka_unit_test(test_parse_format),
	cmocka_unit_test(test_parse_bad),
	cmocka_unit_test(test_resolve_offline),
};

static const struct CMUnitTest stack_tests[] = {
	cmocka_unit_test(test_tcp_echo),
	cmocka_unit_test(test_udp),
	cmocka_unit_test(test_side_by_side),
	cmocka_unit_test(test_names),
};

static int run_stack(const char *name, const weft_net_config_t *cfg)
{
	char group[32];
	snprintf(group, sizeof group, "ipv6-%s", name);
	stack_name = name;
	stack_cfg = cfg;
	return _cmocka_run_group_tests(group, stack_tests,
				       sizeof stack_tests / sizeof stack_tests[0], stack_setup,
				       stack_teardown);
}

#if WT_LINUX
#include <sys/socket.h>
#include <netinet/in.h>
#include <unistd.h>

/* Whether this host's kernel can bind ::1 (a container or a kernel without
 * IPv6 cannot), asked of the kernel directly. */
static bool host_has_ipv6(void)
{
	int fd = socket(AF_INET6, SOCK_DGRAM, 0);
	if (fd < 0)
		return false;
	struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT};
	bool ok = bind(fd, (struct sockaddr *)&a, sizeof a) == 0;
	close(fd);
	return ok;
}
#else
static bool host_has_ipv6(void) { return false; }
#endif

int main(void)
{
	int failed = _cmocka_run_group_tests("ipv6-addr", addr_tests,
					     sizeof addr_tests / sizeof addr_tests[0], wt_start,
					     wt_stop);
	const size_t n = sizeof stack_tests / sizeof stack_tests[0];
	if (!WT_LINUX)
		failed += wt_skip_group("ipv6-kernel", stack_tests, n,
					"bare metal has no kernel sockets");
	else if (!host_has_ipv6())
		failed += wt_skip_group("ipv6-kernel", stack_tests, n,
					"this host's kernel cannot bind ::1 (no IPv6)");
	else
		failed += run_stack("kernel", &kernel_cfg);
	failed += run_stack("lwip", &lwip_cfg);
	failed += group_failures;
	return failed > 100 ? 100 : failed;
}
