/* SPDX-License-Identifier: MIT */
/* The host kernel's IPv4 and IPv6 sockets, non-blocking, for the "kernel" stack: thin
 * wrappers that convert addresses, retry EINTR, turn errno into a negative
 * result and leave the caller's errno as it was. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#include "linux/io.h"

static bool uring_recv_on(void)
{
	return atomic_load_explicit(&shim_uring_socks, memory_order_relaxed) & SHIM_URING_RECV;
}

/* ThreadSanitizer's build (gcc says so with __SANITIZE_THREAD__, clang
 * through __has_feature, as runtime/san.h asks). */
#if defined(__SANITIZE_THREAD__)
#define SOCK_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SOCK_TSAN 1
#endif
#endif

/* A stream's send and receive, the two system calls of every message:
 * through syscall(2), not libc's send and recv, which are cancellation
 * points and, in a process with more than one thread (a runtime's is),
 * turn asynchronous cancellation on and off around the call (about 60
 * instructions a message: docs/benchmarks.md). weft cancels no thread.
 * Under ThreadSanitizer libc's, whose interceptors are how it learns that
 * what a thread wrote before a send is seen by the thread that receives
 * it (it cannot see the kernel's ordering): without them it reports the
 * tests' own handovers through sockets as races. */
static ssize_t sys_send(int fd, const void *buf, size_t len)
{
#ifdef SOCK_TSAN
	return send(fd, buf, len, MSG_NOSIGNAL);
#else
	return syscall(SYS_sendto, fd, buf, len, MSG_NOSIGNAL, NULL, 0);
#endif
}

static ssize_t sys_recv(int fd, void *buf, size_t len)
{
#ifdef SOCK_TSAN
	return recv(fd, buf, len, 0);
#else
	return syscall(SYS_recvfrom, fd, buf, len, 0, NULL, NULL);
#endif
}

/* A socket address of either family, and its length. */
union sa {
	struct sockaddr sa;
	struct sockaddr_in in;
	struct sockaddr_in6 in6;
	struct sockaddr_storage ss;
};

static socklen_t to_sa(const struct shim_sockaddr *a, union sa *u)
{
	memset(u, 0, sizeof *u);
	if (a->v6) {
		u->in6.sin6_family = AF_INET6;
		memcpy(&u->in6.sin6_addr, a->ip6, 16);
		u->in6.sin6_port = htons(a->port);
		u->in6.sin6_scope_id = a->scope;
		return sizeof u->in6;
	}
	u->in.sin_family = AF_INET;
	u->in.sin_addr.s_addr = a->ip;
	u->in.sin_port = htons(a->port);
	return sizeof u->in;
}

static void from_sa(const union sa *u, socklen_t len, struct shim_sockaddr *a)
{
	memset(a, 0, sizeof *a);
	if (len >= sizeof u->in && u->sa.sa_family == AF_INET) {
		a->ip = u->in.sin_addr.s_addr;
		a->port = ntohs(u->in.sin_port);
	} else if (len >= sizeof u->in6 && u->sa.sa_family == AF_INET6) {
		a->v6 = 1;
		memcpy(a->ip6, &u->in6.sin6_addr, 16);
		a->port = ntohs(u->in6.sin6_port);
		a->scope = u->in6.sin6_scope_id;
	} /* else unnamed, or another family: all zero */
}

/* r is a system call's result: -1 means errno says why. Restores the
 * caller's errno either way. */
static long done(long r, int saved)
{
	if (r < 0)
		r = errno == EWOULDBLOCK ? -EAGAIN : -errno;
	errno = saved;
	return r;
}

