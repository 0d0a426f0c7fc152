/* SPDX-License-Identifier: MIT */
/* Choosing the Linux reactor's backend ($WEFT_IO, kernel-shim/linux/io.c):
 * a malformed value fails weft_init; "uring" where io_uring cannot be set
 * up (here: the shim's test hook, as a kernel without it, qemu-user or a
 * seccomp filter would refuse) says so once on stderr and runs on epoll;
 * "uring" where it can runs on io_uring, with multishot polls and with the
 * one-shot polls of a kernel older than 5.13 (the other hook): a byte, a
 * hang-up and a writer's room reach their waiters, a report that came
 * while nobody waited is kept, and a number closed and reused starts
 * clean. The whole of test_io, test_net and the rest run on io_uring in
 * make test's WEFT_IO=uring pass. Linux only. */
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#if WT_LINUX
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <sys/time.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/utsname.h>

#include "linux/feature.h"
#include "linux/io.h"
#include "service.h"

/* Start the runtime with $WEFT_IO=value. */
static int start_with(const char *value)
{
	setenv("WEFT_IO", value, 1);
	weft_config_t cfg = {.workers = 2};
	return weft_init(&cfg);
}

static void stop(void)
{
	assert_int_equal(weft_run(), 0);
	assert_int_equal(weft_shutdown(), 0);
	unsetenv("WEFT_IO");
}

/* stderr into a temporary file (already unlinked) while the runtime says
 * what it uses; saved is the stderr to put back. */
struct captured {
	int file, saved;
};

static struct captured capture_stderr(void)
{
	char path[] = "/tmp/weft-uring-XXXXXX";
	struct captured c = {.file = mkstemp(path)};
	assert_true(c.file >= 0);
	unlink(path);
	fflush(stderr);
	c.saved = dup(2);
	assert_true(c.saved >= 0);
	assert_int_equal(dup2(c.file, 2), 2);
	return c;
}

/* stderr back where it was: before any assert, which prints on it. */
static void restore_stderr(const struct captured *c)
{
	dup2(c->saved, 2);
	close(c->saved);
}

/* What was said, up to cap - 1 bytes and a NUL, into out; closes the file.
 * pread's result. */
static long read_captured(const struct captured *c, char *out, size_t cap)
{
	memset(out, 0, cap);
	long n = pread(c->file, out, cap - 1, 0);
	close(c->file);
	return n;
}

/* Skip where this machine cannot set up an io_uring (qemu-user, some
 * sandboxes), saying so. */
static void need_uring(void)
{
	if (!wt_uring_works()) {
		print_message("io_uring cannot be set up here: nothing to check\n");
		skip();
	}
}

struct waiter {
	int fd;
	unsigned events;
	int r;
};

static void *wait_one(void *arg)
{
	struct waiter *w = arg;
	w->r = weft_fd_wait(w->fd, w->events, wt_ms(20000));
	return NULL;
}

static void *wait_drained(void *arg)
{
	struct waiter *w = arg;
	w->r = weft__io_wait_drained(w->fd, w->events, wt_ms(20000));
	return NULL;
}

/* What every backend must do, on the one now in use. */
static void readiness_works(void)
{
	int p[2];
	wt_pipe(p);
	/* A byte wakes a parked reader. */
	struct waiter w = {.fd = p[0], .events = WEFT_IO_IN};
	weft_fiber_t f = wt_spawn_named(wait_one, &w, "reader");
	assert_true(wt_wait_parked("reader", "fd"));
	assert_int_equal(wt_write(p[1], "x", 1), 1);
	wt_join(f);
	assert_int_equal(w.r, WEFT_IO_IN);
	char c;
	assert_int_equal(wt_read(p[0], &c, 1), 1);
	/* A report while nobody waits is kept for a drained wait. */
	assert_int_equal(wt_write(p[1], "y", 1), 1);
	struct waiter d = {.fd = p[0], .events = WEFT_IO_IN};
	wt_run_fiber(wait_drained, &d); /* kept, or on its way: it comes */
	assert_int_equal(d.r, WEFT_IO_IN);
	assert_int_equal(wt_read(p[0], &c, 1), 1);
	/* Room to write: at once. */
	struct waiter o = {.fd = p[1], .events = WEFT_IO_OUT};
	wt_run_fiber(wait_one, &o);
	assert_int_equal(o.r, WEFT_IO_OUT);
	/* The writer's end closed: the reader sees it. */
	f = wt_spawn_named(wait_one, &w, "reader");
	assert_true(wt_wait_parked("reader", "fd"));
	wt_close(p[1]);
	wt_join(f);
	assert_true(w.r & WEFT_IO_IN);
	/* Forgotten, closed, reused: nothing of the old one's. */
	int old = p[0];
	wt_close(p[0]);
	wt_pipe(p);
	assert_int_equal(p[0], old);
	assert_int_equal(weft__io_wait_drained(p[0], WEFT_IO_IN, wt_ms(20)), -ETIMEDOUT);
	f = wt_spawn_named(wait_one, &w, "reader");
	assert_true(wt_wait_parked("reader", "fd"));
	assert_int_equal(wt_write(p[1], "z", 1), 1);
	wt_join(f);
	assert_int_equal(w.r, WEFT_IO_IN);
	/* A regular file cannot be waited on, as with epoll. */
	int reg = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	assert_true(reg >= 0);
	assert_int_equal(weft_fd_wait(reg, WEFT_IO_IN, 0), -EPERM);
	close(reg);
	wt_close(p[0]);
	wt_close(p[1]);
}

