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
 * a stall...; ERROR: strerror of the errno).
 *
 * Holding more connections than one process may have descriptors
 * (RLIMIT_NOFILE, which root may not be able to raise), it forks as many
 * processes as it needs, each holding a slice of the connections, and
 * keeps them in step: each says when its slice has had a round's echo,
 * the parent prints the round once all have (every connection open at
 * once) and lets them go on, and the totals are summed. The output is the
 * same as one process's. */
#ifdef __linux__
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
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
static long first, last; /* this process's connections: [first, last) */
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
struct cause {
	char what[48];
	int err;
	long n;
};
static struct cause causes[MAX_CAUSES];
static long other_causes;

static void count_causes(const char *what, int err, long n)
{
	for (int i = 0; i < MAX_CAUSES; i++) {
		if (!causes[i].what[0]) {
			snprintf(causes[i].what, sizeof causes[i].what, "%s", what);
			causes[i].err = err;
		}
		if (!strncmp(causes[i].what, what, sizeof causes[i].what - 1) &&
		    causes[i].err == err) {
			causes[i].n += n;
			return;
		}
	}
	other_causes += n;
}

static void count_cause(const char *what, int err) { count_causes(what, err, 1); }

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

/* ---- Several processes ----------------------------------------------------
 * What a process holding a slice tells the parent (one write each, smaller
 * than PIPE_BUF, so the children share one pipe): its slice has had round
 * R's echo (M_ROUND), or it has ended (M_END: its totals). The parent
 * answers on the child's own pipe: a byte to go on to the next round, or
 * end of file once every child has ended, to close its connections. */
enum { M_ROUND, M_END };
struct msg {
	int type, timed_out;
	long round, open, done, errors, msgs, other;
	struct cause causes[MAX_CAUSES];
};
_Static_assert(sizeof(struct msg) <= 4096, "a message is written at once");

static int up = -1, go = -1; /* a child's ends; -1: one process */
#define GO_ID UINT64_MAX     /* the go pipe's epoll tag */

static void say(const struct msg *m)
{
	if (write(up, m, sizeof *m) != (ssize_t)sizeof *m)
		_exit(3);
}

/* Holding: round r's line (open connections, each echoed message r), and
 * the pause before the next. */
static void print_round(long r, long open, double t0, long pause)
{
	printf("echo_load: round %ld: %ld connections open, each echoed message %ld (%.2f s)\n", r,
	       open, r, now() - t0);
	fflush(stdout);
	if (pause)
		sleep((unsigned)pause);
}

/* Holding: the next round, message *round + 1 on every connection held. */
static void next_round(long *round, double *last_scan)
{
	(*round)++;
	any_progress = now();
	for (long i = first; i < last; i++)
		if (conns[i].state == HELD) {
			conns[i].state = SENDING;
			conns[i].progress = now();
			held--;
			send_more(i);
		}
	*last_scan = now();
}

/* The connections of [first, last), in rounds when holding. Returns the
 * elapsed time; *timed_out, *round as the loop left them. */
