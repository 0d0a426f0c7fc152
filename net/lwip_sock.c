/* SPDX-License-Identifier: MIT */
/* The "lwip" stack: weft's sockets over lwIP's raw API (TCP in lwip_tcp.c,
 * UDP in lwip_udp.c); here what they share: lwIP's errors, the one waiter
 * per direction, addresses, closing, and the table of operations. Every call
 * holds the lwIP lock while it talks to lwIP; lwIP's callbacks (run inside
 * those calls or inside the receive and timer fibers) queue what arrived
 * and complete the one reader or writer waiting. */
#include <stdlib.h>
#include <string.h>

#include "lwip_sock.h"

#include "lwip/tcp.h"
#include "lwip/udp.h"

int weft__lsock_err(err_t e)
{
	switch (e) {
	case ERR_OK:
		return 0;
	case ERR_MEM:
	case ERR_BUF:
		return -ENOMEM;
	case ERR_RTE:
		return -ENETUNREACH;
	case ERR_USE:
		return -EADDRINUSE;
	case ERR_ISCONN:
		return -EISCONN;
	case ERR_CONN:
		return -ENOTCONN;
	case ERR_RST:
		return -ECONNRESET;
	case ERR_ABRT:
		return -ECONNABORTED;
	case ERR_CLSD:
		return -EPIPE;
	case ERR_TIMEOUT:
		return -ETIMEDOUT;
	case ERR_VAL:
	case ERR_ARG:
		return -EINVAL;
	default:
		return -EIO;
	}
}

void weft__lsock_wake(struct weft__waiter **q, int res)
{
	/* Every waiter: the one reader or writer (sock.c allows one of each),
	 * which looks again at what it waits for, and the selects waiting on
	 * the socket, each of which must win its claim and is told the events
	 * it waited for (w->data) or res's error. */
	struct weft__waiter *w;
	while ((w = weft__waitq_pop(q))) {
		if (!w->claim)
			weft__waiter_complete(w, res);
		else if (weft__waiter_claim(w))
			weft__waiter_complete(w, res < 0 ? res : (int)(uintptr_t)w->data);
	}
}

void weft__lsock_ready(struct lsock *s)
{
	if (s->watch && weft__step_post_pid(s->watch, WEFT_STEP_EV_SOCK) != 0)
		s->watch = 0;
}

int weft__lsock_wait(struct weft__waiter **q, int64_t deadline)
{
	struct weft__waiter w;
	if (weft__lwip_flush())
		return 0;
	return weft__waiter_wait(&weft__lwip_lock, q, &w, deadline);
}

int weft__lsock_ip(const weft_addr_t *a, ip_addr_t *out)
{
	if (a->family != WEFT_AF_INET6) {
		ip_addr_set_ip4_u32_val(*out, a->ip);
		return 0;
	}
	if (a->scope > 255)
		return -EINVAL; /* lwIP's zones are u8_t: no such interface */
	ip_addr_set_zero_ip6(out);
	memcpy(ip_2_ip6(out)->addr, a->ip6, 16);
	ip6_addr_set_zone(ip_2_ip6(out), (u8_t)a->scope);
	return 0;
}

weft_addr_t weft__lsock_addr(const ip_addr_t *ip, u16_t port)
{
	weft_addr_t a = {.port = port};
	if (IP_IS_V6(ip)) {
		a.family = WEFT_AF_INET6;
		memcpy(a.ip6, ip_2_ip6(ip)->addr, 16);
		a.scope = ip6_addr_zone(ip_2_ip6(ip));
	} else {
		a.ip = ip4_addr_get_u32(ip_2_ip4(ip));
	}
	return a;
}

struct lsock *weft__lsock_new(bool udp)
{
	return calloc(1, sizeof(struct lsock) + (udp ? UDP_QUEUE * sizeof(struct dgram) : 0));
}

/* ---- Calls ------------------------------------------------------------------------ */

static int l_init(const weft_net_config_t *cfg) { return weft__lwip_up(cfg); }
static void l_fini(void) { weft__lwip_down(); }

static int addr_of(struct lsock *s, bool local, weft_addr_t *out)
{
	int err = 0;
	weft__lwip_lock_take();
	if (s->pcb) {
		const ip_addr_t *ip = local ? &s->pcb->local_ip : &s->pcb->remote_ip;
		*out = weft__lsock_addr(ip, local ? s->pcb->local_port : s->pcb->remote_port);
	} else if (s->upcb && local) {
		*out = weft__lsock_addr(&s->upcb->local_ip, s->upcb->local_port);
	} else {
		err = -ENOTCONN;
	}
	weft__lwip_unlock();
	return err;
}