static void test_bad_value_fails_init(void **state)
{
	(void)state;
	setenv("WEFT_IO", "kqueue", 1);
	assert_int_equal(weft_init(NULL), -EINVAL);
	setenv("WEFT_IO", "uring ", 1);
	assert_int_equal(weft_init(NULL), -EINVAL);
	unsetenv("WEFT_IO");
}

/* Run first: the line is said once per process. stderr goes to a file
 * while the runtime starts and waits. */
static void test_fallback_says_why_and_works(void **state)
{
	(void)state;
	struct captured err = capture_stderr();
	shim_io_uring_refuse = ENOSYS;
	assert_int_equal(start_with("uring"), 0);
	int p[2];
	wt_pipe(p);
	struct waiter w = {.fd = p[0], .events = WEFT_IO_IN};
	assert_int_equal(wt_write(p[1], "x", 1), 1);
	wt_run_fiber(wait_one, &w);
	const struct shim_io_ops *used = shim_io_current();
	restore_stderr(&err);
	shim_io_uring_refuse = 0;
	assert_int_equal(w.r, WEFT_IO_IN);
	assert_ptr_equal(used, &shim_io_epoll);
	char buf[400];
	assert_true(read_captured(&err, buf, sizeof buf) > 0);
	assert_non_null(strstr(buf, "weft: WEFT_IO=uring: "));
	assert_non_null(strstr(buf, "using epoll"));
	assert_ptr_equal(strchr(buf, '\n'), buf + strlen(buf) - 1); /* one line */
	readiness_works();
	wt_close(p[0]);
	wt_close(p[1]);
	stop();
}

static void test_epoll_by_default(void **state)
{
	(void)state;
	assert_int_equal(start_with(""), 0);
	readiness_works();
	assert_ptr_equal(shim_io_current(), &shim_io_epoll);
	stop();
}

static void on_uring(int oneshot)
{
	need_uring();
	shim_io_uring_oneshot = oneshot;
	assert_int_equal(start_with("uring"), 0);
	readiness_works();
	const struct shim_io_ops *used = shim_io_current();
	stop();
	shim_io_uring_oneshot = 0;
	assert_ptr_equal(used, &shim_io_uring);
}

static void test_uring_multishot(void **state)
{
	(void)state;
	on_uring(0);
}

static void test_uring_oneshot(void **state)
{
	(void)state;
	on_uring(1);
}

/* ---- A program's own thread -------------------------------------------------
 * A thread the program made (pthread_create, not the shim's) waits on a
 * pipe through weft once, and then does a blocking read of its own, with
 * SO_RCVTIMEO, on a socket weft never saw, while the pipe is written to
 * every few milliseconds. Had that thread put the pipe's poll in the
 * kernel, each write would run the poll's completion as task work on it,
 * which breaks such a read with EINTR (the kernel never restarts a read
 * with a timeout); the poll is the poller's, and the read times out. */

struct own {
	int pipe_rd, sock;
	_Atomic int reading;
	int waited, r, err;
};

static void *own_thread(void *arg)
{
	struct own *o = arg;
	o->waited = weft_fd_wait(o->pipe_rd, WEFT_IO_IN, wt_ms(100));
	atomic_store(&o->reading, 1);
	char c;
	errno = 0;
	o->r = (int)read(o->sock, &c, 1);
	o->err = errno;
	atomic_store(&o->reading, 2);
	return NULL;
}