static double run(const struct sockaddr_in *to, long limit, double stall, double give_up,
		  long pause, int *timed_out, long *round_out)
{
	struct epoll_event *evs = calloc(1024, sizeof *evs);
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (!evs || ep < 0) {
		fprintf(stderr, "echo_load: out of memory or epoll\n");
		exit(1);
	}
	if (go >= 0) {
		struct epoll_event ev = {.events = EPOLLIN, .data.u64 = GO_ID};
		if (epoll_ctl(ep, EPOLL_CTL_ADD, go, &ev) != 0) {
			perror("echo_load: epoll_ctl");
			exit(1);
		}
	}
	long count = last - first;
	double t0 = now(), last_scan = t0;
	any_progress = t0;
	long next = first, round = 0;
	int waiting = 0; /* told the parent this round is done: waiting for go */
	*timed_out = 0;
	while (done + errors < count) {
		/* Holding: every connection still alive has this round's echo
		 * back (none is connecting, sending or receiving): the next,
		 * once the other processes' slices have it too. */
		if (hold && held > 0 && next == last && held + done + errors == count && !waiting) {
			if (go < 0) {
				print_round(round, held + done, t0, pause);
				next_round(&round, &last_scan);
			} else {
				struct msg m = {
					.type = M_ROUND, .round = round, .open = held + done};
				say(&m);
				waiting = 1;
			}
		}
		while (next < last && open_now < limit && connecting < MAX_CONNECTING)
			start(next++, to);
		int n = epoll_wait(ep, evs, 1024, 100);
		if (n < 0 && errno != EINTR) {
			perror("echo_load: epoll_wait");
			exit(1);
		}
		for (int i = 0; i < n; i++) {
			if (evs[i].data.u64 == GO_ID) {
				char b;
				if (read(go, &b, 1) != 1)
					exit(1); /* the parent is gone */
				/* The other slices have the round too: the next. */
				waiting = 0;
				next_round(&round, &last_scan);
				continue;
			}
			long id = (long)evs[i].data.u64;
			if (conns[id].fd >= 0)
				ready(id, evs[i].events);
		}
		double t = now();
		if (t - t0 > give_up) {
			*timed_out = 1;
			break;
		}
		if (t - last_scan < 1.0)
			continue;
		last_scan = t;
		if (stall_all && t - any_progress <= stall)
			continue; /* the server is still moving: slow, not stalled */
		for (long i = first; i < next; i++)
			if (conns[i].fd >= 0 && conns[i].state != HELD && conns[i].state != DONE &&
			    t - conns[i].progress > stall)
				fail(i,
				     conns[i].state == CONNECTING ? "no connection (stalled)"
								  : "no progress (stalled)",
				     0);
	}
	double secs = now() - t0;
	if (*timed_out) {
		fprintf(stderr,
			"echo_load: gave up after %.0f s with %ld of %ld connections done\n", secs,
			done, count);
		long left = count - done - errors;
		errors += left;
		count_causes("not done when the time ran out", 0, left);
	}
	free(evs);
	*round_out = round;
	return secs;
}

static long sent_msgs(void)
{
	long msgs = 0;
	for (long i = first; i < last; i++)
		msgs += conns[i].msg;
	return msgs;
}

/* The totals, as one process prints them. */
static int report(long round, double secs, long msgs)
{
	if (hold)
		printf("echo_load: round %ld: %ld connections open, each echoed message %ld "
		       "(%.2f s)\n"
		       "echo_load: held %ld of %ld connections open at once, each echoing all %ld "
		       "messages\n",
		       round, done, round, secs, done, nconns, nmsgs);
	for (int i = 0; i < MAX_CAUSES && causes[i].what[0]; i++)
		printf("echo_load: failed: %ld: %s%s%s\n", causes[i].n, causes[i].what,
		       causes[i].err ? ": " : "", causes[i].err ? strerror(causes[i].err) : "");
	if (other_causes)
		printf("echo_load: failed: %ld: other causes\n", other_causes);
	printf("echo_load: %ld conns x %ld msgs x %ld B: %.2f s, %.0f msgs/s, %ld errors\n", nconns,
	       nmsgs, size, secs, secs > 0 ? (double)msgs / secs : 0.0, errors);
	fflush(stdout);
	return errors ? 1 : 0;
}

/* Hold nconns connections in procs processes of per connections each. The
 * parent keeps the rounds in step and sums the totals. */
