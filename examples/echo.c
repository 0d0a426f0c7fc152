/* SPDX-License-Identifier: MIT */
/* A TCP echo server, one fiber per connection: what a client sends comes
 * back, through a fixed buffer, until it closes or stays silent for
 * ECHO_IDLE_MS. The same program runs on the kernel's sockets and on lwIP
 * (WEFT_NET, WEFT_NETIF, WEFT_IP, WEFT_GW choose).
 *
 * Environment: ECHO_ADDR (0.0.0.0), ECHO_PORT (7), ECHO_IDLE_MS (60000),
 * ECHO_MAX_CONNS (20000: more are closed at once). */
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "weft.h"
#include "weft_net.h"

#define BUF 4096
#define MS 1000000LL

static long idle_ms, max_conns;
static _Atomic long open_conns;

static void *echo_conn(void *arg)
{
	weft_sock_t *s = arg;
	char buf[BUF];
	/* Each round waits at most idle_ms for the client. */
	for (;;) {
		ssize_t n = weft_sock_read(s, buf, sizeof buf, weft_deadline_in(idle_ms * MS));
		if (n <= 0)
			break;
		if (weft_sock_write(s, buf, (size_t)n, weft_deadline_in(idle_ms * MS)) != n)
			break;
	}
	weft_sock_close(s);
	atomic_fetch_sub(&open_conns, 1);
	return NULL;
}

static void *accept_loop(void *arg)
{
	weft_sock_t *ls = arg;
	weft_attr_t attr = {.name = "echo-conn"};
	for (;;) {
		weft_sock_t *s;
		int r = weft_tcp_accept(ls, &s, NULL, -1);
		if (r == -ECANCELED || r == -EBADF || r == -EINVAL) {
			fprintf(stderr, "echo: accept: %d\n", r);
			break;
		}
		if (r < 0) { /* out of memory or descriptors: let some close */
			weft_sleep_until(weft_deadline_in(20 * MS));
			continue;
		}
		if (atomic_fetch_add(&open_conns, 1) >= max_conns ||
		    weft_fiber_spawn(NULL, &attr, echo_conn, s) != 0) {
			weft_sock_close(s);
			atomic_fetch_sub(&open_conns, 1);
		}
	}
	weft_sock_close(ls);
	return NULL;
}

static int env_long(const char *name, long def, long min, long max, long *out)
{
	const char *s = getenv(name);
	*out = def;
	if (!s || !*s)
		return 0;
	char *end;
	long v = strtol(s, &end, 10);
	if (*end || v < min || v > max) {
		fprintf(stderr, "echo: %s=%s: not a number in [%ld, %ld]\n", name, s, min, max);
		return -1;
	}
	*out = v;
	return 0;
}

int main(void)
{
	weft_addr_t addr;
	long port;
	const char *a = getenv("ECHO_ADDR");
	if (weft_addr_parse(a && *a ? a : "0.0.0.0", &addr) != 0) {
		fprintf(stderr, "echo: ECHO_ADDR=%s: not an IPv4 address\n", a);
		return 2;
	}
	if (env_long("ECHO_PORT", 7, 0, 65535, &port) ||
	    env_long("ECHO_IDLE_MS", 60000, 1, 86400000, &idle_ms) ||
	    env_long("ECHO_MAX_CONNS", 20000, 1, 1000000, &max_conns))
		return 2;
	addr.port = (uint16_t)port;
	int err = weft_init(NULL);
	if (err) {
		fprintf(stderr, "echo: weft_init: %d\n", err);
		return 1;
	}
	err = weft_net_init(NULL);
	if (err) {
		fprintf(stderr, "echo: weft_net_init: %d\n", err);
		weft_shutdown();
		return 1;
	}
	weft_sock_t *ls;
	char name[24];
	err = weft_tcp_listen(&ls, &addr, 4096);
	if (err == 0)
		err = weft_sock_local(ls, &addr);
	if (err) {
		fprintf(stderr, "echo: listening on %s: %d\n",
			weft_addr_format(&addr, name, sizeof name), err);
		return 1;
	}
	weft_attr_t attr = {.name = "echo-accept"};
	if (weft_fiber_spawn(NULL, &attr, accept_loop, ls) != 0) {
		fprintf(stderr, "echo: cannot spawn\n");
		return 1;
	}
	printf("echo: listening on %s (stack %s)\n", weft_addr_format(&addr, name, sizeof name),
	       weft_net_stack());
	fflush(stdout);
	weft_run(); /* until the listener fails: the server runs until killed */
	weft_net_fini();
	weft_shutdown();
	return 1;
}
