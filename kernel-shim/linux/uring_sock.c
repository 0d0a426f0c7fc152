/* SPDX-License-Identifier: MIT */
/* Completion sockets on io_uring: a listener's accepts and a stream's
 * receives done by the kernel ahead of the caller, and what they bring kept
 * here until sock.c's shim_sock_accept or shim_sock_recv asks for it.
 *
 * A socket starts as every socket does: its first accept or recv is the
 * system call. When that says -EAGAIN (or a recv comes back short: the
 * socket's queue is empty), the socket becomes a completion socket and one
 * multishot request goes to the kernel: IORING_OP_ACCEPT with
 * IORING_ACCEPT_MULTISHOT (the accepted fds queued per listener), or
 * IORING_OP_RECV with IORING_RECV_MULTISHOT into the provided buffer ring
 * below (the filled buffers queued per socket, each given back to the ring
 * as soon as it is copied out). Each completion reports the socket IN to
 * the reactor. While the request is in the kernel, accept and recv answer
 * from the queue (-EAGAIN when it is empty) and make no system call; once
 * the kernel ends it (a completion without IORING_CQE_F_MORE: -ENOBUFS when
 * the ring ran dry, the CQ ring overflowed, the thread that submitted it
 * exited, or the bound below), the socket reports IN, the queue is drained,
 * the next call is the system call again, and its -EAGAIN arms a new one.
 * So the ring running dry costs speed, never data or progress.
 *
 * Bounds: the ring holds NBUF buffers of BUFSZ bytes (4 MiB): all the
 * received data held here, for every socket together. A socket whose queue
 * reaches SOCK_BUFS buffers (64 KiB) has its receive cancelled (its data
 * stays in the kernel's socket buffer, where TCP's window holds the peer)
 * until the reader drains it; a listener's queue pauses the same way at
 * ACCEPT_MAX fds (the kernel's backlog holds the rest).
 *
 * Closing a socket whose request is in the kernel submits its cancellation
 * (shim_uring_close), gives back its queued buffers and accepted fds, and
 * then sock.c closes the fd at once: the number may be reused while a
 * completion of the old request can still come. Every completion carries
 * the socket's generation, bumped at each arm and kept across the fd's
 * lives, so one for an older request (a closed socket's, or one re-armed)
 * gives back its buffer or closes its accepted fd and is otherwise dropped.
 * A cancellation that finds the request busy (-EALREADY) is submitted again
 * until it ends: a request left in the kernel would hold the closed file
 * open. Unread data makes the close a reset (SO_LINGER 0), as the kernel
 * does when data sits unread in a socket. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <unistd.h>

#include "linux/feature.h"
#include "linux/io.h"
#include "linux/thread.h"
#include "linux/uring.h"

#define NBUF SHIM_URING_BUFS /* a power of two */
#define BUFSZ 4096
#define BGID 0
#define SOCK_BUFS SHIM_URING_SOCK_BUFS
#define ACCEPT_MAX SHIM_URING_ACCEPT_MAX
_Static_assert((NBUF & (NBUF - 1)) == 0 && NBUF <= 32768, "a buffer ring's size");

int shim_io_uring_no_accept;
int shim_io_uring_no_recv;
_Atomic unsigned shim_uring_socks;

enum { M_NONE, M_PLAIN, M_ACCEPT, M_RECV };

struct csock {
	uint32_t gen; /* of the latest request; kept across the fd's lives */
	uint8_t mode;
	bool armed;      /* a request in the kernel: its last completion not seen */
	bool cancelling; /* its cancellation submitted */
	bool eof;        /* the stream ended after what is queued */
	int err;         /* an error, returned once after what is queued */
	int head, tail;  /* receive: queued buffers, linked through bnext */
	unsigned nbuf;
	uint32_t off; /* bytes of head already read */
	int *fds;     /* accept: queued fds */
	unsigned nfd, cap;
};
static struct csock *cs;
static size_t ncs;

static char *pool;              /* NBUF buffers, kept for the process's life */
static struct uring_buf *bring; /* the provided buffer ring, likewise */
static uint16_t btail;
static unsigned nheld; /* buffers queued for sockets, all together */
static int bnext[NBUF];
static uint32_t blen[NBUF];

