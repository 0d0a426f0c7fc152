/* SPDX-License-Identifier: MIT */
/* The "kernel" stack: the host kernel's sockets, non-blocking. Every call
 * tries the system call first and parks on the reactor (the fd is the I/O
 * source) only when it says -EAGAIN: a drained wait (weft__io_wait_drained),
 * which costs no system call of its own, the fd being registered with the
 * shim once, at its first wait, until it is closed. Closing wakes the calls
 * blocked on the socket and fails the ones about to block; the fd itself is
 * closed when the last of them has left. */
#include <stdlib.h>
#include <string.h>

#include "net.h"

struct ksock {
	struct weft_sock base;
	int fd;
	/* The last read was short: the receive queue was empty then. */
	_Atomic bool emptied;
};

static struct ksock *K(struct weft_sock *s) { return (struct ksock *)s; }

static struct shim_sockaddr to_shim(const weft_addr_t *a)
{
	struct shim_sockaddr s = {.ip = a->ip, .port = a->port};
	if (a->family == WEFT_AF_INET6) {
		s.ip = 0;
		s.v6 = 1;
		memcpy(s.ip6, a->ip6, 16);
		s.scope = a->scope;
	}
	return s;
}

static weft_addr_t from_shim(const struct shim_sockaddr *s)
{
	weft_addr_t a = {.ip = s->ip, .port = s->port};
	if (s->v6) {
		a.ip = 0;
		a.family = WEFT_AF_INET6;
		memcpy(a.ip6, s->ip6, 16);
		a.scope = s->scope;
	}
	return a;
}

/* The shim's socket type for an address of a's family. */
static int sock_type(int type, const weft_addr_t *a)
{
	return a->family == WEFT_AF_INET6 ? type | SHIM_SOCK_INET6 : type;
}

static int wrap(int fd, int kind, struct weft_sock **out)
{
	struct ksock *k = malloc(sizeof *k);
	if (!k) {
		/* connect registered fd with the reactor: a record kept for
		 * the number would stand for the next socket given it. */
		weft__io_forget(fd);
		shim_sock_close(fd);
		return -ENOMEM;
	}
	k->fd = fd;
	atomic_init(&k->emptied, false);
	weft__sock_init(&k->base, &weft__net_kernel, kind);
	*out = &k->base;
	return 0;
}

/* After -EAGAIN: park until fd may be ready for ev; -EBADF once the socket
 * is closed. */
static int wait_fd(struct weft_sock *s, unsigned ev, int64_t deadline)
{
	if (atomic_load(&s->closed))
		return -EBADF;
	int r = weft__io_wait_drained(K(s)->fd, ev, deadline);
	if (atomic_load(&s->closed))
		return -EBADF;
	return r < 0 ? r : 0;
}

static int k_init(const weft_net_config_t *cfg)
{
	(void)cfg;
	int fd = shim_sock_open(SHIM_SOCK_STREAM);
	if (fd < 0)
		return fd; /* -ENOSYS where there are no kernel sockets */
	shim_sock_close(fd);
	return 0;
}

static void k_fini(void) {}

static int bound(int type, const weft_addr_t *local, int *out)
{
	int fd = shim_sock_open(sock_type(type, local));
	if (fd < 0)
		return fd;
	struct shim_sockaddr a = to_shim(local);
	int err = shim_sock_bind(fd, &a);
	if (err) {
		shim_sock_close(fd);
		return err;
	}
	*out = fd;
	return 0;
}

static int k_listen(struct weft_sock **out, const weft_addr_t *local, int backlog)
{
	int fd, err = bound(SHIM_SOCK_STREAM, local, &fd);
	if (err)
		return err;
	if ((err = shim_sock_listen(fd, backlog))) {
		shim_sock_close(fd);
		return err;
	}
	return wrap(fd, NK_LISTEN, out);
}

static int k_accept(struct weft_sock *ls, struct weft_sock **out, weft_addr_t *peer,
		    int64_t deadline)
{
	for (;;) {
		/* The peer only when asked: with io_uring's multishot accept
		 * it costs a getpeername. */
		struct shim_sockaddr a;
		int fd = shim_sock_accept(K(ls)->fd, peer ? &a : NULL);
		if (fd >= 0) {
			if (peer)
				*peer = from_shim(&a);
			return wrap(fd, NK_CONN, out);
		}
		if (atomic_load(&ls->closed))
			return -EBADF;
		/* A connection reset before we took it is not our error. */
		if (fd == -ECONNABORTED || fd == -EPROTO)
			continue;
		if (fd != -EAGAIN)
			return fd;
		int r = wait_fd(ls, WEFT_IO_IN, deadline);
		if (r)
			return r;
	}
}

static int k_connect(struct weft_sock **out, const weft_addr_t *remote, int64_t deadline)
{
	int fd = shim_sock_open(sock_type(SHIM_SOCK_STREAM, remote));
	if (fd < 0)
		return fd;
	struct shim_sockaddr a = to_shim(remote);
	int err = shim_sock_connect(fd, &a);
	if (err == -EINPROGRESS) {
		/* Not yet writable: a drained wait. The registration stays
		 * for the connection's reads and writes. */
		err = weft__io_wait_drained(fd, WEFT_IO_OUT, deadline);
		err = err < 0 ? err : shim_sock_error(fd);
	}
	if (err) {
		weft__io_forget(fd);
		shim_sock_close(fd);
		return err;
	}
	return wrap(fd, NK_CONN, out);
}

/* A stream socket's read returns short of len only when it has emptied the
 * receive queue (shim.h), and whatever arrives afterwards is reported to
 * the reactor: so after a short read the next one waits first, as the
 * recv it would otherwise try would most likely say -EAGAIN (an echo
 * server's every other recv). What came meanwhile has been reported, or is
 * reported to the waiter; the stream's end, which the short read may have
 * taken with its last bytes, was reported and makes the wait return at
 * once (weft__io_wait_emptied). A read that must not wait (deadline 0)
 * tries. */
