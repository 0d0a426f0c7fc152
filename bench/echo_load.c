/* SPDX-License-Identifier: MIT */
/* Load for an echo server: C connections, each sending M messages of S bytes
 * one at a time and checking every byte that comes back, with at most L
 * connections open at once. One thread, non-blocking kernel sockets and
 * epoll, independent of weft, so that it tests weft instead of sharing its
 * bugs.
 *
 * Usage: echo_load HOST PORT CONNS MSGS SIZE [LIMIT]
 * Prints "echo_load: C conns x M msgs x S B: T s, R msgs/s, E errors" and
 * exits 1 on any error (refused, reset, early close, wrong byte, no progress
 * for ECHO_LOAD_STALL_S seconds, default 30; with ECHO_LOAD_STALL_ALL=1 only
 * once no connection at all has moved for that long, so that a server that
 * is slow under load but still echoing is not counted as stalled) or when
 * ECHO_LOAD_TIMEOUT_S (default 900) passes first. Linux only: elsewhere it says so and exits 0.
 *
 * ECHO_LOAD_HOLD=1 measures how many connections a server holds at once:
 * every connection is opened (LIMIT is ignored) and stays open to the end,
 * and the messages go in rounds: message m+1 is sent on no connection
 * before every connection still alive has had message m back. Each round
 * prints "echo_load: round R: K connections open, each echoed message R
 * (T s)"; ECHO_LOAD_PAUSE_S (default 0) seconds pass between rounds; the
 * end adds "echo_load: held K of C connections open at once, each echoing
 * all M messages". Before the totals, one line per cause of failure:
 * "echo_load: failed: N: WHAT[: ERROR]" (WHAT: socket, connect, send, recv,
 * a stall...; ERROR: strerror of the errno). */
#ifdef __linux__
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_CONNECTING 128 /* connects in flight at once */
#define SCRATCH 65536
#define MAX_REPORTS 10

enum { IDLE, CONNECTING, SENDING, RECEIVING, HELD, DONE, FAILED };

struct conn {
	int fd, state;
	unsigned want;   /* epoll interest now */
	long msg;        /* the message in flight */
	long off;        /* bytes of it sent, or received */
	double progress; /* when it last moved */
};

static struct conn *conns;
static long nconns, nmsgs, size;
static long errors, reports, open_now, connecting, done;
static int hold; /* ECHO_LOAD_HOLD: rounds, every connection open */
/* When any connection last moved; ECHO_LOAD_STALL_ALL: a stall is the
 * server's only once no connection has moved for the bound. */
static double any_progress;
static int stall_all;
static long held; /* connections waiting at the round's end */
static int ep;
static unsigned char scratch[SCRATCH];

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Byte i of message m on connection c: differs between connections and
 * messages, so a byte delivered to the wrong place is caught. */
static unsigned char pattern(long c, long m, long i)
{
	uint32_t x = (uint32_t)c * 2654435761u ^ (uint32_t)m * 40503u;
	return (unsigned char)(x + (uint32_t)i * 167u + (uint32_t)(i >> 8));
}

static void finish(long id, int state)
{
	struct conn *k = &conns[id];
	if (k->state == HELD)
		held--;
	/* Holding, a connection that is done stays open until the end. */
	if (k->fd >= 0 && !(hold && state == DONE)) {
		close(k->fd); /* also leaves the epoll set */
		k->fd = -1;
		open_now--;
	}
	if (k->state == CONNECTING)
		connecting--;
	k->state = state;
	if (state == DONE)
		done++;
}

/* Failures by cause (what failed, and errno): the summary at the end says
 * how many of each, so that a harness can tell the server's refusals (a
 * reset, a refusal) from the client's own failures (no local port, no
 * descriptor) and from stalls. */
#define MAX_CAUSES 16
static struct cause {
	const char *what;
	int err;
	long n;
} causes[MAX_CAUSES];
static long other_causes;

static void count_cause(const char *what, int err)
{
	for (int i = 0; i < MAX_CAUSES; i++) {
		if (!causes[i].what)
			causes[i] = (struct cause){.what = what, .err = err};
		if (!strcmp(causes[i].what, what) && causes[i].err == err) {
			causes[i].n++;
			return;
		}
	}
	other_causes++;
}

static void fail(long id, const char *what, int err)
{
	errors++;
	count_cause(what, err);
	if (reports++ < MAX_REPORTS)
		fprintf(stderr, "echo_load: connection %ld, message %ld, byte %ld: %s%s%s\n", id,
			conns[id].msg, conns[id].off, what, err ? ": " : "",
			err ? strerror(err) : "");
	finish(id, FAILED);
}