static struct csock *get(int fd, bool create)
{
	if (fd < 0 || fd >= SRC_LIMIT)
		return NULL;
	if ((size_t)fd < ncs)
		return &cs[fd];
	if (!create)
		return NULL;
	size_t n = ncs ? ncs : 64;
	while (n <= (size_t)fd)
		n *= 2;
	struct csock *t = realloc(cs, n * sizeof *t);
	if (!t)
		return NULL;
	memset(t + ncs, 0, (n - ncs) * sizeof *t);
	cs = t;
	ncs = n;
	return &cs[fd];
}

/* Buffer bid back into the ring, for the kernel to fill again. */
static void give(unsigned bid)
{
	if (bid >= NBUF)
		return;
	struct uring_buf *b = &bring[btail & (NBUF - 1)];
	b->addr = (uint64_t)(uintptr_t)(pool + (size_t)bid * BUFSZ);
	b->len = BUFSZ;
	b->bid = (uint16_t)bid;
	btail++;
	atomic_store_explicit((_Atomic uint16_t *)&bring[0].resv, btail, memory_order_release);
}

/* What c holds goes: buffers back to the ring, accepted fds closed. */
static void drop_queue(struct csock *c)
{
	while (c->nbuf) {
		int b = c->head;
		c->head = bnext[b];
		c->nbuf--;
		nheld--;
		give((unsigned)b);
	}
	c->off = 0;
	for (unsigned i = 0; i < c->nfd; i++)
		close(c->fds[i]);
	c->nfd = 0;
}

/* The fd's number is free again: a new socket given it starts clean. */
static void reset(struct csock *c)
{
	drop_queue(c);
	c->mode = M_NONE;
	c->armed = c->cancelling = c->eof = false;
	c->err = 0;
}

static int arm(int fd, struct csock *c)
{
	struct uring_sqe *s = shim_uring_sqe_get();
	if (!s)
		return -EAGAIN;
	c->gen++;
	s->fd = fd;
	if (c->mode == M_ACCEPT) {
		s->opcode = OP_ACCEPT;
		s->ioprio = ACCEPT_MULTISHOT;
		s->op_flags = SOCK_NONBLOCK | SOCK_CLOEXEC;
		s->user_data = uring_ud(c->gen, K_ACCEPT, fd);
	} else {
		s->opcode = OP_RECV;
		s->ioprio = RECV_MULTISHOT;
		s->flags = SQE_BUFFER_SELECT;
		s->buf_index = BGID;
		s->user_data = uring_ud(c->gen, K_RECV, fd);
	}
	shim_uring_sqe_put();
	c->armed = true;
	c->cancelling = false;
	(void)shim_uring_submit(); /* what it refuses goes with the next submission */
	return 0;
}

/* A request that cannot be armed: the socket reports IN, the caller tries
 * the system call again, and its -EAGAIN arms again. On a thread that is
 * not the shim's the poller arms it (uring.c, "Threads that are not the
 * shim's"); until then the socket is read by plain system calls. */
static void arm_or_report(int fd, struct csock *c)
{
	if (!shim_thread_own && shim_uring_defer_sock(fd) == 0)
		return;
	if (arm(fd, c) < 0)
		shim_uring_report(fd);
}

void shim_uring_sock_arm_deferred(int fd)
{
	struct csock *c = get(fd, false);
	/* Armed here whatever the thread: the poller of a program that runs
	 * the runtime from its own loop (weft_poll) is one of its threads. */
	if (c && !c->armed && (c->mode == M_ACCEPT || (c->mode == M_RECV && !c->eof)) &&
	    arm(fd, c) < 0)
		shim_uring_report(fd);
}

static void cancel(int fd, struct csock *c)
{
	struct uring_sqe *s = shim_uring_sqe_get();
	if (!s)
		return; /* the ring is full: the close's or the bound's next turn */
	bool acc = c->mode == M_ACCEPT;
	s->opcode = OP_ASYNC_CANCEL;
	s->fd = -1;
	s->addr = uring_ud(c->gen, acc ? K_ACCEPT : K_RECV, fd);
	s->user_data = uring_ud(c->gen, acc ? K_CANCEL_ACCEPT : K_CANCEL_RECV, fd);
	shim_uring_sqe_put();
	c->cancelling = true;
}

/* ---- sock.c's calls --------------------------------------------------------- */

unsigned shim_io_uring_completions(void) { return atomic_load(&shim_uring_socks); }

