/* SPDX-License-Identifier: MIT */
/* Abuse for an echo server, the modes bench/echo_load does not have: hold
 * idle connections, pump data until killed, half-close, reset. One thread,
 * non-blocking kernel sockets and epoll, independent of weft (as echo_load
 * is), for tests/net/soak.sh.
 *
 * Usage: echo_abuse MODE HOST PORT CONNS SIZE [LIMIT]
 *   hold       open CONNS connections, print "echo_abuse: holding CONNS" and
 *              keep them idle; a connection the server closes is an error.
 *              On SIGTERM, send one byte on each and wait (10 s) for it to
 *              come back, then exit.
 *   pump       open CONNS connections that send SIZE bytes at a time and
 *              read the echo, forever; print "echo_abuse: pumping" once
 *              every one has had an echo. Meant to be killed (SIGKILL).
 *   halfclose  each connection sends SIZE bytes, shuts down its sending
 *              side, and must get the SIZE bytes back intact, then EOF.
 *   reset      each connection sets SO_LINGER {1, 0} and 4 KiB buffers,
 *              sends SIZE bytes without reading, or fewer when its socket
 *              stays full for 0.5 s (the server, blocked writing to it, has
 *              stopped reading), and with the echo waiting unread closes:
 *              an RST, with data unread on both sides.
 * At most LIMIT (default 200) connections are open at once, except in hold
 * and pump, which open all. Prints "echo_abuse: MODE: C conns x S B: T s,
 * E errors" and exits 1 on any error (refused, reset by the server, early
 * close, wrong byte, no progress for 30 s) or after ECHO_ABUSE_TIMEOUT_S
 * (default 120; hold and pump wait for their signal instead). Linux only:
 * elsewhere it says so and exits 0. */
#ifdef __linux__
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_CONNECTING 128
#define SCRATCH 65536
#define MAX_REPORTS 10
#define STALL_S 30.0
#define FULL_S 0.5 /* reset: a socket full this long, the server has stopped reading */

enum { HOLD, PUMP, HALFCLOSE, RESET };
enum { IDLE, CONNECTING, SENDING, RECEIVING, DONE, FAILED };

struct conn {
	int fd, state;
	unsigned want;
	long sent, recvd;
	int echoed; /* pump: an echo came back */
	double progress;
};

static const char *mode_names[] = {"hold", "pump", "halfclose", "reset"};
static struct conn *conns;
static long nconns, size, errors, reports, open_now, connecting, done, echoed;
static int mode, ep;
static unsigned char scratch[SCRATCH];
static volatile sig_atomic_t stop;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static unsigned char pattern(long c, long i)
{
	return (unsigned char)((uint32_t)c * 2654435761u + (uint32_t)i * 167u + (uint32_t)(i >> 8));
}

static void finish(long id, int state)
{
	struct conn *k = &conns[id];
	if (k->fd >= 0) {
		close(k->fd);
		k->fd = -1;
		open_now--;
	}
	if (k->state == CONNECTING)
		connecting--;
	k->state = state;
	if (state == DONE)
		done++;
}

static void fail(long id, const char *what, int err)
{
	errors++;
	if (reports++ < MAX_REPORTS)
		fprintf(stderr, "echo_abuse: %s: connection %ld, sent %ld, received %ld: %s%s%s\n",
			mode_names[mode], id, conns[id].sent, conns[id].recvd, what,
			err ? ": " : "", err ? strerror(err) : "");
	finish(id, FAILED);
}

static void interest(long id, unsigned events)
{
	struct conn *k = &conns[id];
	if (k->want == events)
		return;
	struct epoll_event ev = {.events = events, .data.u64 = (uint64_t)id};
	if (epoll_ctl(ep, EPOLL_CTL_MOD, k->fd, &ev) != 0) {
		fail(id, "epoll_ctl", errno);
		return;
	}
	k->want = events;
}

