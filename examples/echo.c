/* SPDX-License-Identifier: MIT */
/* A TCP echo server, one fiber per connection: what a client sends comes
 * back, through a fixed buffer, until it closes or stays silent for
 * ECHO_IDLE_MS. The same program runs on the kernel's sockets and on lwIP
 * (WEFT_NET, WEFT_NETIF, WEFT_IP, WEFT_GW choose).
 *
 * ECHO_MODE=step serves each connection with a step-process instead (no
 * stack: a few hundred bytes of state; mk/footprint.sh measures it). The
 * socket wakes it when it may have become ready (weft_sock_watch: data,
 * the end, an error, room to write), and it reads and writes without
 * waiting (deadline 0) until nothing is left. Its timer serves only the
 * idle bound, and a write the socket had no memory for (no acknowledgement
 * is coming to wake it): then it looks again 1 ms later, doubling up to
 * ECHO_POLL_MAX_MS. On a stack whose sockets cannot be watched (the
 * kernel's: -EOPNOTSUPP) it polls the same way all the time.
 *
 * Environment: ECHO_ADDR (0.0.0.0), ECHO_PORT (7), ECHO_IDLE_MS (60000),
 * ECHO_MAX_CONNS (20000: more are closed at once), ECHO_MODE (fiber, or
 * step), ECHO_POLL_MAX_MS (500, step mode). */
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "echo/conn.h"
#include "weft.h"
#include "weft_net.h"

#define BUF 4096 /* a step's buffer: on its runner's stack, for the step alone */
#define MS 1000000LL

static long idle_ms, max_conns, poll_max_ms;
static bool step_mode;
static _Atomic long open_conns;

/* A connection's fiber: echo/conn.h's loop, which stays within one page of
 * stack. Each round waits at most idle_ms for the client. */
static void *echo_conn(void *arg)
{
	weft_sock_t *s = arg;
	echo_serve(s, idle_ms * MS);
	weft_sock_close(s);
	atomic_fetch_sub(&open_conns, 1);
	return NULL;
}

/* ---- ECHO_MODE=step: a step-process per connection ----------------------- */

struct step_conn {
	weft_sock_t *s;
	int64_t last;    /* when data last moved */
	int64_t poll_ns; /* the timer's interval now, while polling */
	bool watched;    /* the socket wakes the process (weft_sock_watch) */
	char *pend;      /* read, not yet written back (the socket's send buffer was full) */
	size_t plen, poff;
};

#define POLL_MIN_NS MS
#define EV_FIRST 0x40u /* init's call of step: the idle timer is armed */
#define STEP_ROUNDS 8  /* reads per step at most: other processes wait behind this one */

/* Write back what is pending, without waiting: 1 when all of it went, 0
 * when some is left, -1 when the connection is done for. */
static int step_flush(struct step_conn *c)
{
	while (c->poff < c->plen) {
		ssize_t w = weft_sock_write(c->s, c->pend + c->poff, c->plen - c->poff, 0);
		if (w == -ETIMEDOUT)
			return 0;
		if (w <= 0)
			return -1;
		c->poff += (size_t)w;
	}
	free(c->pend);
	c->pend = NULL;
	c->plen = c->poff = 0;
	return 1;
}

/* Read and echo what is there, without waiting: 1 if data moved, 0 if
 * none, 2 if data moved and more may be there (STEP_ROUNDS reads made: no
 * wake will come for it), -1 when the connection is done for (end of
 * stream, error). */
static int step_io(struct step_conn *c)
{
	char buf[BUF];
	int moved = 0;
	for (int i = 0; i < STEP_ROUNDS; i++) {
		int f = step_flush(c);
		if (f <= 0)
			return f < 0 ? -1 : moved;
		ssize_t n = weft_sock_read(c->s, buf, sizeof buf, 0);
		if (n == -ETIMEDOUT)
			return moved;
		if (n <= 0)
			return -1;
		moved = 1;
		ssize_t w = weft_sock_write(c->s, buf, (size_t)n, 0);
		if (w == n)
			continue;
		if (w < 0 && w != -ETIMEDOUT)
			return -1;
		size_t sent = w > 0 ? (size_t)w : 0;
		c->pend = malloc((size_t)n - sent);
		if (!c->pend)
			return -1;
		memcpy(c->pend, buf + sent, (size_t)n - sent);
		c->plen = (size_t)n - sent;
		c->poff = 0;
		return moved;
	}
	return moved ? 2 : 0;
}

