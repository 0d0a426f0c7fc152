/* SPDX-License-Identifier: MIT */
/* A simulation scenario (scenario.h, docs/decisions/simulation.md, "Slice
 * 5b, as built"): TCP echo between simulated hosts (net/sim_wire.c), cut
 * by partitions when WEFT_SIM_FAULTS sets part=, the one fault it takes
 * (a drop= could fail a connect that no partition cut, which the checks
 * below would take for a bug). The server is on host 4 (examples/echo's
 * echo_serve, a fiber per connection, listening on 0.0.0.0:7); client c
 * (0 to 2) is on host c + 1 and dials host 4's end of their link,
 * 10.77.4.(c+1), so its connections come from 10.77.(c+1).4. Each client
 * sends BYTES bytes of a pattern of its own and of the attempt's, in
 * chunks of 1 to CHUNK_MAX bytes drawn from the seed, reading each chunk
 * back before the next; every wait has a deadline, OP_WAIT of virtual
 * time. The netif is WEFT_NETIF's (loop when unset: the hosts are the
 * loop netif's; tests/sim/faults.sh gives it a device to see part=
 * refused).
 *
 * What must hold under a partition, checked:
 * - every connection comes from its client's host (the routing);
 * - a byte read is the one expected at its place: never corrupted,
 *   duplicated or reordered within a connection;
 * - a connection either completes its transfer or fails with a clear
 *   error (reset, aborted, refused, timed out at a deadline, or the end of
 *   the stream before the transfer's), never a hang past the deadline;
 * - a connection fails only if the wire cut its pair of hosts during its
 *   life (weft__sim_wire_cuts): without a partition, none fails;
 * - after healing, new connections work: each client completes a
 *   transfer within TRIES connections (a partition lasts at most 90 s,
 *   one at a time, so this also bounds the run's virtual time).
 * It prints how many connections failed and how many frames the stack
 * sent and took. */
#include <errno.h>

#include "../../examples/echo/conn.h"
#include "scenario.h"
#include "weft_net.h"

#define CLIENTS 3
#define SERVER_HOST 4
#define BYTES 20000
#define CHUNK_MAX 2000
#define PORT 7
#define TRIES 12
#define CONNS_MAX 64
#define OP_WAIT (60LL * 1000000000)       /* a client's wait, virtual time */
#define SERVE_WAIT (300LL * 1000000000)   /* the server's idle connection */
#define ACCEPT_WAIT (3600LL * 1000000000) /* beyond every client's last try */

/* libweft-sim.a's (net/sim_wire.c): the partitions of the pair of hosts
 * whose ends a and b are so far, and whether it is cut now. Weak: the
 * scenario's libweft.a build (.plain) has none and refuses the seed. */
uint64_t weft__sim_wire_cuts(uint32_t a, uint32_t b, bool *now) __attribute__((weak));

static weft_sock_t *listener;
static _Atomic unsigned failed_conns;

/* Client c's byte at offset i of attempt t: a hash, so that a segment
 * delivered twice, out of place or from another connection is never the
 * byte expected there. */
static uint8_t pattern(uint64_t c, uint64_t t, uint64_t i)
{
	return (uint8_t)(scenario_hash(c << 40 | t << 32 | i >> 3) >> (8 * (i & 7)));
}

static uint32_t host_end(int x, int y)
{
	char s[32];
	weft_addr_t a;
	snprintf(s, sizeof s, "10.77.%d.%d", x, y);
	CHECK(weft_addr_parse(s, &a) == 0, "%s", s);
	return a.ip;
}

static void *conn(void *arg)
{
	weft_sock_t *s = arg;
	echo_serve(s, SERVE_WAIT);
	weft_sock_close(s);
	return NULL;
}

/* Accepts until main closes the listener (-EBADF), a fiber per
 * connection, then joins them. */
static void *server(void *arg)
{
	(void)arg;
	weft_fiber_t f[CONNS_MAX];
	int n = 0;
	for (;;) {
		weft_sock_t *s;
		int r = weft_tcp_accept(listener, &s, NULL, weft_deadline_in(ACCEPT_WAIT));
		if (r == -EBADF)
			break;
		CHECK(r == 0, "accept %d: %s", n, strerror(-r));
		CHECK(n < CONNS_MAX, "more than %d connections", CONNS_MAX);
		scenario_place(0x100 + (uint64_t)n);
		r = weft_fiber_spawn(&f[n], NULL, conn, s);
		CHECK(r == 0, "spawn a connection's fiber: %s", strerror(-r));
		n++;
	}
	for (int i = 0; i < n; i++)
		CHECK(weft_fiber_join(f[i], -1, NULL, NULL) == 0, "join a connection's fiber");
	return NULL;
}

/* A clear error of a connection the wire cut: what TCP or a deadline
 * says, never another (-EINVAL, -EBADF, -ENOMEM). */
static bool clear_error(ssize_t r)
{
	return r == -ETIMEDOUT || r == -ECONNRESET || r == -ECONNABORTED || r == -ECONNREFUSED ||
	       r == -EPIPE;
}

/* One connection of client c, attempt t: 0 when the transfer completed,
 * else the error (0 read before the last byte is -ENODATA). */