static int l_local(struct weft_sock *s, weft_addr_t *out) { return addr_of(L(s), true, out); }
static int l_peer(struct weft_sock *s, weft_addr_t *out) { return addr_of(L(s), false, out); }

static void l_abort(struct weft_sock *sk)
{
	struct lsock *s = L(sk);
	weft__lwip_lock_take();
	weft__lsock_wake(&s->rdq, -EBADF);
	weft__lsock_wake(&s->wrq, -EBADF);
	s->watch = 0;
	if (sk->kind == NK_UDP)
		weft__ludp_abort(s);
	else
		weft__ltcp_abort(s, sk->kind);
	weft__lwip_unlock();
}

/* Watching: the watcher is woken once now, so that it looks at what was
 * there before it watched; -ESRCH if it is not a live step-process. */
static int l_watch(struct weft_sock *sk, weft_pid_t pid)
{
	struct lsock *s = L(sk);
	weft__lwip_lock_take();
	s->watch = pid;
	int err = pid ? weft__step_post_pid(pid, WEFT_STEP_EV_SOCK) : 0;
	if (err)
		s->watch = 0;
	weft__lwip_unlock();
	return err;
}

static void l_destroy(struct weft_sock *sk) { free(sk); }

/* ---- weft_select: the socket's waiter lists, under the lwIP lock ------------------- */

static weft__lock_t *l_wait_lock(struct weft_sock *s)
{
	(void)s;
	return &weft__lwip_lock;
}

/* What a read (accept, recvfrom) or a write would find without waiting. */
static int l_wait_poll(struct weft_sock *sk, unsigned events)
{
	struct lsock *s = L(sk);
	weft__lwip_flush(); /* loopback traffic still queued counts */
	unsigned err = s->err ? WEFT_IO_ERR : 0;
	if (events == WEFT_IO_IN) {
		switch (sk->kind) {
		case NK_LISTEN:
			return s->acc_head || !s->pcb ? WEFT_IO_IN : 0;
		case NK_UDP:
			return s->qlen ? WEFT_IO_IN : 0;
		default:
			if (s->rx_eof || s->err || !s->pcb)
				return (int)(WEFT_IO_IN | WEFT_IO_ERR);
			return s->rx || s->shut_rd ? WEFT_IO_IN : 0;
		}
	}
	switch (sk->kind) {
	case NK_LISTEN:
		return 0; /* nothing to write, ever */
	case NK_UDP:
		return WEFT_IO_OUT; /* lwIP's sendto never waits */
	default:
		if (s->err || s->shut_wr || !s->pcb)
			return (int)(WEFT_IO_OUT | err);
		if (!s->connected)
			return 0;
		return tcp_sndbuf(s->pcb) > 0 && tcp_sndqueuelen(s->pcb) < TCP_SND_QUEUELEN - 4
			       ? WEFT_IO_OUT
			       : 0;
	}
}

static void l_wait_arm(struct weft_sock *sk, unsigned events, struct weft__waiter *w)
{
	struct lsock *s = L(sk);
	w->data = (void *)(uintptr_t)events;
	weft__waitq_push(events == WEFT_IO_IN ? &s->rdq : &s->wrq, w);
}

static void l_wait_disarm(struct weft_sock *sk, unsigned events, struct weft__waiter *w)
{
	struct lsock *s = L(sk);
	if (w->next) /* a waker that lost the claim has taken it off */
		weft__waitq_remove(events == WEFT_IO_IN ? &s->rdq : &s->wrq, w);
}

const struct net_ops weft__net_lwip = {
	.name = "lwip",
	.init = l_init,
	.fini = l_fini,
	.listen = weft__ltcp_listen,
	.accept = weft__ltcp_accept,
	.connect = weft__ltcp_connect,
	.read = weft__ltcp_read,
	.write = weft__ltcp_write,
	.shutdown = weft__ltcp_shutdown,
	.local = l_local,
	.peer = l_peer,
	.udp_bind = weft__ludp_bind,
	.sendto = weft__ludp_sendto,
	.recvfrom = weft__ludp_recvfrom,
	.watch = l_watch,
	.abort = l_abort,
	.destroy = l_destroy,
	.stats = weft__lwip_stats,
	.resolve = weft__lwip_resolve,
	.wait_lock = l_wait_lock,
	.wait_poll = l_wait_poll,
	.wait_arm = l_wait_arm,
	.wait_disarm = l_wait_disarm,
};