static void start(long id, const struct sockaddr_in *to)
{
	struct conn *k = &conns[id];
	k->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (k->fd < 0) {
		fail(id, "socket", errno);
		return;
	}
	open_now++;
	int one = 1;
	setsockopt(k->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	if (mode == RESET) {
		/* Small buffers: the server's writes block on this side's closed
		 * window, it stops reading, and what follows waits unread in its
		 * receive queue when the reset comes. */
		struct linger lg = {.l_onoff = 1, .l_linger = 0};
		int small = 4096;
		setsockopt(k->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
		setsockopt(k->fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
		setsockopt(k->fd, SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
	}
	k->state = CONNECTING;
	connecting++;
	k->progress = now();
	k->want = EPOLLOUT;
	struct epoll_event ev = {.events = EPOLLOUT, .data.u64 = (uint64_t)id};
	if (epoll_ctl(ep, EPOLL_CTL_ADD, k->fd, &ev) != 0) {
		fail(id, "epoll_ctl", errno);
		return;
	}
	if (connect(k->fd, (const struct sockaddr *)to, sizeof *to) != 0 && errno != EINPROGRESS)
		fail(id, "connect", errno);
}

/* Send up to limit bytes in all; 1 when the socket is full, 0 when all
 * went, -1 after a failure. */
static int send_to(long id, long limit)
{
	struct conn *k = &conns[id];
	while (k->sent < limit) {
		long n = limit - k->sent < SCRATCH ? limit - k->sent : SCRATCH;
		for (long i = 0; i < n; i++)
			scratch[i] = pattern(id, k->sent + i);
		ssize_t w = send(k->fd, scratch, (size_t)n, MSG_NOSIGNAL);
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 1;
		if (w < 0) {
			fail(id, "send", errno);
			return -1;
		}
		k->sent += w;
		k->progress = now();
	}
	return 0;
}

/* Read what has come back and check it; -1 after a failure, 0 at EOF, 1
 * when there is no more for now. */
static int drain(long id)
{
	struct conn *k = &conns[id];
	for (;;) {
		ssize_t n = recv(k->fd, scratch, SCRATCH, 0);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 1;
		if (n < 0) {
			fail(id, "recv", errno);
			return -1;
		}
		if (n == 0)
			return 0;
		for (ssize_t i = 0; i < n; i++)
			if (scratch[i] != pattern(id, k->recvd + i)) {
				k->recvd += i;
				fail(id, "the echo differs from what was sent", 0);
				return -1;
			}
		k->recvd += n;
		k->progress = now();
		if (k->recvd > k->sent) {
			fail(id, "more came back than was sent", 0);
			return -1;
		}
	}
}

static void step(long id, unsigned events)
{
	struct conn *k = &conns[id];
	int r;
	switch (mode) {
	case HOLD:
		/* Nothing is sent before SIGTERM: any event is the server's close,
		 * or the echo of the final byte. */
		r = drain(id);
		if (r == 0)
			fail(id, "closed by the server", 0);
		else if (r > 0 && k->sent == 1 && k->recvd == 1)
			finish(id, DONE);
		break;
	case PUMP:
		r = drain(id);
		if (r == 0)
			fail(id, "closed by the server", 0);
		if (r <= 0)
			return;
		if (k->recvd > 0 && !k->echoed) {
			k->echoed = 1;
			echoed++;
		}
		/* Keep at most 2 x SIZE in flight. */
		if (send_to(id, k->recvd + 2 * size) >= 0 && k->fd >= 0)
			interest(id, k->sent - k->recvd >= 2 * size ? EPOLLIN : EPOLLIN | EPOLLOUT);
		break;
	case HALFCLOSE:
		if (k->state == SENDING) {
			r = send_to(id, size);
			if (r < 0)
				return;
			if (r == 0) {
				if (shutdown(k->fd, SHUT_WR) != 0) {
					fail(id, "shutdown", errno);
					return;
				}
				k->state = RECEIVING;
			}
			interest(id, r ? EPOLLIN | EPOLLOUT : EPOLLIN);
			if (k->fd < 0)
				return;
		}
		r = drain(id);
		if (r == 0 && k->state == RECEIVING && k->recvd == size)
			finish(id, DONE);
		else if (r == 0)
			fail(id, "EOF before the whole echo", 0);
		break;
	case RESET:
		if (k->state == SENDING) {
			r = send_to(id, size);
			if (r < 0)
				return;
			/* All sent; or full, which main's scan acts on once it
			 * has lasted FULL_S. */
			if (r == 0)
				k->state = RECEIVING;
			interest(id, k->state == RECEIVING ? EPOLLIN : EPOLLIN | EPOLLOUT);
			if (k->fd < 0)
				return;
		}
		/* The echo has begun to arrive and is left unread. */
		if (k->state == RECEIVING && (events & EPOLLIN))
			finish(id, DONE);
		else if (events & (EPOLLERR | EPOLLHUP))
			fail(id, "reset or closed by the server", 0);
		break;
	}
}

static void ready(long id, unsigned events)
{
	struct conn *k = &conns[id];
	if (k->state != CONNECTING) {
		step(id, events);
		return;
	}
	int err = 0;
	socklen_t len = sizeof err;
	if (getsockopt(k->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
		err = errno;
	if (err || !(events & EPOLLOUT)) {
		fail(id, "connect", err);
		return;
	}
	connecting--;
	k->state = SENDING;
	k->progress = now();
	if (mode == HOLD) {
		k->state = RECEIVING;
		interest(id, EPOLLIN | EPOLLRDHUP);
		done++; /* held */
		return;
	}
	interest(id, EPOLLIN | EPOLLOUT);
	if (k->fd >= 0)
		step(id, EPOLLOUT);
}

static long arg(const char *s, const char *what, long min, long max)
{
	char *end;
	long v = strtol(s, &end, 10);
	if (*end || v < min || v > max) {
		fprintf(stderr, "echo_abuse: %s %s: not in [%ld, %ld]\n", what, s, min, max);
		exit(2);
	}
	return v;
}

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

/* hold, on SIGTERM: one byte out on each held connection, back within
 * 10 s. */
static void hold_check(void)
{
	unsigned char b = pattern(0, 0);
	done = 0;
	for (long i = 0; i < nconns; i++) {
		struct conn *k = &conns[i];
		if (k->fd < 0)
			continue;
		b = pattern(i, 0);
		if (send(k->fd, &b, 1, MSG_NOSIGNAL) != 1) {
			fail(i, "send", errno);
			continue;
		}
		k->sent = 1;
		k->progress = now();
	}
	struct epoll_event evs[1024];
	double t0 = now();
	while (open_now > 0 && now() - t0 < 10) {
		int n = epoll_wait(ep, evs, 1024, 100);
		for (int i = 0; i < n; i++) {
			long id = (long)evs[i].data.u64;
			if (conns[id].fd >= 0)
				step(id, evs[i].events);
		}
	}
	for (long i = 0; i < nconns; i++)
		if (conns[i].fd >= 0)
			fail(i, "the final byte did not come back within 10 s", 0);
}

int main(int argc, char **argv)
{
	if (argc < 6 || argc > 7) {
		fprintf(stderr,
			"usage: %s hold|pump|halfclose|reset HOST PORT CONNS SIZE [LIMIT]\n",
			argv[0]);
		return 2;
	}
	mode = -1;
	for (int i = 0; i < 4; i++)
		if (strcmp(argv[1], mode_names[i]) == 0)
			mode = i;
	if (mode < 0) {
		fprintf(stderr, "echo_abuse: %s: not a mode\n", argv[1]);
		return 2;
	}
	struct sockaddr_in to = {.sin_family = AF_INET};
	if (inet_pton(AF_INET, argv[2], &to.sin_addr) != 1) {
		fprintf(stderr, "echo_abuse: %s: not an IPv4 address\n", argv[2]);
		return 2;
	}
	to.sin_port = htons((uint16_t)arg(argv[3], "port", 1, 65535));
	nconns = arg(argv[4], "connections", 1, 1000000);
	size = arg(argv[5], "size", 1, 16 << 20);
	long limit = argc > 6 ? arg(argv[6], "limit", 1, 1000000) : 200;
	if (mode == HOLD || mode == PUMP)
		limit = nconns;
	const char *t = getenv("ECHO_ABUSE_TIMEOUT_S");
	double give_up = t && *t ? (double)arg(t, "ECHO_ABUSE_TIMEOUT_S", 1, 86400) : 120;
	struct sigaction sa = {.sa_handler = on_term};
	sigaction(SIGTERM, &sa, NULL);
	conns = calloc((size_t)nconns, sizeof *conns);
	struct epoll_event *evs = calloc(1024, sizeof *evs);
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (!conns || !evs || ep < 0) {
		fprintf(stderr, "echo_abuse: out of memory or epoll\n");
		return 1;
	}
	for (long i = 0; i < nconns; i++)
		conns[i].fd = -1;
	double t0 = now(), last_scan = t0;
	long next = 0;
	int said = 0, endless = mode == HOLD || mode == PUMP;
	while (!stop && (endless || done + errors < nconns)) {
		while (next < nconns && open_now < limit && connecting < MAX_CONNECTING)
			start(next++, &to);
		int n = epoll_wait(ep, evs, 1024, 100);
		if (n < 0 && errno != EINTR) {
			perror("echo_abuse: epoll_wait");
			return 1;
		}
		for (int i = 0; i < n; i++) {
			long id = (long)evs[i].data.u64;
			if (conns[id].fd >= 0)
				ready(id, evs[i].events);
		}
		if (!said &&
		    ((mode == HOLD && done == nconns) || (mode == PUMP && echoed == nconns))) {
			printf("echo_abuse: %s %ld\n", mode == HOLD ? "holding" : "pumping",
			       nconns);
			fflush(stdout);
			said = 1;
		}
		double now_s = now();
		for (long i = 0; mode == RESET && i < next; i++)
			if (conns[i].fd >= 0 && conns[i].state == SENDING && conns[i].sent > 0 &&
			    now_s - conns[i].progress > FULL_S)
				finish(i, DONE);
		if (!endless && now_s - t0 > give_up) {
			fprintf(stderr, "echo_abuse: gave up after %.0f s with %ld of %ld done\n",
				now_s - t0, done, nconns);
			errors += nconns - done - errors;
			break;
		}
		if (now_s - last_scan < 1.0)
			continue;
		last_scan = now_s;
		/* A held connection is idle by design; the others must move. */
		for (long i = 0; i < next; i++)
			if (conns[i].fd >= 0 && now_s - conns[i].progress > STALL_S &&
			    (mode != HOLD || conns[i].state == CONNECTING))
				fail(i,
				     conns[i].state == CONNECTING ? "no connection (stalled)"
								  : "no progress (stalled)",
				     0);
	}
	if (mode == HOLD && stop)
		hold_check();
	double secs = now() - t0;
	printf("echo_abuse: %s: %ld conns x %ld B: %.2f s, %ld errors\n", mode_names[mode], nconns,
	       size, secs, errors);
	return errors ? 1 : 0;
}
#else
#include <stdio.h>

int main(void)
{
	printf("echo_abuse: needs Linux\n");
	return 0;
}
#endif