static int run_split(const struct sockaddr_in *to, long per, int procs, double stall,
		     double give_up, long pause)
{
	int upp[2];
	int *gos = calloc((size_t)procs, sizeof *gos);
	pid_t *pids = calloc((size_t)procs, sizeof *pids);
	if (!gos || !pids || pipe2(upp, O_CLOEXEC) != 0) {
		perror("echo_load: pipe");
		return 1;
	}
	fflush(stdout);
	for (int c = 0; c < procs; c++) {
		int g[2];
		if (pipe2(g, O_CLOEXEC) != 0) {
			perror("echo_load: pipe");
			return 1;
		}
		pid_t pid = fork();
		if (pid < 0) {
			perror("echo_load: fork");
			return 1;
		}
		if (pid == 0) {
			close(upp[0]);
			close(g[1]);
			for (int k = 0; k < c; k++)
				close(gos[k]);
			up = upp[1];
			go = g[0];
			first = (long)c * per;
			last = first + per < nconns ? first + per : nconns;
			int timed_out;
			long round;
			run(to, last - first, stall, give_up, 0, &timed_out, &round);
			struct msg m = {.type = M_END,
					.timed_out = timed_out,
					.round = round,
					.done = done,
					.errors = errors,
					.msgs = sent_msgs(),
					.other = other_causes};
			memcpy(m.causes, causes, sizeof causes);
			say(&m);
			/* Open until every slice has ended: held at once. */
			char b;
			while (read(go, &b, 1) > 0)
				;
			_exit(0);
		}
		close(g[0]);
		gos[c] = g[1];
		pids[c] = pid;
	}
	close(upp[1]);
	double t0 = now();
	int ended = 0, waiting = 0;
	long round = 0, open = 0, msgs = 0, last_round = 0;
	while (ended < procs) {
		struct msg m;
		ssize_t r = read(upp[0], &m, sizeof m);
		if (r != (ssize_t)sizeof m) {
			fprintf(stderr,
				"echo_load: a process of the load ended without its totals\n");
			errors++;
			break;
		}
		if (m.type == M_ROUND) {
			waiting++;
			open += m.open;
			round = m.round;
		} else {
			ended++;
			done += m.done;
			errors += m.errors;
			msgs += m.msgs;
			other_causes += m.other;
			if (m.round > last_round)
				last_round = m.round;
			for (int i = 0; i < MAX_CAUSES && m.causes[i].what[0]; i++)
				count_causes(m.causes[i].what, m.causes[i].err, m.causes[i].n);
		}
		/* Every slice still running has the round: print it, go on. */
		if (waiting > 0 && waiting + ended == procs) {
			print_round(round, open + done, t0, pause);
			for (int c = 0; c < procs; c++)
				if (write(gos[c], "g", 1) != 1 && errno != EPIPE)
					perror("echo_load: write");
			waiting = 0;
			open = 0;
		}
	}
	double secs = now() - t0;
	int rc = report(last_round, secs, msgs);
	for (int c = 0; c < procs; c++)
		close(gos[c]);
	for (int c = 0; c < procs; c++) {
		int st;
		waitpid(pids[c], &st, 0);
	}
	free(gos);
	free(pids);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc < 6 || argc > 7) {
		fprintf(stderr, "usage: %s HOST PORT CONNS MSGS SIZE [LIMIT]\n", argv[0]);
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
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
	/* Leave descriptors for stdio, epoll and the pipes. */
	struct rlimit rl;
	long fds = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY
			   ? (long)rl.rlim_cur - 16
			   : 1000000;
	if (limit == 0 || limit > nconns)
		limit = nconns;
	conns = calloc((size_t)nconns, sizeof *conns);
	if (!conns) {
		fprintf(stderr, "echo_load: out of memory\n");
		return 1;
	}
	for (long i = 0; i < nconns; i++)
		conns[i].fd = -1;
	if (limit > fds) {
		if (hold) {
			/* Every connection open at once: more processes. */
			int procs = (int)((nconns + fds - 1) / fds);
			long per = (nconns + procs - 1) / procs;
			fprintf(stderr,
				"echo_load: %ld connections held by %d processes (RLIMIT_NOFILE %ld "
				"each)\n",
				nconns, procs, fds + 16);
			return run_split(&to, per, procs, stall, give_up, pause);
		}
		fprintf(stderr, "echo_load: at most %ld open at once (RLIMIT_NOFILE)\n", fds);
		limit = fds;
	}
	first = 0;
	last = nconns;
	int timed_out;
	long round;
	double secs = run(&to, limit, stall, give_up, pause, &timed_out, &round);
	int rc = report(round, secs, sent_msgs());
	for (long i = 0; i < nconns; i++)
		if (conns[i].fd >= 0)
			close(conns[i].fd);
	close(ep);
	free(conns);
	return rc;
}
#else
#include <stdio.h>

int main(void)
{
	printf("echo_load: needs Linux\n");
	return 0;
}
#endif