static int interest(long id, unsigned events)
{
	struct conn *k = &conns[id];
	if (k->want == events)
		return 0;
	struct epoll_event ev = {.events = events, .data.u64 = (uint64_t)id};
	if (epoll_ctl(ep, EPOLL_CTL_MOD, k->fd, &ev) != 0)
		return -1;
	k->want = events;
	return 0;
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

/* Send what is left of the message in flight; then wait for its echo. */
static void send_more(long id)
{
	struct conn *k = &conns[id];
	while (k->off < size) {
		long n = size - k->off < SCRATCH ? size - k->off : SCRATCH;
		for (long i = 0; i < n; i++)
			scratch[i] = pattern(id, k->msg, k->off + i);
		ssize_t w = send(k->fd, scratch, (size_t)n, MSG_NOSIGNAL);
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			if (interest(id, EPOLLOUT) != 0)
				fail(id, "epoll_ctl", errno);
			return;
		}
		if (w < 0) {
			fail(id, "send", errno);
			return;
		}
		k->off += w;
		k->progress = any_progress = now();
	}
	k->state = RECEIVING;
	k->off = 0;
	if (interest(id, EPOLLIN) != 0)
		fail(id, "epoll_ctl", errno);
}

static void receive(long id)
{
	struct conn *k = &conns[id];
	/* Bounded: a message is at most size bytes. */
	while (k->state == RECEIVING) {
		long want = size - k->off < SCRATCH ? size - k->off : SCRATCH;
		ssize_t n = recv(k->fd, scratch, (size_t)want, 0);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n < 0) {
			fail(id, "recv", errno);
			return;
		}
		if (n == 0) {
			fail(id, "closed by the server before the echo", 0);
			return;
		}
		for (ssize_t i = 0; i < n; i++)
			if (scratch[i] != pattern(id, k->msg, k->off + i)) {
				k->off += i;
				fail(id, "the echo differs from what was sent", 0);
				return;
			}
		k->off += n;
		k->progress = any_progress = now();
		if (k->off < size)
			continue;
		k->msg++;
		k->off = 0;
		if (k->msg == nmsgs) {
			finish(id, DONE);
			return;
		}
		if (hold) { /* until every connection has had this message back */
			k->state = HELD;
			held++;
			return;
		}
		k->state = SENDING;
		send_more(id);
	}
}