static void nodelay(int fd)
{
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

int shim_sock_open(int type)
{
	int kind, fam = AF_INET;
	if (type & SHIM_SOCK_INET6) {
		fam = AF_INET6;
		type &= ~SHIM_SOCK_INET6;
	}
	switch (type) {
	case SHIM_SOCK_STREAM:
		kind = SOCK_STREAM;
		break;
	case SHIM_SOCK_DGRAM:
		kind = SOCK_DGRAM;
		break;
	default:
		return -EINVAL;
	}
	int saved = errno;
	int fd = socket(fam, kind | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return (int)done(-1, saved);
	/* A restarted server can listen again while its old connections sit
	 * in TIME_WAIT; an IPv6 socket takes IPv6 only, so an IPv4 one can
	 * have the same port (whatever net.ipv6.bindv6only says). */
	int one = 1;
	if ((kind == SOCK_STREAM &&
	     setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0) ||
	    (fam == AF_INET6 && setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one) != 0)) {
		long err = done(-1, saved);
		close(fd);
		errno = saved;
		return (int)err;
	}
	errno = saved;
	return fd;
}

int shim_sock_bind(int fd, const struct shim_sockaddr *a)
{
	if (!a)
		return -EINVAL;
	union sa u;
	socklen_t len = to_sa(a, &u);
	int saved = errno;
	return (int)done(bind(fd, &u.sa, len), saved);
}

int shim_sock_listen(int fd, int backlog)
{
	int saved = errno;
	return (int)done(listen(fd, backlog), saved);
}

/* A completion listener (linux/io.h) has its connections accepted ahead:
 * the address is asked for afterwards, and TCP_NODELAY came from the
 * listener. */
int shim_sock_accept(int fd, struct shim_sockaddr *peer)
{
	int saved = errno, ready;
	if (shim_uring_accept(fd, &ready)) {
		if (ready >= 0 && peer) {
			union sa u;
			socklen_t len = sizeof u;
			if (getpeername(ready, &u.sa, &len) != 0)
				len = 0; /* reset already: the reads will say so */
			from_sa(&u, len, peer);
		}
		errno = saved;
		return ready;
	}
	for (;;) {
		union sa u;
		socklen_t len = sizeof u;
		int c = accept4(fd, &u.sa, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (c < 0) {
			/* A connection reset before we took it: the listener is
			 * fine, the next one may be waiting (libuv does the same). */
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			int r = (int)done(-1, saved);
			if (r == -EAGAIN)
				shim_uring_accept_drained(fd);
			errno = saved;
			return r;
		}
		nodelay(c);
		if (peer)
			from_sa(&u, len, peer);
		errno = saved;
		return c;
	}
}

/* TCP_NODELAY goes on before connecting (the kernel keeps it, and a
 * datagram socket merely refuses it), so a connection never exists without
 * it. A non-blocking connect interrupted by a signal goes on in the
 * background, as one that said EINPROGRESS: calling connect again would
 * only say EALREADY. */
int shim_sock_connect(int fd, const struct shim_sockaddr *a)
{
	if (!a)
		return -EINVAL;
	union sa u;
	socklen_t len = to_sa(a, &u);
	int saved = errno;
	nodelay(fd);
	int r = connect(fd, &u.sa, len);
	if (r < 0 && errno == EINTR) {
		errno = saved;
		return -EINPROGRESS;
	}
	return (int)done(r, saved);
}

int shim_sock_error(int fd)
{
	int saved = errno, soerr = 0;
	socklen_t len = sizeof soerr;
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) != 0)
		return (int)done(-1, saved);
	errno = saved;
	return -soerr;
}

long shim_sock_send(int fd, const void *buf, size_t len)
{
	int saved = errno;
	ssize_t r;
	do
		r = sys_send(fd, buf, len); /* MSG_NOSIGNAL: EPIPE, not SIGPIPE */
	while (r < 0 && errno == EINTR);
	return done(r, saved);
}

/* A completion stream (linux/io.h) answers from what its multishot
 * receive queued, and one that has none in the kernel makes the system
 * call, whose emptying the socket arms one. */
long shim_sock_recv(int fd, void *buf, size_t len)
{
	long r;
	int saved = errno;
	if (!uring_recv_on() || !shim_uring_recv(fd, buf, len, &r)) {
		do
			r = sys_recv(fd, buf, len);
		while (r < 0 && errno == EINTR);
		r = done(r, saved);
		if (uring_recv_on() && (r == -EAGAIN || (r > 0 && (size_t)r < len)))
			shim_uring_recv_drained(fd);
	}
	errno = saved;
	return r;
}

/* to NULL: the address the socket is connected to. */
long shim_sock_sendto(int fd, const void *buf, size_t len, const struct shim_sockaddr *to)
{
	union sa u;
	socklen_t sl = to ? to_sa(to, &u) : 0;
	int saved = errno;
	ssize_t r;
	do
		r = sendto(fd, buf, len, MSG_NOSIGNAL, to ? &u.sa : NULL, sl);
	while (r < 0 && errno == EINTR);
	return done(r, saved);
}

/* A datagram longer than len is cut to len, the rest lost; the count is what
 * was copied. */
long shim_sock_recvfrom(int fd, void *buf, size_t len, struct shim_sockaddr *from)
{
	int saved = errno;
	union sa u;
	socklen_t sl;
	ssize_t r;
	do {
		sl = sizeof u;
		r = recvfrom(fd, buf, len, 0, &u.sa, &sl);
	} while (r < 0 && errno == EINTR);
	if (r >= 0 && from)
		from_sa(&u, sl, from);
	return done(r, saved);
}

int shim_sock_shutdown(int fd, int how)
{
	int h;
	switch (how) {
	case 1:
		h = SHUT_RD;
		break;
	case 2:
		h = SHUT_WR;
		break;
	case 3:
		h = SHUT_RDWR;
		break;
	default:
		return -EINVAL;
	}
	int saved = errno;
	return (int)done(shutdown(fd, h), saved);
}

int shim_sock_name(int fd, struct shim_sockaddr *local)
{
	if (!local)
		return -EINVAL;
	int saved = errno;
	union sa u;
	socklen_t len = sizeof u;
	int r = getsockname(fd, &u.sa, &len);
	if (r == 0)
		from_sa(&u, len, local);
	return (int)done(r, saved);
}

int shim_sock_peer(int fd, struct shim_sockaddr *peer)
{
	if (!peer)
		return -EINVAL;
	int saved = errno;
	union sa u;
	socklen_t len = sizeof u;
	int r = getpeername(fd, &u.sa, &len);
	if (r == 0)
		from_sa(&u, len, peer);
	return (int)done(r, saved);
}

/* Linux releases the fd even when close says EINTR; closing it again could
 * close someone else's new fd, so EINTR counts as closed. A completion
 * socket's request in the kernel is cancelled first (linux/io.h). */
int shim_sock_close(int fd)
{
	int saved = errno;
	shim_uring_close(fd);
	int r = close(fd);
	if (r < 0 && errno == EINTR)
		r = 0;
	return (int)done(r, saved);
}