int shim_uring_held(int fd)
{
	pthread_mutex_lock(&shim_uring_lock);
	struct csock *c = get(fd, false);
	int n = fd < 0                     ? (int)nheld
		: !c || c->mode < M_ACCEPT ? -1
		: c->mode == M_ACCEPT      ? (int)c->nfd
					   : (int)c->nbuf;
	shim_uring_unlock();
	return n;
}

static bool on(unsigned what)
{
	return atomic_load_explicit(&shim_uring_socks, memory_order_relaxed) & what;
}

bool shim_uring_accept(int fd, int *res)
{
	if (!on(SHIM_URING_ACCEPT))
		return false;
	pthread_mutex_lock(&shim_uring_lock);
	struct csock *c = get(fd, false);
	bool mine = c && c->mode == M_ACCEPT;
	if (mine) {
		if (c->nfd) {
			*res = c->fds[0];
			memmove(c->fds, c->fds + 1, --c->nfd * sizeof *c->fds);
			if (!c->nfd && !c->armed)
				arm_or_report(fd, c);
		} else if (c->err) {
			*res = c->err;
			c->err = 0;
		} else if (c->armed) {
			*res = -EAGAIN;
		} else {
			mine = false;
		}
	}
	shim_uring_unlock();
	return mine;
}

void shim_uring_accept_drained(int fd)
{
	if (!on(SHIM_URING_ACCEPT))
		return;
	pthread_mutex_lock(&shim_uring_lock);
	struct csock *c = get(fd, true);
	if (c && c->mode == M_NONE) {
		/* The accepted sockets inherit it: no setsockopt per accept. */
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		c->mode = M_ACCEPT;
		shim_uring_remask(fd);
	}
	if (c && c->mode == M_ACCEPT && !c->armed)
		arm_or_report(fd, c);
	shim_uring_unlock();
}

static size_t copy_out(struct csock *c, char *buf, size_t len)
{
	size_t done = 0;
	while (done < len && c->nbuf) {
		int b = c->head;
		size_t n = blen[b] - c->off;
		if (n > len - done)
			n = len - done;
		memcpy(buf + done, pool + (size_t)b * BUFSZ + c->off, n);
		done += n;
		c->off += (uint32_t)n;
		if (c->off == blen[b]) {
			c->head = bnext[b];
			c->nbuf--;
			nheld--;
			c->off = 0;
			give((unsigned)b);
		}
	}
	return done;
}

bool shim_uring_recv(int fd, void *buf, size_t len, long *res)
{
	if (!on(SHIM_URING_RECV))
		return false;
	pthread_mutex_lock(&shim_uring_lock);
	struct csock *c = get(fd, false);
	bool mine = c && c->mode == M_RECV;
	if (mine) {
		if (c->nbuf) {
			*res = (long)copy_out(c, buf, len);
			/* Emptied with no request in the kernel: one goes now, so
			 * that what comes next is reported. */
			if (!c->nbuf && !c->armed && !c->eof && !c->err)
				arm_or_report(fd, c);
		} else if (c->err) {
			*res = c->err;
			c->err = 0;
		} else if (c->eof) {
			*res = 0;
		} else if (c->armed) {
			*res = -EAGAIN;
		} else {
			mine = false;
		}
	}
	shim_uring_unlock();
	return mine;
}

void shim_uring_recv_drained(int fd)
{
	if (!on(SHIM_URING_RECV))
		return;
	pthread_mutex_lock(&shim_uring_lock);
	struct csock *c = get(fd, true);
	if (c && c->mode == M_NONE) {
		int type = 0;
		socklen_t l = sizeof type;
		bool stream =
			getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &l) == 0 && type == SOCK_STREAM;
		c->mode = stream ? M_RECV : M_PLAIN;
		if (stream)
			shim_uring_remask(fd);
	}
	if (c && c->mode == M_RECV && !c->armed && !c->eof)
		arm_or_report(fd, c);
	shim_uring_unlock();
}

void shim_uring_close(int fd)
{
	if (!on(SHIM_URING_ACCEPT | SHIM_URING_RECV))
		return;
	pthread_mutex_lock(&shim_uring_lock);
	struct csock *c = get(fd, false);
	if (c && c->mode >= M_ACCEPT) {
		if (c->nbuf) {
			struct linger l = {.l_onoff = 1, .l_linger = 0};
			setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
		}
		if (c->armed && !c->cancelling)
			cancel(fd, c);
		(void)shim_uring_submit();
	}
	if (c)
		reset(c);
	shim_uring_unlock();
}