static void ready(long id, unsigned events)
{
	struct conn *k = &conns[id];
	if (k->state == CONNECTING) {
		int err = 0;
		socklen_t len = sizeof err;
		if (getsockopt(k->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
			err = errno;
		if (err) {
			fail(id, "connect", err);
			return;
		}
		if (!(events & EPOLLOUT)) {
			if (events & (EPOLLERR | EPOLLHUP))
				fail(id, "connect: hung up", 0);
			return;
		}
		connecting--;
		k->state = SENDING;
		k->progress = any_progress = now();
		send_more(id);
	} else if (k->state == SENDING) {
		send_more(id);
	} else if (k->state == RECEIVING) {
		receive(id);
	} else if (k->state == HELD || k->state == DONE) {
		/* Held open between rounds: the server should send nothing. */
		ssize_t n = recv(k->fd, scratch, 1, 0);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (k->state == DONE)
			done--; /* counted as the failure instead */
		if (n < 0)
			fail(id, "recv while held open", errno);
		else
			fail(id,
			     n ? "data while held open" : "closed by the server while held open",
			     0);
	}
}

static long arg(const char *s, const char *what, long min, long max)
{
	char *end;
	long v = strtol(s, &end, 10);
	if (*end || v < min || v > max) {
		fprintf(stderr, "echo_load: %s %s: not in [%ld, %ld]\n", what, s, min, max);
		exit(2);
	}
	return v;
}

static long env(const char *name, long def)
{
	const char *s = getenv(name);
	return s && *s ? arg(s, name, 1, 86400) : def;
}

int main(int argc, char **argv)
{
	if (argc < 6 || argc > 7) {
		fprintf(stderr, "usage: %s HOST PORT CONNS MSGS SIZE [LIMIT]\n", argv[0]);
		return 2;
	}
	struct sockaddr_in to = {.sin_family = AF_INET};
	if (inet_pton(AF_INET, argv[1], &to.sin_addr) != 1) {
		fprintf(stderr, "echo_load: %s: not an IPv4 address\n", argv[1]);
		return 2;
	}
	to.sin_port = htons((uint16_t)arg(argv[2], "port", 1, 65535));
	nconns = arg(argv[3], "connections", 1, 10000000);
	nmsgs = arg(argv[4], "messages", 1, 1000000000);
	size = arg(argv[5], "size", 1, 16 << 20);
	long limit = argc > 6 ? arg(argv[6], "limit", 0, 10000000) : 0;
	double stall = (double)env("ECHO_LOAD_STALL_S", 30);
	stall_all = env("ECHO_LOAD_STALL_ALL", 0) != 0;
	double give_up = (double)env("ECHO_LOAD_TIMEOUT_S", 900);
	const char *h = getenv("ECHO_LOAD_HOLD");
	hold = h && *h && strcmp(h, "0") != 0;
	const char *ps = getenv("ECHO_LOAD_PAUSE_S");
	long pause = ps && *ps ? arg(ps, "ECHO_LOAD_PAUSE_S", 0, 3600) : 0;
	if (hold)
		limit = nconns;
	/* Leave descriptors for stdio and epoll. */
	struct rlimit rl;
	long fds = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY
			   ? (long)rl.rlim_cur - 16
			   : 1000000;
	if (limit == 0 || limit > nconns)
		limit = nconns;
	if (limit > fds) {
		fprintf(stderr, "echo_load: at most %ld open at once (RLIMIT_NOFILE)\n", fds);
		if (hold)
			return 2; /* every connection must be open at once */
		limit = fds;
	}
	conns = calloc((size_t)nconns, sizeof *conns);
	struct epoll_event *evs = calloc(1024, sizeof *evs);
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (!conns || !evs || ep < 0) {
		fprintf(stderr, "echo_load: out of memory or epoll\n");
		return 1;
	}
	for (long i = 0; i < nconns; i++)
		conns[i].fd = -1;
	double t0 = now(), last_scan = t0;
	any_progress = t0;
	long next = 0, round = 0;
	int timed_out = 0;
	while (done + errors < nconns) {
		/* Holding: every connection still alive has this round's echo
		 * back (none is connecting, sending or receiving): the next. */
		if (hold && held > 0 && next == nconns && held + done + errors == nconns) {
			printf("echo_load: round %ld: %ld connections open, each echoed message %ld "
			       "(%.2f s)\n",
			       round, held + done, round, now() - t0);
			fflush(stdout);
			if (pause)
				sleep((unsigned)pause);
			round++;
			any_progress = now();
			for (long i = 0; i < nconns; i++)
				if (conns[i].state == HELD) {
					conns[i].state = SENDING;
					conns[i].progress = now();
					held--;
					send_more(i);
				}
			last_scan = now();
		}
		while (next < nconns && open_now < limit && connecting < MAX_CONNECTING)
			start(next++, &to);
		int n = epoll_wait(ep, evs, 1024, 100);
		if (n < 0 && errno != EINTR) {
			perror("echo_load: epoll_wait");
			return 1;
		}
		for (int i = 0; i < n; i++) {
			long id = (long)evs[i].data.u64;
			if (conns[id].fd >= 0)
				ready(id, evs[i].events);
		}
		double t = now();
		if (t - t0 > give_up) {
			timed_out = 1;
			break;
		}
		if (t - last_scan < 1.0)
			continue;
		last_scan = t;
		if (stall_all && t - any_progress <= stall)
			continue; /* the server is still moving: slow, not stalled */
		for (long i = 0; i < next; i++)
			if (conns[i].fd >= 0 && conns[i].state != HELD && conns[i].state != DONE &&
			    t - conns[i].progress > stall)
				fail(i,
				     conns[i].state == CONNECTING ? "no connection (stalled)"
								  : "no progress (stalled)",
				     0);
	}
	double secs = now() - t0;
	if (timed_out) {
		fprintf(stderr,
			"echo_load: gave up after %.0f s with %ld of %ld connections done\n", secs,
			done, nconns);
		long left = nconns - done - errors;
		errors += left;
		for (long i = 0; i < left; i++)
			count_cause("not done when the time ran out", 0);
	}
	long msgs = 0;
	for (long i = 0; i < nconns; i++)
		msgs += conns[i].msg;
	if (hold)
		printf("echo_load: round %ld: %ld connections open, each echoed message %ld "
		       "(%.2f s)\n"
		       "echo_load: held %ld of %ld connections open at once, each echoing all %ld "
		       "messages\n",
		       round, done, round, secs, done, nconns, nmsgs);
	for (int i = 0; i < MAX_CAUSES && causes[i].what; i++)
		printf("echo_load: failed: %ld: %s%s%s\n", causes[i].n, causes[i].what,
		       causes[i].err ? ": " : "", causes[i].err ? strerror(causes[i].err) : "");
	if (other_causes)
		printf("echo_load: failed: %ld: other causes\n", other_causes);
	printf("echo_load: %ld conns x %ld msgs x %ld B: %.2f s, %.0f msgs/s, %ld errors\n", nconns,
	       nmsgs, size, secs, secs > 0 ? (double)msgs / secs : 0.0, errors);
	for (long i = 0; i < nconns; i++)
		if (conns[i].fd >= 0)
			close(conns[i].fd);
	close(ep);
	free(evs);
	free(conns);
	return errors ? 1 : 0;
}
#else
#include <stdio.h>

int main(void)
{
	printf("echo_load: needs Linux\n");
	return 0;
}
#endif