static ssize_t attempt(uint64_t c, uint64_t t, uint64_t *z)
{
	weft_addr_t a = {
		.family = WEFT_AF_INET, .ip = host_end(SERVER_HOST, (int)c + 1), .port = PORT};
	weft_sock_t *s = NULL;
	int r = weft_tcp_connect(&s, &a, weft_deadline_in(OP_WAIT));
	if (r)
		return r;
	weft_addr_t l;
	CHECK(weft_sock_local(s, &l) == 0 && l.ip == host_end((int)c + 1, SERVER_HOST),
	      "client %" PRIu64 ": its connection is not from host %" PRIu64 "'s end", c, c + 1);
	uint8_t out[CHUNK_MAX], in[CHUNK_MAX];
	ssize_t err = 0;
	for (uint64_t at = 0; at < BYTES && !err;) {
		*z = scenario_hash(*z);
		size_t len = 1 + (size_t)(*z % CHUNK_MAX);
		if (len > BYTES - at)
			len = (size_t)(BYTES - at);
		for (size_t i = 0; i < len; i++)
			out[i] = pattern(c, t, at + i);
		ssize_t w = weft_sock_write(s, out, len, weft_deadline_in(OP_WAIT));
		if (w != (ssize_t)len) {
			/* Some bytes went, then the error: the next call says it. */
			err = w >= 0 ? weft_sock_write(s, out, 1, weft_deadline_in(OP_WAIT)) : w;
			if (err >= 0)
				err = -EIO;
			break;
		}
		for (size_t got = 0; got < len;) {
			ssize_t n = weft_sock_read(s, in, len - got, weft_deadline_in(OP_WAIT));
			if (n <= 0) {
				err = n == 0 ? -ENODATA : n;
				break;
			}
			for (ssize_t i = 0; i < n; i++)
				CHECK(in[i] == pattern(c, t, at + got + (uint64_t)i),
				      "client %" PRIu64 " attempt %" PRIu64 ": byte %" PRIu64
				      " is 0x%02x, not 0x%02x",
				      c, t, at + got + (uint64_t)i, in[i],
				      pattern(c, t, at + got + (uint64_t)i));
			got += (size_t)n;
		}
		at += len;
	}
	weft_sock_close(s);
	return err;
}

static void *client(void *arg)
{
	uint64_t c = (uint64_t)(uintptr_t)arg;
	uint32_t me = host_end((int)c + 1, SERVER_HOST), srv = host_end(SERVER_HOST, (int)c + 1);
	uint64_t z = scenario_hash(scenario_seed ^ (c + 1));
	for (uint64_t t = 0; t < TRIES; t++) {
		bool cut_at_start, cut_at_end;
		uint64_t cuts = weft__sim_wire_cuts(me, srv, &cut_at_start);
		int64_t start = weft_now();
		ssize_t r = attempt(c, t, &z);
		if (r == 0) {
			scenario_place(0x200 + c * 16 + t);
			return NULL;
		}
		atomic_fetch_add(&failed_conns, 1);
		CHECK(r == -ENODATA || clear_error(r),
		      "client %" PRIu64 " attempt %" PRIu64 ": not a clear error: %zd (%s)", c, t,
		      r, strerror((int)-r));
		uint64_t after = weft__sim_wire_cuts(me, srv, &cut_at_end);
		CHECK(cut_at_start || after > cuts,
		      "client %" PRIu64 " attempt %" PRIu64 ": failed (%s) after %" PRId64
		      " ms, and the wire never cut hosts %" PRIu64 " and %d meanwhile",
		      c, t, r == -ENODATA ? "the end too soon" : strerror((int)-r),
		      (weft_now() - start) / 1000000, c + 1, SERVER_HOST);
	}
	scenario_fail("client %" PRIu64 ": no transfer completed in %d connections (a "
		      "partition heals within 90 s)",
		      c, TRIES);
}

int main(int argc, char **argv)
{
	scenario_faults = "part";
	const char *mode = scenario_init("sim_part", argc, argv);
	CHECK(!*mode, "no such mode \"%s\"", mode);
	CHECK(weft__sim_wire_cuts != NULL, "needs libweft-sim.a's simulated hosts");
	weft_net_config_t nc = {.stack = "lwip"};
	int r = weft_net_init(&nc);
	if (r == -EINVAL) {
		/* Its message is on the console (part= with a device netif). */
		printf("sim_part: weft_net_init refused: %s\n", strerror(-r));
		fflush(stdout);
		exit(2);
	}
	CHECK(r == 0, "weft_net_init: %s", strerror(-r));
	weft_addr_t a = {.family = WEFT_AF_INET, .ip = 0, .port = PORT};
	r = weft_tcp_listen(&listener, &a, CLIENTS);
	CHECK(r == 0, "listen: %s", strerror(-r));
	weft_fiber_t srv, cl[CLIENTS];
	CHECK(weft_fiber_spawn(&srv, NULL, server, NULL) == 0, "spawn the server");
	for (uint64_t c = 0; c < CLIENTS; c++)
		CHECK(weft_fiber_spawn(&cl[c], NULL, client, (void *)(uintptr_t)c) == 0,
		      "spawn client %" PRIu64, c);
	for (int c = 0; c < CLIENTS; c++)
		CHECK(weft_fiber_join(cl[c], -1, NULL, NULL) == 0, "join client %d", c);
	weft_sock_close(listener);
	CHECK(weft_fiber_join(srv, -1, NULL, NULL) == 0, "join the server");
	weft_net_stats_t st;
	CHECK(weft_net_stats(&st) == 0, "weft_net_stats");
	printf("sim_part: %d clients on hosts 1-%d to host %d, %d bytes each back in order; "
	       "connections failed: %u; frames out %" PRIu64 ", in %" PRIu64 "\n",
	       CLIENTS, CLIENTS, SERVER_HOST, BYTES, atomic_load(&failed_conns), st.frames_out,
	       st.frames_in);
	r = weft_net_fini();
	CHECK(r == 0, "weft_net_fini: %s", strerror(-r));
	return scenario_end();
}