static ssize_t k_read(struct weft_sock *s, void *buf, size_t len, int64_t deadline)
{
	struct ksock *k = K(s);
	if (deadline != 0 && atomic_load_explicit(&k->emptied, memory_order_relaxed)) {
		atomic_store_explicit(&k->emptied, false, memory_order_relaxed);
		if (atomic_load(&s->closed))
			return -EBADF;
		int r = weft__io_wait_emptied(k->fd, deadline);
		if (atomic_load(&s->closed))
			return -EBADF;
		if (r < 0)
			return r;
	}
	for (;;) {
		long n = shim_sock_recv(k->fd, buf, len);
		if (atomic_load(&s->closed))
			return -EBADF;
		if (n != -EAGAIN) {
			if (n > 0 && (size_t)n < len)
				atomic_store_explicit(&k->emptied, true, memory_order_relaxed);
			return n;
		}
		int r = wait_fd(s, WEFT_IO_IN, deadline);
		if (r)
			return r;
	}
}

static ssize_t k_write(struct weft_sock *s, const void *buf, size_t len, int64_t deadline)
{
	size_t done = 0;
	while (done < len) {
		long n = shim_sock_send(K(s)->fd, (const char *)buf + done, len - done);
		if (n > 0) {
			done += (size_t)n;
			continue;
		}
		int r = n == -EAGAIN ? wait_fd(s, WEFT_IO_OUT, deadline) : (int)n;
		if (r == 0)
			continue;
		if (atomic_load(&s->closed))
			r = -EBADF;
		return done ? (ssize_t)done : r;
	}
	return (ssize_t)done;
}

static int k_shutdown(struct weft_sock *s, int how) { return shim_sock_shutdown(K(s)->fd, how); }

static int k_local(struct weft_sock *s, weft_addr_t *out)
{
	struct shim_sockaddr a;
	int err = shim_sock_name(K(s)->fd, &a);
	if (!err)
		*out = from_shim(&a);
	return err;
}

static int k_peer(struct weft_sock *s, weft_addr_t *out)
{
	struct shim_sockaddr a;
	int err = shim_sock_peer(K(s)->fd, &a);
	if (!err)
		*out = from_shim(&a);
	return err;
}

static int k_udp_bind(struct weft_sock **out, const weft_addr_t *local)
{
	int fd, err = bound(SHIM_SOCK_DGRAM, local, &fd);
	if (err)
		return err;
	return wrap(fd, NK_UDP, out);
}

static ssize_t k_sendto(struct weft_sock *s, const void *buf, size_t len, const weft_addr_t *to,
			int64_t deadline)
{
	struct shim_sockaddr a = to_shim(to);
	for (;;) {
		long n = shim_sock_sendto(K(s)->fd, buf, len, &a);
		if (n != -EAGAIN && n != -ENOBUFS)
			return n;
		int r = wait_fd(s, WEFT_IO_OUT, deadline);
		if (r)
			return r;
	}
}

static ssize_t k_recvfrom(struct weft_sock *s, void *buf, size_t len, weft_addr_t *from,
			  int64_t deadline)
{
	for (;;) {
		struct shim_sockaddr a;
		long n = shim_sock_recvfrom(K(s)->fd, buf, len, &a);
		if (n >= 0) {
			if (from)
				*from = from_shim(&a);
			return n;
		}
		if (n != -EAGAIN)
			return n;
		int r = wait_fd(s, WEFT_IO_IN, deadline);
		if (r)
			return r;
	}
}

static void k_abort(struct weft_sock *s)
{
	/* Wake whoever waits, and make a wait that is about to start fail:
	 * the fd stays open (and its number taken) until k_destroy. */
	weft__io_close(K(s)->fd);
}

static void k_destroy(struct weft_sock *s)
{
	weft__io_forget(K(s)->fd); /* the number can be reused once closed */
	shim_sock_close(K(s)->fd);
	free(s);
}

/* ---- weft_select: the reactor's slots for fd ---------------------------------- */

static weft__lock_t *k_wait_lock(struct weft_sock *s)
{
	(void)s;
	return weft__io_lock();
}

/* A select waiting to read takes the reports a read after a short one
 * would wait for (k_read): that read must try first. */
static int k_wait_poll(struct weft_sock *s, unsigned events)
{
	if (events & WEFT_IO_IN)
		atomic_store_explicit(&K(s)->emptied, false, memory_order_relaxed);
	return weft__io_ready_poll(K(s)->fd, events);
}

static void k_wait_arm(struct weft_sock *s, unsigned events, struct weft__waiter *w)
{
	weft__io_ready_arm(K(s)->fd, events, w);
}

static void k_wait_disarm(struct weft_sock *s, unsigned events, struct weft__waiter *w)
{
	(void)events;
	weft__io_ready_disarm(K(s)->fd, w);
}

const struct net_ops weft__net_kernel = {
	.name = "kernel",
	.init = k_init,
	.fini = k_fini,
	.listen = k_listen,
	.accept = k_accept,
	.connect = k_connect,
	.read = k_read,
	.write = k_write,
	.shutdown = k_shutdown,
	.local = k_local,
	.peer = k_peer,
	.udp_bind = k_udp_bind,
	.sendto = k_sendto,
	.recvfrom = k_recvfrom,
	.abort = k_abort,
	.destroy = k_destroy,
	.resolve = weft__kernel_resolve,
	.wait_lock = k_wait_lock,
	.wait_poll = k_wait_poll,
	.wait_arm = k_wait_arm,
	.wait_disarm = k_wait_disarm,
};