/* ---- uring.c's calls --------------------------------------------------------- */

static void append(struct csock *c, unsigned bid, uint32_t len)
{
	blen[bid] = len;
	bnext[bid] = -1;
	if (c->nbuf)
		bnext[c->tail] = (int)bid;
	else
		c->head = (int)bid;
	c->tail = (int)bid;
	c->nbuf++;
	nheld++;
}

static void push_fd(struct csock *c, int nfd)
{
	if (c->nfd == c->cap) {
		unsigned cap = c->cap ? c->cap * 2 : 16;
		int *f = realloc(c->fds, cap * sizeof *f);
		if (!f) {
			/* The peer sees a reset; the listener goes on, and its
			 * accept says so once (-ENOMEM after the queued fds), as
			 * the epoll path's accept does when it has no memory for
			 * a connection: a connection is never dropped unsaid. */
			close(nfd);
			if (!c->err)
				c->err = -ENOMEM;
			return;
		}
		c->fds = f;
		c->cap = cap;
	}
	c->fds[c->nfd++] = nfd;
}

static bool transient(int res)
{
	return res == -ECANCELED || res == -ENOBUFS || res == -EAGAIN || res == -EINTR ||
	       res == -ECONNABORTED || res == -EPROTO;
}

unsigned shim_uring_sock_cqe(const struct uring_cqe *q)
{
	unsigned kind = (unsigned)(q->user_data >> 28) & 15;
	int fd = (int)(q->user_data & (SRC_LIMIT - 1));
	uint32_t gen = (uint32_t)(q->user_data >> 32);
	bool more = q->flags & CQE_F_MORE;
	bool buffer = q->flags & CQE_F_BUFFER;
	unsigned bid = q->flags >> CQE_BUFFER_SHIFT;
	if (kind == K_PROBE)
		return 0;
	bool acc = kind == K_ACCEPT || kind == K_CANCEL_ACCEPT;
	struct csock *c = get(fd, false);
	bool cur = c && c->armed && c->gen == gen && c->mode == (acc ? M_ACCEPT : M_RECV);
	if (kind == K_CANCEL_ACCEPT || kind == K_CANCEL_RECV) {
		/* One that found the request busy: again, whether or not its
		 * socket is still open (a request left in the kernel would hold
		 * a closed socket's file open: the peer would never see the
		 * end). Once it has ended, -ENOENT stops this. */
		struct uring_sqe *s = q->res == -EALREADY ? shim_uring_sqe_get() : NULL;
		if (s) {
			s->opcode = OP_ASYNC_CANCEL;
			s->fd = -1;
			s->addr = uring_ud(gen, acc ? K_ACCEPT : K_RECV, fd);
			s->user_data = q->user_data;
			shim_uring_sqe_put();
			(void)shim_uring_submit();
		}
		return 0;
	}
	if (!cur) {
		/* An older request's (its socket closed, or re-armed). */
		if (buffer)
			give(bid);
		if (acc && q->res >= 0)
			close(q->res);
		return 0;
	}
	if (!more)
		c->armed = c->cancelling = false;
	unsigned ev = more ? 0 : SHIM_IO_IN; /* ended: the caller tries */
	if (acc) {
		if (q->res >= 0) {
			push_fd(c, q->res);
			ev |= SHIM_IO_IN;
			if (c->nfd >= ACCEPT_MAX && more && !c->cancelling) {
				cancel(fd, c);
				(void)shim_uring_submit();
			}
		} else if (!transient(q->res)) {
			c->err = q->res;
		}
		return ev;
	}
	if (buffer) {
		if (q->res > 0 && bid < NBUF)
			append(c, bid, (uint32_t)q->res);
		else
			give(bid);
	}
	if (q->res > 0) {
		ev |= SHIM_IO_IN;
		if (c->nbuf >= SOCK_BUFS && more && !c->cancelling) {
			cancel(fd, c);
			(void)shim_uring_submit();
		}
	} else if (q->res == 0) {
		c->eof = true;
		ev |= SHIM_IO_IN | SHIM_IO_HUP;
	} else if (!transient(q->res)) {
		c->err = q->res;
		ev |= SHIM_IO_IN | SHIM_IO_OUT | SHIM_IO_ERR;
	}
	return ev;
}