static void own_thread_not_interrupted(int oneshot)
{
	need_uring();
	shim_io_uring_oneshot = oneshot;
	assert_int_equal(start_with("uring"), 0);
	int p[2], s[2];
	wt_pipe(p);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, s), 0);
	struct timeval tv = {.tv_sec = 1, .tv_usec = 500000};
	assert_int_equal(setsockopt(s[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv), 0);
	struct own o = {.pipe_rd = p[0], .sock = s[0]};
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, own_thread, &o), 0);
	/* Writes until the read ends (at most 3 s), each a wake of the
	 * pipe's poll; the pipe holds them all. */
	int writes = 0;
	int64_t end = wt_ms(3000);
	while (atomic_load(&o.reading) != 2 && weft_now() < end) {
		if (atomic_load(&o.reading) == 1 && wt_write(p[1], "x", 1) == 1)
			writes++;
		usleep(5000);
	}
	pthread_join(t, NULL);
	const struct shim_io_ops *used = shim_io_current();
	wt_close(p[0]);
	wt_close(p[1]);
	close(s[0]);
	close(s[1]);
	stop();
	shim_io_uring_oneshot = 0;
	assert_ptr_equal(used, &shim_io_uring);
	assert_int_equal(o.waited, -ETIMEDOUT);
	if (o.err == EINTR)
		fail_msg("the thread's read was interrupted after %d writes", writes);
	assert_int_equal(o.r, -1);
	assert_true(o.err == EAGAIN || o.err == EWOULDBLOCK);
	assert_true(writes >= 10);
}

static void test_own_thread_not_interrupted(void **state)
{
	(void)state;
	own_thread_not_interrupted(0);
}

static void test_own_thread_not_interrupted_oneshot(void **state)
{
	(void)state;
	own_thread_not_interrupted(1);
}

/* ---- Completion sockets (uring_sock.c) -------------------------------------
 * At the shim's level, as net/kernel.c uses it: try, and on -EAGAIN wait
 * drained. The peers are plain blocking sockets of the test's thread. */

/* Start on io_uring with both completion features, or skip where the
 * machine has no io_uring (qemu-user). Linux 6.0 has both: a kernel that
 * has them must use them. */
static void start_completions(void)
{
	need_uring();
	assert_int_equal(start_with("uring"), 0);
	int p[2];
	wt_pipe(p); /* the reactor starts at the first wait */
	assert_int_equal(weft_fd_wait(p[1], WEFT_IO_OUT, wt_ms(5000)), WEFT_IO_OUT);
	wt_close(p[0]);
	wt_close(p[1]);
	assert_ptr_equal(shim_io_current(), &shim_io_uring);
	struct utsname u;
	assert_int_equal(uname(&u), 0);
	if (atoi(u.release) >= 6)
		assert_int_equal(shim_io_uring_completions(), SHIM_URING_ACCEPT | SHIM_URING_RECV);
	else if (shim_io_uring_completions() != (SHIM_URING_ACCEPT | SHIM_URING_RECV)) {
		stop();
		print_message("Linux %s: no completion sockets to check\n", u.release);
		skip();
	}
}

/* As net/kernel.c closes: the reactor forgets the fd first. */
static void sclose(int fd)
{
	weft__io_forget(fd);
	assert_int_equal(shim_sock_close(fd), 0);
}

static int listener(uint16_t *port)
{
	int l = shim_sock_open(SHIM_SOCK_STREAM);
	assert_true(l >= 0);
	struct shim_sockaddr a = {.ip = htonl(INADDR_LOOPBACK)};
	assert_int_equal(shim_sock_bind(l, &a), 0);
	assert_int_equal(shim_sock_listen(l, 512), 0);
	assert_int_equal(shim_sock_name(l, &a), 0);
	*port = a.port;
	return l;
}

/* A blocking client connected to port, with room to send big writes at
 * once. */
static int client(uint16_t port)
{
	int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(c >= 0);
	int sz = 1 << 20;
	setsockopt(c, SOL_SOCKET, SO_SNDBUF, &sz, sizeof sz);
	struct sockaddr_in sin = {.sin_family = AF_INET,
				  .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	assert_int_equal(connect(c, (struct sockaddr *)&sin, sizeof sin), 0);
	return c;
}

static uint16_t local_port(int fd)
{
	struct sockaddr_in sin;
	socklen_t l = sizeof sin;
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sin, &l), 0);
	return ntohs(sin.sin_port);
}

static int accept_wait(int l, struct shim_sockaddr *peer)
{
	for (int i = 0; i < 1000; i++) {
		int r = shim_sock_accept(l, peer);
		if (r != -EAGAIN)
			return r;
		int w = weft__io_wait_drained(l, WEFT_IO_IN, wt_ms(5000));
		if (w < 0)
			return w;
	}
	return -ETIMEDOUT;
}

