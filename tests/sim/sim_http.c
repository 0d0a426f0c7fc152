/* SPDX-License-Identifier: MIT */
/* A simulation scenario (scenario.h, docs/decisions/simulation.md, "Slice
 * 5, as built"): HTTP/1.1 over lwIP's loop netif (127.0.0.1), through the
 * simulated wire when WEFT_SIM_FAULTS sets drop=, dup= or delay=. The
 * server parses each request with examples/http/request.c, httpd's own
 * parser (included here: the example's code, not a copy), and answers
 * "/?n=LEN" with LEN bytes of a pattern; it keeps the connection until a
 * request says "Connection: close". CLIENTS clients each send ROUNDS pairs
 * of pipelined requests (both in one write) on one connection, lengths
 * drawn from the seed, the last with "Connection: close", and check that
 * the bytes that come back are exactly the two responses, in order, and
 * that the end follows the last one (the server closes first). A connect
 * that fails because the wire dropped every SYN is tried again, and so is
 * a connection the server resets before any byte of its first answer:
 * with the handshake's ACK and the first request lost, lwIP's server gives
 * up SYN-RECEIVED after 20 s (TCP_SYN_RCVD_TIMEOUT), sooner than the
 * client's backed-off retransmission after lost SYNs (48 s at seed 37
 * with drop=300), and answers that with a reset: TCP as specified, not a
 * fault of the port's. At most CONNECT_TRIES times each.
 *
 * It takes the wire's faults (drop, dup, delay) and no other. */
#include <errno.h>

#include "../../examples/http/request.c"
#include "scenario.h"
#include "weft_net.h"

#define CLIENTS 2
#define ROUNDS 4
#define BODY_MAX 6000
#define PORT 80
#define CONNECT_TRIES 5
#define BUF (2 * (BODY_MAX + 128))
#define WAIT_NS (3600LL * 1000000000) /* virtual time */

static weft_sock_t *listener;

static char body_byte(size_t len, size_t i) { return (char)('a' + (len * 7 + i * 13) % 26); }

/* The response to "/?n=len" (close: the last), into out; its length. */
static size_t response(char *out, size_t len, bool close)
{
	int h = snprintf(out, 128, "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n%s\r\n", len,
			 close ? "Connection: close\r\n" : "");
	for (size_t i = 0; i < len; i++)
		out[h + (int)i] = body_byte(len, i);
	return (size_t)h + len;
}

static bool write_all(weft_sock_t *s, const char *p, size_t n)
{
	return weft_sock_write(s, p, n, weft_deadline_in(WAIT_NS)) == (ssize_t)n;
}

static void *conn(void *arg)
{
	weft_sock_t *s = arg;
	char in[1024], *out = malloc(BUF);
	CHECK(out, "malloc");
	size_t have = 0, scan = 0;
	for (;;) {
		size_t end = http_head_end(in, have, &scan);
		if (!end) {
			CHECK(have < sizeof in, "a request head over %zu bytes", sizeof in);
			ssize_t n = weft_sock_read(s, in + have, sizeof in - have,
						   weft_deadline_in(WAIT_NS));
			CHECK(n >= 0, "server read: %zd", n);
			if (n == 0) {
				CHECK(have == 0, "the end inside a request");
				break;
			}
			have += (size_t)n;
			continue;
		}
		struct http_req r;
		int st = http_parse_head(in, end, &r);
		CHECK(st == 0, "request refused with %d", st);
		CHECK(http_route(r.target, r.target_len) == 1, "route of %.*s", (int)r.target_len,
		      r.target);
		CHECK(r.target_len > 4 && !memcmp(r.target, "/?n=", 4), "target %.*s",
		      (int)r.target_len, r.target);
		size_t len = 0;
		for (size_t i = 4; i < r.target_len; i++)
			len = len * 10 + (size_t)(r.target[i] - '0');
		CHECK(len <= BODY_MAX, "length %zu", len);
		CHECK(write_all(s, out, response(out, len, r.close)), "server write");
		memmove(in, in + end, have - end);
		have -= end;
		scan = 0;
		if (r.close)
			break;
	}
	free(out);
	weft_sock_close(s);
	return NULL;
}

static void *server(void *arg)
{
	(void)arg;
	weft_fiber_t f[CLIENTS];
	for (int i = 0; i < CLIENTS; i++) {
		weft_sock_t *s;
		int r = weft_tcp_accept(listener, &s, NULL, weft_deadline_in(WAIT_NS));
		CHECK(r == 0, "accept %d: %s", i, strerror(-r));
		scenario_place(0x100 + (uint64_t)i);
		CHECK(weft_fiber_spawn(&f[i], NULL, conn, s) == 0, "spawn a connection's fiber");
	}
	for (int i = 0; i < CLIENTS; i++)
		CHECK(weft_fiber_join(f[i], -1, NULL, NULL) == 0, "join a connection's fiber");
	return NULL;
}