static int step_conn_step(weft_step_t *p, unsigned events)
{
	struct step_conn *c = weft_step_arg(p);
	if (events & WEFT_STEP_EV_CANCEL)
		return WEFT_STEP_DONE;
	int r = step_io(c);
	if (r < 0)
		return WEFT_STEP_DONE;
	int64_t now = weft_now();
	if (r > 0)
		c->last = now;
	if (r == 2) /* more may be there: come back after the others */
		return weft_step_wake_at(p, 0) == 0 ? WEFT_STEP_CONTINUE : WEFT_STEP_DONE;
	if (c->watched && !c->pend) {
		/* Only the idle bound is left to the timer: armed at the first
		 * step and again when it fires early (data moved since). */
		if (now - c->last >= idle_ms * MS)
			return WEFT_STEP_DONE;
		if (!(events & (WEFT_STEP_EV_TIMER | EV_FIRST)))
			return WEFT_STEP_CONTINUE;
		return weft_step_wake_at(p, c->last + idle_ms * MS) == 0 ? WEFT_STEP_CONTINUE
									 : WEFT_STEP_DONE;
	}
	if (r > 0) {
		c->last = now;
		c->poll_ns = POLL_MIN_NS;
	} else if (now - c->last > idle_ms * MS) {
		return WEFT_STEP_DONE;
	} else if (c->poll_ns < poll_max_ms * MS) {
		c->poll_ns = c->poll_ns * 2 < poll_max_ms * MS ? c->poll_ns * 2 : poll_max_ms * MS;
	}
	return weft_step_wake_at(p, now + c->poll_ns) == 0 ? WEFT_STEP_CONTINUE : WEFT_STEP_DONE;
}

static int step_conn_init(weft_step_t *p)
{
	struct step_conn *c = weft_step_arg(p);
	c->last = weft_now();
	c->poll_ns = POLL_MIN_NS;
	int err = weft_sock_watch(c->s, weft_step_pid(p));
	if (err && err != -EOPNOTSUPP)
		return WEFT_STEP_DONE;
	c->watched = err == 0;
	return step_conn_step(p, EV_FIRST);
}

static void step_conn_close(weft_step_t *p)
{
	struct step_conn *c = weft_step_arg(p);
	weft_sock_close(c->s);
	free(c->pend);
	free(c);
	atomic_fetch_sub(&open_conns, 1);
}

static const weft_step_ops_t step_conn_ops = {
	.init = step_conn_init,
	.step = step_conn_step,
	.close = step_conn_close,
};

/* 0, or an error (the caller closes s). */
static int step_conn_spawn(weft_sock_t *s)
{
	struct step_conn *c = calloc(1, sizeof *c);
	if (!c)
		return -ENOMEM;
	c->s = s;
	int err = weft_step_spawn(NULL, &step_conn_ops, c);
	if (err)
		free(c);
	return err;
}

static void *accept_loop(void *arg)
{
	weft_sock_t *ls = arg;
	weft_attr_t attr = {.name = "echo-conn"};
	for (;;) {
		weft_sock_t *s;
		int r = weft_tcp_accept(ls, &s, NULL, -1);
		if (r == -ECANCELED || r == -EBADF || r == -EINVAL) {
			fprintf(stderr, "echo: accept: %s\n", strerror(-r));
			break;
		}
		if (r < 0) { /* out of memory or descriptors: let some close */
			weft_sleep_until(weft_deadline_in(20 * MS));
			continue;
		}
		if (atomic_fetch_add(&open_conns, 1) >= max_conns ||
		    (step_mode ? step_conn_spawn(s)
			       : weft_fiber_spawn(NULL, &attr, echo_conn, s)) != 0) {
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
	    env_long("ECHO_MAX_CONNS", 20000, 1, 1000000, &max_conns) ||
	    env_long("ECHO_POLL_MAX_MS", 500, 1, 60000, &poll_max_ms))
		return 2;
	const char *mode = getenv("ECHO_MODE");
	if (mode && *mode && strcmp(mode, "fiber") && strcmp(mode, "step")) {
		fprintf(stderr, "echo: ECHO_MODE=%s: fiber or step\n", mode);
		return 2;
	}
	step_mode = mode && !strcmp(mode, "step");
	addr.port = (uint16_t)port;
	int err = weft_init(NULL);
	if (err) {
		fprintf(stderr, "echo: weft_init: %s\n", strerror(-err));
		return 1;
	}
	err = weft_net_init(NULL);
	if (err) {
		fprintf(stderr, "echo: weft_net_init: %s\n", strerror(-err));
		weft_shutdown();
		return 1;
	}
	weft_sock_t *ls;
	char name[24];
	err = weft_tcp_listen(&ls, &addr, 4096);
	if (err == 0)
		err = weft_sock_local(ls, &addr);
	if (err) {
		fprintf(stderr, "echo: listening on %s: %s\n",
			weft_addr_format(&addr, name, sizeof name), strerror(-err));
		return 1;
	}
	weft_attr_t attr = {.name = "echo-accept"};
	if (weft_fiber_spawn(NULL, &attr, accept_loop, ls) != 0) {
		fprintf(stderr, "echo: cannot spawn\n");
		return 1;
	}
	printf("echo: listening on %s (stack %s, a %s per connection)\n",
	       weft_addr_format(&addr, name, sizeof name), weft_net_stack(),
	       step_mode ? "step-process" : "fiber");
	fflush(stdout);
	weft_run(); /* until the listener fails: the server runs until killed */
	weft_net_fini();
	weft_shutdown();
	return 1;
}