static long recv_wait(int fd, void *buf, size_t len)
{
	for (int i = 0; i < 1000; i++) {
		long r = shim_sock_recv(fd, buf, len);
		if (r != -EAGAIN)
			return r;
		int w = weft__io_wait_drained(fd, WEFT_IO_IN, wt_ms(5000));
		if (w < 0)
			return w;
	}
	return -ETIMEDOUT;
}

/* Until shim_uring_held(fd) is at least n, waiting on src meanwhile (1 ms
 * at a time, at most 5 s in all): completions are reaped by the poller,
 * which polls while somebody waits. */
static int held_reaches_on(int src, int fd, int n)
{
	for (int i = 0; i < 5000; i++) {
		if (shim_uring_held(fd) >= n)
			return 1;
		(void)weft__io_wait_drained(src, WEFT_IO_IN, wt_ms(1));
	}
	return 0;
}

static int held_reaches(int fd, int n) { return held_reaches_on(fd, fd, n); }

static unsigned char pattern(unsigned who, size_t i)
{
	return (unsigned char)(who * 31 + i * 7 + i / 251);
}

/* sockets_work: what shim_uring_held says of a socket that waits for
 * readiness (-1), of one whose completion is armed and holds nothing (0),
 * or ANY_HELD: not checked. */
#define ANY_HELD (-2)

/* A connection accepted and read through the shim, as net/kernel.c does,
 * on whatever the backend now uses for each: the listener's accept and
 * the stream's receive, once armed, are held as accept_held and recv_held
 * say. */
static void sockets_work(int accept_held, int recv_held)
{
	uint16_t port;
	int l = listener(&port);
	struct shim_sockaddr peer;
	assert_int_equal(shim_sock_accept(l, &peer), -EAGAIN);
	if (accept_held != ANY_HELD)
		assert_int_equal(shim_uring_held(l), accept_held);
	int c = client(port);
	int s = accept_wait(l, &peer);
	assert_true(s >= 0);
	char b[4];
	assert_int_equal(shim_sock_recv(s, b, sizeof b), -EAGAIN);
	if (recv_held != ANY_HELD)
		assert_int_equal(shim_uring_held(s), recv_held);
	assert_int_equal(send(c, "hi", 2, 0), 2);
	assert_int_equal(recv_wait(s, b, sizeof b), 2);
	assert_memory_equal(b, "hi", 2);
	close(c);
	assert_int_equal(recv_wait(s, b, sizeof b), 0);
	sclose(s);
	sclose(l);
}

/* The connections are accepted ahead of the caller and queued on the
 * listener, each with its peer's address and TCP_NODELAY; past the
 * listener's bound the kernel's backlog holds them, and they come when the
 * queue drains. */
static void test_accept_multishot_queues(void **state)
{
	(void)state;
	start_completions();
	uint16_t port;
	int l = listener(&port);
	struct shim_sockaddr peer;
	assert_int_equal(shim_sock_accept(l, &peer), -EAGAIN); /* arms it */
	assert_int_equal(shim_uring_held(l), 0);
	enum { N = SHIM_URING_ACCEPT_MAX + 36 };
	int cl[N];
	for (int i = 0; i < N; i++)
		cl[i] = client(port);
	assert_true(held_reaches(l, SHIM_URING_ACCEPT_MAX));
	bool seen[N] = {0};
	for (int i = 0; i < N; i++) {
		int a = accept_wait(l, &peer);
		assert_true(a >= 0);
		int j = 0;
		while (j < N && local_port(cl[j]) != peer.port)
			j++;
		assert_true(j < N);
		assert_false(seen[j]);
		seen[j] = true;
		assert_int_equal(peer.ip, htonl(INADDR_LOOPBACK));
		int nd = 0;
		socklen_t sl = sizeof nd;
		assert_int_equal(getsockopt(a, IPPROTO_TCP, TCP_NODELAY, &nd, &sl), 0);
		assert_true(nd);
		sclose(a);
	}
	assert_int_equal(shim_sock_accept(l, &peer), -EAGAIN);
	sclose(l);
	for (int i = 0; i < N; i++)
		close(cl[i]);
	stop();
}

/* Closing a listener whose multishot accept is in the kernel: the
 * connections it queued are closed (their peers see the end), and the
 * accept is cancelled, so the listener's file really closes (its port is
 * free again). */