/* Connect to the server, trying again while the wire drops every SYN. */
static weft_sock_t *dial(uint64_t c)
{
	weft_addr_t a;
	CHECK(weft_addr_parse("127.0.0.1", &a) == 0, "127.0.0.1");
	a.port = PORT;
	weft_sock_t *s = NULL;
	int r = -ETIMEDOUT;
	for (int t = 0; t < CONNECT_TRIES && r; t++) {
		r = weft_tcp_connect(&s, &a, weft_deadline_in(WAIT_NS));
		CHECK(r == 0 || r == -ETIMEDOUT || r == -ECONNREFUSED || r == -ECONNRESET ||
			      r == -ECONNABORTED,
		      "client %" PRIu64 ": connect: %s", c, strerror(-r));
	}
	CHECK(r == 0, "client %" PRIu64 ": connect: %s", c, strerror(-r));
	return s;
}

/* One connection's requests: 0, or -ECONNRESET when the server reset it
 * before any byte of the first answer (it never had the connection: its
 * SYN-RECEIVED gave up first, below). */
static int session(uint64_t c, char *want, char *got)
{
	weft_sock_t *s = dial(c);
	uint64_t z = scenario_hash(scenario_seed ^ (c + 1));
	for (int round = 0; round < ROUNDS; round++) {
		char req[160];
		size_t rl = 0, wl = 0;
		for (int k = 0; k < 2; k++) {
			z = scenario_hash(z);
			size_t len = (size_t)(z % (BODY_MAX + 1));
			bool close = round == ROUNDS - 1 && k == 1;
			rl += (size_t)snprintf(req + rl, sizeof req - rl,
					       "GET /?n=%zu HTTP/1.1\r\nHost: sim\r\n%s\r\n", len,
					       close ? "Connection: close\r\n" : "");
			wl += response(want + wl, len, close);
		}
		ssize_t w = weft_sock_write(s, req, rl, weft_deadline_in(WAIT_NS));
		if (w == -ECONNRESET && round == 0) {
			weft_sock_close(s);
			return -ECONNRESET;
		}
		CHECK(w == (ssize_t)rl, "client %" PRIu64 ": write: %zd", c, w);
		for (size_t have = 0; have < wl;) {
			ssize_t n =
				weft_sock_read(s, got + have, wl - have, weft_deadline_in(WAIT_NS));
			if (n == -ECONNRESET && round == 0 && have == 0) {
				weft_sock_close(s);
				return -ECONNRESET;
			}
			CHECK(n > 0, "client %" PRIu64 ": round %d: read at %zu of %zu: %zd", c,
			      round, have, wl, n);
			CHECK(!memcmp(got + have, want + have, (size_t)n),
			      "client %" PRIu64 ": round %d: bytes %zu to %zu differ", c, round,
			      have, have + (size_t)n);
			have += (size_t)n;
		}
	}
	ssize_t n = weft_sock_read(s, got, BUF, weft_deadline_in(WAIT_NS));
	CHECK(n == 0, "client %" PRIu64 ": %zd after the last response, not the end", c, n);
	weft_sock_close(s);
	return 0;
}

static _Atomic unsigned resets;

static void *client(void *arg)
{
	uint64_t c = (uint64_t)(uintptr_t)arg;
	scenario_place(0x200 + c);
	char *want = malloc(BUF), *got = malloc(BUF);
	CHECK(want && got, "malloc");
	int r = -ECONNRESET;
	for (int t = 0; t < CONNECT_TRIES && r; t++)
		if ((r = session(c, want, got)))
			atomic_fetch_add(&resets, 1);
	CHECK(r == 0, "client %" PRIu64 ": reset before an answer %d times", c, CONNECT_TRIES);
	free(want);
	free(got);
	return NULL;
}

int main(int argc, char **argv)
{
	scenario_faults = "drop,dup,delay";
	scenario_init("sim_http", argc, argv);
	weft_net_config_t nc = {.stack = "lwip", .netif = "loop"};
	int r = weft_net_init(&nc);
	CHECK(r == 0, "weft_net_init: %s", strerror(-r));
	weft_addr_t a;
	CHECK(weft_addr_parse("127.0.0.1", &a) == 0, "127.0.0.1");
	a.port = PORT;
	r = weft_tcp_listen(&listener, &a, CLIENTS);
	CHECK(r == 0, "listen: %s", strerror(-r));
	weft_fiber_t srv, cl[CLIENTS];
	CHECK(weft_fiber_spawn(&srv, NULL, server, NULL) == 0, "spawn the server");
	for (uint64_t c = 0; c < CLIENTS; c++)
		CHECK(weft_fiber_spawn(&cl[c], NULL, client, (void *)(uintptr_t)c) == 0,
		      "spawn client %" PRIu64, c);
	for (int c = 0; c < CLIENTS; c++)
		CHECK(weft_fiber_join(cl[c], -1, NULL, NULL) == 0, "join client %d", c);
	CHECK(weft_fiber_join(srv, -1, NULL, NULL) == 0, "join the server");
	weft_sock_close(listener);
	weft_net_stats_t st;
	CHECK(weft_net_stats(&st) == 0, "weft_net_stats");
	printf("sim_http: %d clients, %d pipelined pairs each answered in order; %u resets before "
	       "an answer; frames out %" PRIu64 "\n",
	       CLIENTS, ROUNDS, atomic_load(&resets), st.frames_out);
	r = weft_net_fini();
	CHECK(r == 0, "weft_net_fini: %s", strerror(-r));
	return scenario_end();
}