unsigned shim_uring_sock_ready(int src)
{
	struct csock *c = get(src, false);
	if (!c || c->mode < M_ACCEPT)
		return 0;
	unsigned ev = 0;
	if (c->nbuf || c->nfd || !c->armed)
		ev |= SHIM_IO_IN;
	if (c->eof)
		ev |= SHIM_IO_IN | SHIM_IO_HUP;
	if (c->err)
		ev |= SHIM_IO_IN | SHIM_IO_OUT | SHIM_IO_ERR;
	return ev;
}

unsigned shim_uring_sock_dirs(int src)
{
	struct csock *c = get(src, false);
	if (!c)
		return 3;
	return c->mode == M_ACCEPT ? 0 : c->mode == M_RECV ? 2 : 3;
}

/* ---- setting up, probing, tearing down ----------------------------------------- */

static int reg_ring(int ringfd)
{
	if (!pool) {
		void *p = mmap(NULL, (size_t)NBUF * BUFSZ, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			return -errno;
		void *r = mmap(NULL, NBUF * sizeof(struct uring_buf), PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (r == MAP_FAILED) {
			int e = -errno;
			munmap(p, (size_t)NBUF * BUFSZ);
			return e;
		}
		pool = p;
		bring = r;
	}
	memset(bring, 0, NBUF * sizeof(struct uring_buf));
	struct uring_buf_reg reg = {
		.ring_addr = (uint64_t)(uintptr_t)bring, .ring_entries = NBUF, .bgid = BGID};
	if (syscall(SYS_io_uring_register, ringfd, REGISTER_PBUF_RING, &reg, 1) < 0)
		return -errno;
	btail = 0;
	for (unsigned i = 0; i < NBUF; i++)
		give(i);
	return 0;
}

/* Each multishot request on a socket with nothing to give, then its
 * cancellation: a kernel that has it answers -ECANCELED, one without
 * -EINVAL at once. *acc and *rcv get that answer (or -ETIME). */
static void probe(bool try_acc, bool try_rcv, int *acc, int *rcv)
{
	*acc = *rcv = -ETIME;
	int l = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int sp[2] = {-1, -1};
	sa_family_t af = AF_UNIX; /* bound to a name of the kernel's choosing */
	if (l < 0 || bind(l, (struct sockaddr *)&af, sizeof af) < 0 || listen(l, 1) < 0 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sp) < 0) {
		*acc = *rcv = -errno;
		goto out;
	}
	unsigned want = 0;
	for (unsigned k = 0; k < 2; k++) {
		if (!(k ? try_rcv : try_acc))
			continue;
		struct uring_sqe *s = shim_uring_sqe_get(), *x;
		if (!s)
			goto out;
		s->opcode = k ? OP_RECV : OP_ACCEPT;
		s->fd = k ? sp[0] : l;
		s->ioprio = k ? RECV_MULTISHOT : ACCEPT_MULTISHOT;
		s->flags = k ? SQE_BUFFER_SELECT : 0;
		s->buf_index = BGID;
		s->op_flags = k ? 0 : SOCK_NONBLOCK | SOCK_CLOEXEC;
		s->user_data = uring_ud(0, K_PROBE, (int)k);
		shim_uring_sqe_put();
		if (!(x = shim_uring_sqe_get()))
			goto out;
		x->opcode = OP_ASYNC_CANCEL;
		x->fd = -1;
		x->addr = uring_ud(0, K_PROBE, (int)k);
		x->user_data = uring_ud(1, K_PROBE, (int)k);
		shim_uring_sqe_put();
		want += 2;
	}
	if (shim_uring_submit() < 0)
		goto out;
	int64_t deadline = shim_now() + 2000000000;
	while (want) {
		struct uring_cqe q;
		if (shim_uring_take(&q, deadline) <= 0)
			break;
		unsigned kind = (unsigned)(q.user_data >> 28) & 15;
		if (kind != K_PROBE)
			continue;
		want--;
		if (q.flags & CQE_F_BUFFER)
			give(q.flags >> CQE_BUFFER_SHIFT);
		if (q.user_data >> 32)
			continue; /* the cancellation's own */
		if ((q.user_data & 1) == 0) {
			*acc = q.res;
			if (q.res >= 0)
				close(q.res);
		} else if (!(q.flags & CQE_F_MORE)) {
			*rcv = q.res;
		}
	}
out:
	if (l >= 0)
		close(l);
	if (sp[0] >= 0) {
		close(sp[0]);
		close(sp[1]);
	}
}

/* A probe's answer other than -ECANCELED, as the line's reason: -EINVAL is
 * a kernel that does not know the flag (NULL: the release that brought
 * it). */
static const char *reason(int res, char *buf, size_t cap)
{
	if (res == -EINVAL)
		return NULL;
	snprintf(buf, cap, "the probe said %s", strerror(-res));
	return buf;
}

void shim_uring_sock_init(int ringfd, bool multishot, bool op_accept, bool op_recv)
{
	atomic_store(&shim_uring_socks, 0);
	if (!multishot)
		return; /* said by uring.c, with the rest of what it costs */
	char b1[80], b2[80];
	/* Each, unless hidden or absent: the ring first (a receive probe needs
	 * it), then one trial of each multishot request. */
	bool try_acc =
		op_accept && !shim_io_uring_no_accept && !shim_feature_hidden(SF_MULTISHOT_ACCEPT);
	bool try_rcv = op_recv && !shim_io_uring_no_recv && !shim_feature_hidden(SF_MULTISHOT_RECV);
	int ring = -EINVAL;
	if (try_rcv && !shim_feature_hidden(SF_PBUF_RING))
		ring = reg_ring(ringfd);
	int acc = -ETIME, rcv = -ETIME;
	probe(try_acc, try_rcv && !ring, &acc, &rcv);

	if (!op_accept)
		shim_feature_fallback(SF_MULTISHOT_ACCEPT, "the kernel has no IORING_OP_ACCEPT");
	else if (shim_io_uring_no_accept)
		shim_feature_fallback(SF_MULTISHOT_ACCEPT, "the test hook");
	else if (try_acc && acc != -ECANCELED)
		shim_feature_fallback(SF_MULTISHOT_ACCEPT, reason(acc, b1, sizeof b1));
	else if (!try_acc)
		shim_feature_fallback(SF_MULTISHOT_ACCEPT, NULL); /* hidden: it says so */

	if (!op_recv)
		shim_feature_fallback(SF_MULTISHOT_RECV, "the kernel has no IORING_OP_RECV");
	else if (shim_io_uring_no_recv)
		shim_feature_fallback(SF_MULTISHOT_RECV, "the test hook");
	else if (!try_rcv)
		shim_feature_fallback(SF_MULTISHOT_RECV, NULL);
	else if (ring)
		shim_feature_fallback(SF_PBUF_RING, reason(ring, b2, sizeof b2));
	else if (rcv != -ECANCELED)
		shim_feature_fallback(SF_MULTISHOT_RECV, reason(rcv, b2, sizeof b2));

	unsigned got = (acc == -ECANCELED ? SHIM_URING_ACCEPT : 0) |
		       (rcv == -ECANCELED ? SHIM_URING_RECV : 0);
	atomic_store(&shim_uring_socks, got);
}

void shim_uring_sock_fini(int ringfd)
{
	(void)ringfd;
	atomic_store(&shim_uring_socks, 0);
	unsigned armed = 0;
	for (size_t fd = 0; fd < ncs; fd++) {
		struct csock *c = &cs[fd];
		drop_queue(c);
		if (c->armed) {
			armed++;
			if (!c->cancelling)
				cancel((int)fd, c);
		}
	}
	(void)shim_uring_submit();
	int64_t deadline = shim_now() + 1000000000;
	while (armed) {
		struct uring_cqe q;
		if (shim_uring_take(&q, deadline) <= 0)
			break;
		unsigned kind = (unsigned)(q.user_data >> 28) & 15;
		if (kind < K_SOCK)
			continue;
		int fd = (int)(q.user_data & (SRC_LIMIT - 1));
		bool was = (size_t)fd < ncs && cs[fd].armed;
		(void)shim_uring_sock_cqe(&q);
		if (was && !cs[fd].armed)
			armed--;
		if ((size_t)fd < ncs)
			drop_queue(&cs[fd]);
	}
	for (size_t fd = 0; fd < ncs; fd++) {
		drop_queue(&cs[fd]);
		free(cs[fd].fds);
	}
	free(cs);
	cs = NULL;
	ncs = 0;
	nheld = 0;
}