static void test_accept_close_while_armed(void **state)
{
	(void)state;
	start_completions();
	uint16_t port;
	int l = listener(&port);
	struct shim_sockaddr peer;
	assert_int_equal(shim_sock_accept(l, &peer), -EAGAIN);
	int cl[3];
	for (int i = 0; i < 3; i++)
		cl[i] = client(port);
	assert_true(held_reaches(l, 3));
	sclose(l);
	for (int i = 0; i < 3; i++) {
		struct timeval tv = {.tv_sec = 5};
		setsockopt(cl[i], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
		char c;
		long r = recv(cl[i], &c, 1, 0);
		assert_true(r == 0 || (r < 0 && errno == ECONNRESET));
		close(cl[i]);
	}
	/* The accept no longer holds the listener: its port is free. */
	int again = shim_sock_open(SHIM_SOCK_STREAM), bound = -1;
	struct shim_sockaddr a = {.ip = htonl(INADDR_LOOPBACK), .port = port};
	for (int i = 0; i < 5000 && (bound = shim_sock_bind(again, &a)) == -EADDRINUSE; i++)
		usleep(1000);
	assert_int_equal(bound, 0);
	assert_int_equal(shim_sock_listen(again, 4), 0);
	sclose(again);
	stop();
}

/* One accepted stream, its receive armed (the first read said -EAGAIN). */
static int armed_pair(int *peer_out)
{
	uint16_t port;
	int l = listener(&port);
	int c = client(port);
	struct shim_sockaddr peer;
	int s = accept_wait(l, &peer);
	assert_true(s >= 0);
	sclose(l);
	char b;
	assert_int_equal(shim_sock_recv(s, &b, 1), -EAGAIN);
	assert_int_equal(shim_uring_held(s), 0);
	*peer_out = c;
	return s;
}

/* Data is received ahead of the reader into provided buffers; a read
 * smaller than what is queued takes part of a buffer, a larger one takes
 * what is queued and comes back short; nothing is lost or reordered. */
static void test_recv_smaller_and_larger_reads(void **state)
{
	(void)state;
	start_completions();
	int c, s = armed_pair(&c);
	enum { LEN = 10000 };
	static unsigned char out[LEN], in[3 * LEN];
	for (size_t i = 0; i < LEN; i++)
		out[i] = pattern(1, i);
	assert_int_equal(send(c, out, LEN, 0), LEN);
	assert_true(held_reaches(s, 1));
	int before = shim_uring_held(-1);
	assert_int_equal(recv_wait(s, in, 100), 100);
	size_t got = 100;
	while (got < LEN) {
		long r = recv_wait(s, in + got, sizeof in - got);
		assert_true(r > 0);
		got += (size_t)r;
	}
	assert_int_equal(got, LEN);
	assert_memory_equal(in, out, LEN);
	assert_true(before > 0);
	assert_int_equal(shim_uring_held(s), 0); /* given back as copied out */
	assert_int_equal(shim_sock_recv(s, in, 1), -EAGAIN);
	close(c);
	assert_int_equal(recv_wait(s, in, 1), 0);
	sclose(s);
	stop();
}

/* The end of the stream comes after the data, and stays. */
static void test_recv_eof_after_data(void **state)
{
	(void)state;
	start_completions();
	int c, s = armed_pair(&c);
	assert_int_equal(send(c, "abc", 3, 0), 3);
	shutdown(c, SHUT_WR);
	char b[10];
	assert_true(held_reaches(s, 1));
	assert_int_equal(recv_wait(s, b, 1), 1);
	assert_int_equal(b[0], 'a');
	assert_int_equal(recv_wait(s, b, sizeof b), 2);
	assert_memory_equal(b, "bc", 2);
	assert_int_equal(recv_wait(s, b, sizeof b), 0);
	assert_int_equal(shim_sock_recv(s, b, sizeof b), 0);
	/* The other direction still works. */
	assert_int_equal(shim_sock_send(s, "z", 1), 1);
	assert_int_equal(recv(c, b, 1, 0), 1);
	close(c);
	sclose(s);
	stop();
}

/* A peer's reset ends the reads with -ECONNRESET (or the end), after
 * whatever data came first; it never hangs them. */
static void test_recv_peer_reset(void **state)
{
	(void)state;
	start_completions();
	int c, s = armed_pair(&c);
	assert_int_equal(send(c, "xyz", 3, 0), 3);
	assert_true(held_reaches(s, 1));
	struct linger lg = {.l_onoff = 1, .l_linger = 0};
	setsockopt(c, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
	close(c);
	char b[8];
	assert_int_equal(recv_wait(s, b, sizeof b), 3);
	assert_memory_equal(b, "xyz", 3);
	long r = recv_wait(s, b, sizeof b);
	assert_true(r == -ECONNRESET || r == 0);
	r = recv_wait(s, b, sizeof b);
	assert_true(r == -ECONNRESET || r == 0);
	sclose(s);
	stop();
}

/* Closing a stream whose receive is in the kernel, with data queued and
 * unread: the receive is cancelled, so the file really closes, and the
 * peer sees a reset (as with unread data in the kernel); the buffers go
 * back to the ring, and a socket given the same number starts clean. */
static void test_recv_close_while_armed(void **state)
{
	(void)state;
	start_completions();
	int c, s = armed_pair(&c);
	assert_int_equal(send(c, "OLD", 3, 0), 3);
	assert_true(held_reaches(s, 1));
	sclose(s);
	assert_int_equal(shim_uring_held(-1), 0);
	struct timeval tv = {.tv_sec = 5};
	setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	char b[8];
	errno = 0;
	assert_int_equal(recv(c, b, 1, 0), -1);
	assert_int_equal(errno, ECONNRESET);
	close(c);
	int c2, s2 = armed_pair(&c2);
	assert_int_equal(s2, s); /* the lowest free number */
	assert_int_equal(send(c2, "NEW", 3, 0), 3);
	assert_int_equal(recv_wait(s2, b, sizeof b), 3);
	assert_memory_equal(b, "NEW", 3);
	close(c2);
	sclose(s2);
	stop();
}

/* Many streams whose data outgrows both bounds: each pauses at its own
 * (its multishot receive cancelled), the ring runs dry (-ENOBUFS), and
 * every byte still arrives, in order, as the reader drains them. */
static void test_recv_many_sockets_bounded(void **state)
{
	(void)state;
	start_completions();
	enum { N = 80, LEN = SHIM_URING_SOCK_BUFS * 4096 };
	uint16_t port;
	int l = listener(&port);
	static int cl[N], sv[N];
	static unsigned char out[LEN], in[LEN];
	struct shim_sockaddr peer;
	for (int i = 0; i < N; i++) {
		cl[i] = client(port);
		sv[i] = accept_wait(l, &peer);
		assert_true(sv[i] >= 0);
		char b;
		assert_int_equal(shim_sock_recv(sv[i], &b, 1), -EAGAIN);
	}
	sclose(l);
	for (int i = 0; i < N; i++) {
		for (size_t k = 0; k < LEN; k++)
			out[k] = pattern((unsigned)i, k);
		assert_int_equal(send(cl[i], out, LEN, 0), LEN);
	}
	/* Both bounds: the ring's buffers are all queued to readers. */
	assert_true(held_reaches_on(sv[0], -1, SHIM_URING_BUFS - SHIM_URING_SOCK_BUFS));
	assert_true(shim_uring_held(-1) <= SHIM_URING_BUFS);
	for (int i = 0; i < N; i++) {
		size_t got = 0;
		while (got < LEN) {
			long r = recv_wait(sv[i], in + got, LEN - got);
			assert_true(r > 0);
			got += (size_t)r;
		}
		for (size_t k = 0; k < LEN; k++)
			if (in[k] != pattern((unsigned)i, k))
				fail_msg("socket %d: byte %zu differs", i, k);
		close(cl[i]);
		assert_int_equal(recv_wait(sv[i], in, 1), 0);
		sclose(sv[i]);
	}
	assert_int_equal(shim_uring_held(-1), 0);
	stop();
}

/* A kernel without one of them: that one waits for readiness, the other
 * still completes, and stderr says which (once per process: not checked
 * here, the fallback test above owns the first line). */
static void test_features_fall_back_one_by_one(void **state)
{
	(void)state;
	need_uring();
	for (int k = 0; k < 2; k++) {
		shim_io_uring_no_accept = k == 0;
		shim_io_uring_no_recv = k == 1;
		assert_int_equal(start_with("uring"), 0);
		readiness_works();
		unsigned got = shim_io_uring_completions();
		sockets_work(k == 0 ? -1 : 0, k == 1 ? -1 : 0);
		stop();
		shim_io_uring_no_accept = shim_io_uring_no_recv = 0;
		assert_int_equal(got, k == 0 ? SHIM_URING_RECV : SHIM_URING_ACCEPT);
	}
}

/* ---- $WEFT_IO_MISSING (kernel-shim/linux/feature.c) -------------------------
 * Each feature the io_uring backend probes, reported missing by the knob as
 * a kernel without it would: its fallback is used, said in exactly one line
 * on stderr naming it, and the runtime works (readiness, and a kernel
 * socket accepted and read through the shim). make test runs test_io,
 * test_net and the rest again with some of them hidden
 * (tests/uring_fallbacks.sh); main() keeps that value for the last test
 * below and runs the others without it. */

static char env_missing[200];

/* What hiding a feature takes away: the features no longer in use, or the
 * whole ring (epoll). In the order the backend probes them: one hidden
 * behind an earlier one is not said. */
static const struct {
	const char *name;
	unsigned gone;
	bool epoll;
} hides[] = {
	{"io_uring", 0, true},
	{"single_mmap", 0, true},
	{"nodrop", 0, true},
	{"ext_arg", 0, true},
	{"opcodes", 0, true},
	{"multishot_poll",
	 1u << SF_MULTISHOT_POLL | 1u << SF_MULTISHOT_ACCEPT | 1u << SF_PBUF_RING |
		 1u << SF_MULTISHOT_RECV,
	 false},
	{"coop_taskrun", 1u << SF_COOP_TASKRUN, false},
	{"multishot_accept", 1u << SF_MULTISHOT_ACCEPT, false},
	{"multishot_recv", 1u << SF_PBUF_RING | 1u << SF_MULTISHOT_RECV, false},
	{"pbuf_ring", 1u << SF_PBUF_RING | 1u << SF_MULTISHOT_RECV, false},
};

/* Lines of text that contain s. */
static int lines_with(const char *text, const char *s)
{
	int n = 0;
	for (const char *l = text; *l;) {
		const char *e = strchr(l, '\n');
		size_t len = e ? (size_t)(e - l) : strlen(l);
		const char *hit = strstr(l, s);
		if (hit && hit < l + len)
			n++;
		l += len + (e ? 1 : 0);
	}
	return n;
}

/* Start on io_uring with $WEFT_IO_MISSING=missing, stderr into out while the
 * reactor starts (at the first wait); what it uses into *used, *feats. */
static void start_hidden(const char *missing, char *out, size_t cap,
			 const struct shim_io_ops **used, unsigned *feats)
{
	struct captured err = capture_stderr();
	shim_feature_said_reset();
	setenv("WEFT_IO_MISSING", missing, 1);
	int r = start_with("uring");
	int p[2] = {-1, -1}, w = -1;
	if (r == 0) {
		wt_pipe(p);
		w = weft_fd_wait(p[1], WEFT_IO_OUT, wt_ms(5000));
	}
	*used = shim_io_current();
	*feats = shim_io_uring_features();
	restore_stderr(&err);
	assert_int_equal(r, 0);
	assert_int_equal(w, WEFT_IO_OUT);
	wt_close(p[0]);
	wt_close(p[1]);
	assert_true(read_captured(&err, out, cap) >= 0);
}

/* Hide missing (a comma-separated list of hides[]' names), and check each
 * one's fallback and its line. */
static void hidden_falls_back(const char *missing)
{
	static char out[4096];
	const struct shim_io_ops *used;
	unsigned feats;
	start_hidden(missing, out, sizeof out, &used, &feats);
	readiness_works();
	sockets_work(ANY_HELD, ANY_HELD);
	stop();
	unsetenv("WEFT_IO_MISSING");
	print_message("WEFT_IO_MISSING=%s: %s", missing, out);
	bool epoll = false;
	unsigned gone = 0;
	int named = 0;
	for (size_t i = 0; i < sizeof hides / sizeof hides[0]; i++) {
		char want[80];
		snprintf(want, sizeof want, ": WEFT_IO_MISSING=%s)", hides[i].name);
		size_t n = strlen(hides[i].name);
		const char *m = strstr(missing, hides[i].name);
		bool listed = m && (m == missing || m[-1] == ',') && (m[n] == ',' || !m[n]);
		if (!listed)
			continue;
		named++;
		/* Hidden behind another that was said first (the ring went to
		 * epoll, or took the completion sockets with it): no line. */
		if (epoll || (hides[i].gone && (gone & hides[i].gone) == hides[i].gone)) {
			assert_int_equal(lines_with(out, want), 0);
			continue;
		}
		assert_int_equal(lines_with(out, want), 1);
		epoll |= hides[i].epoll;
		gone |= hides[i].gone;
	}
	assert_true(named > 0);
	assert_ptr_equal(used, epoll ? &shim_io_epoll : &shim_io_uring);
	if (epoll) {
		assert_int_equal(feats, 0);
		assert_int_equal(lines_with(out, "; using epoll"), 1);
	} else {
		assert_int_equal(feats & gone, 0);
	}
	/* Every line is a fallback's, each once: a kernel with all of them
	 * (6.0 and later) says nothing else. */
	struct utsname u;
	assert_int_equal(uname(&u), 0);
	int lines = lines_with(out, "weft: "), ends = 0;
	for (const char *c = out; *c; c++)
		ends += *c == '\n';
	assert_int_equal(ends, lines);
	if (atoi(u.release) >= 6)
		assert_int_equal(lines, lines_with(out, ": WEFT_IO_MISSING="));
}

/* Each feature alone, then two together. */
static void test_missing_each_falls_back(void **state)
{
	(void)state;
	need_uring();
	for (size_t i = 0; i < sizeof hides / sizeof hides[0]; i++)
		hidden_falls_back(hides[i].name);
	hidden_falls_back("coop_taskrun,multishot_accept");
	hidden_falls_back("pbuf_ring,multishot_recv"); /* one line: the receive's */
	hidden_falls_back("multishot_poll,ext_arg");   /* epoll: ext_arg is probed first */
}

/* A name the knob does not know fails weft_init, as a bad $WEFT_IO does:
 * a misspelt test configuration would otherwise test nothing. */
static void test_missing_bad_name_fails_init(void **state)
{
	(void)state;
	setenv("WEFT_IO_MISSING", "multishot", 1);
	assert_int_equal(weft_init(NULL), -EINVAL);
	setenv("WEFT_IO_MISSING", "coop_taskrun,", 1); /* a trailing comma is allowed */
	assert_int_equal(weft_init(NULL), 0);
	assert_int_equal(weft_shutdown(), 0);
	setenv("WEFT_IO_MISSING", "coop_taskrun,,ext_arg", 1);
	assert_int_equal(weft_init(NULL), -EINVAL);
	unsetenv("WEFT_IO_MISSING");
}

/* In make test's runs with $WEFT_IO_MISSING set: what it names is not
 * used, and said. */
static void test_missing_from_environment(void **state)
{
	(void)state;
	if (!env_missing[0]) {
		print_message(
			"WEFT_IO_MISSING is not set: test_missing_each_falls_back covers it\n");
		skip();
	}
	need_uring();
	hidden_falls_back(env_missing);
}

/* A failed test leaves nothing running for the next one. */
static int clean_up(void **state)
{
	(void)state;
	if (weft__running()) {
		weft_run();
		weft_shutdown();
	}
	unsetenv("WEFT_IO");
	unsetenv("WEFT_IO_MISSING");
	shim_io_uring_oneshot = shim_io_uring_no_accept = shim_io_uring_no_recv = 0;
	return 0;
}

#define URING_TEST(f) cmocka_unit_test_teardown(f, clean_up)
#else
#define URING_TEST(f)      \
	{                  \
		.name = #f \
	}
#endif

int main(void)
{
	const struct CMUnitTest tests[] = {
		URING_TEST(test_fallback_says_why_and_works),
		URING_TEST(test_bad_value_fails_init),
		URING_TEST(test_epoll_by_default),
		URING_TEST(test_uring_multishot),
		URING_TEST(test_uring_oneshot),
		URING_TEST(test_own_thread_not_interrupted),
		URING_TEST(test_own_thread_not_interrupted_oneshot),
		URING_TEST(test_accept_multishot_queues),
		URING_TEST(test_accept_close_while_armed),
		URING_TEST(test_recv_smaller_and_larger_reads),
		URING_TEST(test_recv_eof_after_data),
		URING_TEST(test_recv_peer_reset),
		URING_TEST(test_recv_close_while_armed),
		URING_TEST(test_recv_many_sockets_bounded),
		URING_TEST(test_features_fall_back_one_by_one),
		URING_TEST(test_missing_bad_name_fails_init),
		URING_TEST(test_missing_each_falls_back),
		URING_TEST(test_missing_from_environment),
	};
#if WT_LINUX
	/* Kept for test_missing_from_environment; the others run without it. */
	const char *m = getenv("WEFT_IO_MISSING");
	snprintf(env_missing, sizeof env_missing, "%s", m ? m : "");
	unsetenv("WEFT_IO_MISSING");
	return WT_MAIN("uring", tests, NULL, NULL);
#else
	return wt_skip_group("uring", tests, sizeof tests / sizeof tests[0],
			     "the Linux shim's backends: bare metal has one reactor");
#endif
}
