/* SPDX-License-Identifier: MIT */
/* The "lwip" stack: weft's sockets over lwIP's raw API. Every call holds the
 * lwIP lock while it talks to lwIP; lwIP's callbacks (run inside those calls
 * or inside the receive and timer fibers) queue what arrived and complete
 * the one reader or writer waiting. Flow control is lwIP's own: received
 * data is acknowledged to the window (tcp_recved) only as the reader takes
 * it, and a writer waits for tcp_sent to free send buffer. A listener's
 * accepted-but-not-taken connections count against its backlog
 * (tcp_backlog_delayed), so beyond it new SYNs are dropped, not queued. */
#include <stdlib.h>
#include <string.h>

#include "lwip.h"

#include "lwip/ip_addr.h"
#include "lwip/pbuf.h"
#include "lwip/tcp.h"
#include "lwip/udp.h"
#include "lwip/priv/tcp_priv.h"

#define UDP_QUEUE 64

struct dgram {
	struct pbuf *p;
	ip_addr_t addr;
	u16_t port;
};

struct lsock {
	struct weft_sock base;
	struct tcp_pcb *pcb;   /* NULL once lwIP freed it (on_err) or we let it go */
	struct udp_pcb *upcb;
	struct pbuf *rx;       /* received and not read: one chain */
	bool rx_eof, shut_rd, shut_wr, connected;
	int err;               /* sticky: what the connection died of */
	struct weft__waiter *rdq, *wrq; /* sock.c allows one of each */
	/* a listener's connections not yet accepted, linked by acc_next */
	struct lsock *acc_head, *acc_tail, *acc_next;
	/* a UDP socket's datagrams */
	struct dgram q[UDP_QUEUE];
	int qhead, qlen;
};

static struct lsock *L(struct weft_sock *s) { return (struct lsock *)s; }

static int map_err(err_t e)
{
	switch (e) {
	case ERR_OK: return 0;
	case ERR_MEM: case ERR_BUF: return -ENOMEM;
	case ERR_RTE: return -ENETUNREACH;
	case ERR_USE: return -EADDRINUSE;
	case ERR_ISCONN: return -EISCONN;
	case ERR_CONN: return -ENOTCONN;
	case ERR_RST: return -ECONNRESET;
	case ERR_ABRT: return -ECONNABORTED;
	case ERR_CLSD: return -EPIPE;
	case ERR_TIMEOUT: return -ETIMEDOUT;
	case ERR_VAL: case ERR_ARG: return -EINVAL;
	default: return -EIO;
	}
}

static void wake(struct weft__waiter **q, int res)
{
	struct weft__waiter *w = weft__waitq_pop(q);
	if (w)
		weft__waiter_complete(w, res);
}

/* Park on q; the lock is held on entry and on return. Loopback traffic
 * still queued is delivered first, and if it did anything this returns 0
 * without parking: the caller looks at its condition again. */
static int wait_on(struct weft__waiter **q, int64_t deadline)
{
	struct weft__waiter w;
	if (weft__lwip_flush())
		return 0;
	return weft__waiter_wait(&weft__lwip_lock, q, &w, deadline);
}

static ip_addr_t to_ip(uint32_t ip)
{
	ip_addr_t a;
	ip_addr_set_ip4_u32_val(a, ip);
	return a;
}

static struct lsock *new_sock(void)
{
	return calloc(1, sizeof(struct lsock));
}

/* ---- Callbacks (lock held) ------------------------------------------------------ */

static err_t on_recv(void *arg, struct tcp_pcb *pcb, struct pbuf *p, err_t err)
{
	struct lsock *s = arg;
	(void)err;
	if (!s) { /* closed by us: nobody reads */
		if (p) {
			tcp_recved(pcb, p->tot_len);
			pbuf_free(p);
		}
		return ERR_OK;
	}
	if (!p) {
		s->rx_eof = true;
	} else if (s->shut_rd) {
		tcp_recved(pcb, p->tot_len);
		pbuf_free(p);
		return ERR_OK;
	} else if (s->rx) {
		pbuf_cat(s->rx, p);
	} else {
		s->rx = p;
	}
	wake(&s->rdq, 0);
	return ERR_OK;
}

static err_t on_sent(void *arg, struct tcp_pcb *pcb, u16_t len)
{
	(void)pcb;
	(void)len;
	struct lsock *s = arg;
	if (s)
		wake(&s->wrq, 0);
	return ERR_OK;
}

/* The pcb is already freed when this runs. */
static void on_err(void *arg, err_t err)
{
	struct lsock *s = arg;
	if (!s)
		return;
	s->pcb = NULL;
	if (err == ERR_RST)
		s->err = s->connected ? -ECONNRESET : -ECONNREFUSED;
	else
		s->err = err == ERR_ABRT ? -ECONNABORTED : map_err(err);
	if (!s->err)
		s->err = -ECONNRESET;
	wake(&s->rdq, 0);
	wake(&s->wrq, 0);
}

static err_t on_connected(void *arg, struct tcp_pcb *pcb, err_t err)
{
	(void)pcb;
	struct lsock *s = arg;
	if (s && err == ERR_OK) {
		s->connected = true;
		wake(&s->wrq, 0);
	}
	return ERR_OK;
}

static void hook(struct lsock *s, struct tcp_pcb *pcb)
{
	s->pcb = pcb;
	tcp_nagle_disable(pcb); /* as the kernel stack's TCP_NODELAY */
	tcp_arg(pcb, s);
	tcp_recv(pcb, on_recv);
	tcp_sent(pcb, on_sent);
	tcp_err(pcb, on_err);
}

static err_t on_accept(void *arg, struct tcp_pcb *newpcb, err_t err)
{
	struct lsock *ls = arg;
	if (err != ERR_OK || !newpcb)
		return ERR_VAL;
	if (!ls)
		return ERR_MEM; /* lwIP aborts it */
	struct lsock *c = new_sock();
	if (!c)
		return ERR_MEM;
	hook(c, newpcb);
	c->connected = true;
	/* Until taken, it counts against the listener's backlog. */
	tcp_backlog_delayed(newpcb);
	if (ls->acc_tail)
		ls->acc_tail->acc_next = c;
	else
		ls->acc_head = c;
	ls->acc_tail = c;
	wake(&ls->rdq, 0);
	return ERR_OK;
}

static void on_udp(void *arg, struct udp_pcb *pcb, struct pbuf *p, const ip_addr_t *addr,
		   u16_t port)
{
	(void)pcb;
	struct lsock *s = arg;
	if (!s || s->qlen == UDP_QUEUE) {
		/* A full socket drops, as a kernel's full buffer does. */
		pbuf_free(p);
		weft__lwip_count_drop();
		return;
	}
	struct dgram *d = &s->q[(s->qhead + s->qlen++) % UDP_QUEUE];
	d->p = p;
	ip_addr_copy(d->addr, *addr);
	d->port = port;
	wake(&s->rdq, 0);
}

/* ---- Calls ------------------------------------------------------------------------ */

static int l_init(const weft_net_config_t *cfg) { return weft__lwip_up(cfg); }
static void l_fini(void) { weft__lwip_down(); }

static int l_listen(struct weft_sock **out, const weft_addr_t *local, int backlog)
{
	struct lsock *s = new_sock();
	if (!s)
		return -ENOMEM;
	ip_addr_t ip = to_ip(local->ip);
	weft__lwip_lock_take();
	int err = -ENOMEM;
	/* Address reuse (below) is for the TIME_WAIT of past connections;
	 * two listeners on one port, one of them on any address, conflict
	 * as on a kernel. */
	for (struct tcp_pcb_listen *l = tcp_listen_pcbs.listen_pcbs; l; l = l->next)
		if (l->local_port == local->port && local->port &&
		    (ip_addr_isany(&l->local_ip) || local->ip == 0 ||
		     ip_addr_cmp(&l->local_ip, &ip))) {
			weft__lwip_unlock();
			free(s);
			return -EADDRINUSE;
		}
	struct tcp_pcb *pcb = tcp_new();
	if (pcb) {
		ip_set_option(pcb, SOF_REUSEADDR);
		err = map_err(tcp_bind(pcb, &ip, local->port));
		err_t e = ERR_OK;
		struct tcp_pcb *lp = err ? NULL
					 : tcp_listen_with_backlog_and_err(
						   pcb, (u8_t)(backlog > 255 ? 255 : backlog), &e);
		if (lp) {
			s->pcb = lp;
			tcp_arg(lp, s);
			tcp_accept(lp, on_accept);
		} else {
			if (!err)
				err = map_err(e);
			tcp_close(pcb);
		}
	}
	weft__lwip_unlock();
	if (err) {
		free(s);
		return err;
	}
	weft__sock_init(&s->base, &weft__net_lwip, NK_LISTEN);
	*out = &s->base;
	return 0;
}

static int l_accept(struct weft_sock *lsk, struct weft_sock **out, weft_addr_t *peer,
		    int64_t deadline)
{
	struct lsock *ls = L(lsk);
	weft__lwip_lock_take();
	int err = 0;
	while (!ls->acc_head) {
		if (atomic_load(&lsk->closed) || !ls->pcb) {
			err = -EBADF;
			break;
		}
		if ((err = wait_on(&ls->rdq, deadline)))
			break;
	}
	struct lsock *c = err ? NULL : ls->acc_head;
	if (c) {
		ls->acc_head = c->acc_next;
		if (!ls->acc_head)
			ls->acc_tail = NULL;
		c->acc_next = NULL;
		if (c->pcb) {
			tcp_backlog_accepted(c->pcb);
			if (peer)
				*peer = (weft_addr_t){.ip = ip4_addr_get_u32(ip_2_ip4(&c->pcb->remote_ip)),
						      .port = c->pcb->remote_port};
		} else if (peer) {
			*peer = (weft_addr_t){0};
		}
	}
	weft__lwip_unlock();
	if (c) {
		weft__sock_init(&c->base, &weft__net_lwip, NK_CONN);
		*out = &c->base;
	}
	return err;
}

static int l_connect(struct weft_sock **out, const weft_addr_t *remote, int64_t deadline)
{
	struct lsock *s = new_sock();
	if (!s)
		return -ENOMEM;
	ip_addr_t ip = to_ip(remote->ip);
	weft__lwip_lock_take();
	int err = -ENOMEM;
	struct tcp_pcb *pcb = tcp_new();
	if (pcb) {
		hook(s, pcb);
		err = map_err(tcp_connect(pcb, &ip, remote->port, on_connected));
		if (err) {
			tcp_arg(pcb, NULL);
			tcp_abort(pcb);
			s->pcb = NULL;
		}
	}
	while (!err && !s->connected) {
		if (s->err) {
			err = s->err;
			break;
		}
		if ((err = wait_on(&s->wrq, deadline)))
			break;
	}
	if (err && s->pcb) {
		/* Timed out or cancelled: abort the attempt (no callback). */
		tcp_arg(s->pcb, NULL);
		tcp_abort(s->pcb);
		s->pcb = NULL;
	}
	weft__lwip_unlock();
	if (err) {
		if (s->rx)
			pbuf_free(s->rx); /* cannot hold data, but be exact */
		free(s);
		return err;
	}
	weft__sock_init(&s->base, &weft__net_lwip, NK_CONN);
	*out = &s->base;
	return 0;
}

static ssize_t l_read(struct weft_sock *sk, void *buf, size_t len, int64_t deadline)
{
	struct lsock *s = L(sk);
	weft__lwip_lock_take();
	ssize_t n;
	for (;;) {
		if (atomic_load(&sk->closed)) {
			n = -EBADF;
			break;
		}
		if (s->rx) {
			size_t take = len < s->rx->tot_len ? len : s->rx->tot_len;
			pbuf_copy_partial(s->rx, buf, (u16_t)take, 0);
			s->rx = pbuf_free_header(s->rx, (u16_t)take);
			if (s->pcb)
				tcp_recved(s->pcb, (u16_t)take); /* reopen the window */
			n = (ssize_t)take;
			break;
		}
		if (s->rx_eof || s->shut_rd) {
			n = 0;
			break;
		}
		if (s->err || !s->pcb) {
			n = s->err ? s->err : -EBADF;
			break;
		}
		int r = wait_on(&s->rdq, deadline);
		if (r) {
			n = r;
			break;
		}
	}
	weft__lwip_unlock();
	return n;
}

static ssize_t l_write(struct weft_sock *sk, const void *buf, size_t len, int64_t deadline)
{
	struct lsock *s = L(sk);
	const char *p = buf;
	size_t done = 0;
	int err = 0;
	weft__lwip_lock_take();
	while (done < len) {
		if (atomic_load(&sk->closed)) {
			err = -EBADF;
			break;
		}
		if (s->err) {
			err = s->err == -ECONNREFUSED ? -ECONNRESET : s->err;
			break;
		}
		if (s->shut_wr || !s->pcb) {
			err = -EPIPE;
			break;
		}
		size_t room = tcp_sndbuf(s->pcb);
		if (tcp_sndqueuelen(s->pcb) >= TCP_SND_QUEUELEN - 4)
			room = 0;
		if (room) {
			size_t n = len - done < room ? len - done : room;
			u8_t flags = TCP_WRITE_FLAG_COPY | (done + n < len ? TCP_WRITE_FLAG_MORE : 0);
			err_t e = tcp_write(s->pcb, p + done, (u16_t)n, flags);
			if (e == ERR_OK) {
				done += n;
				continue;
			}
			if (e != ERR_MEM) {
				err = map_err(e);
				break;
			}
		}
		tcp_output(s->pcb);
		if ((err = wait_on(&s->wrq, deadline)))
			break;
	}
	if (s->pcb)
		tcp_output(s->pcb);
	weft__lwip_unlock();
	return done ? (ssize_t)done : err;
}

static int l_shutdown(struct weft_sock *sk, int how)
{
	struct lsock *s = L(sk);
	int err = 0;
	weft__lwip_lock_take();
	if (!s->pcb) {
		err = s->err ? s->err : -ENOTCONN;
	} else {
		if (how & WEFT_SHUT_RD) {
			s->shut_rd = true;
			if (s->rx) {
				tcp_recved(s->pcb, s->rx->tot_len);
				pbuf_free(s->rx);
				s->rx = NULL;
			}
			wake(&s->rdq, 0);
		}
		if ((how & WEFT_SHUT_WR) && !s->shut_wr) {
			s->shut_wr = true;
			err = map_err(tcp_shutdown(s->pcb, 0, 1));
			wake(&s->wrq, 0);
		}
	}
	weft__lwip_unlock();
	return err;
}

static int addr_of(struct lsock *s, bool local, weft_addr_t *out)
{
	int err = 0;
	weft__lwip_lock_take();
	if (s->pcb) {
		const ip_addr_t *ip = local ? &s->pcb->local_ip : &s->pcb->remote_ip;
		*out = (weft_addr_t){.ip = ip4_addr_get_u32(ip_2_ip4(ip)),
				     .port = local ? s->pcb->local_port : s->pcb->remote_port};
	} else if (s->upcb && local) {
		*out = (weft_addr_t){.ip = ip4_addr_get_u32(ip_2_ip4(&s->upcb->local_ip)),
				     .port = s->upcb->local_port};
	} else {
		err = -ENOTCONN;
	}
	weft__lwip_unlock();
	return err;
}

static int l_local(struct weft_sock *s, weft_addr_t *out) { return addr_of(L(s), true, out); }
static int l_peer(struct weft_sock *s, weft_addr_t *out) { return addr_of(L(s), false, out); }

static int l_udp_bind(struct weft_sock **out, const weft_addr_t *local)
{
	struct lsock *s = new_sock();
	if (!s)
		return -ENOMEM;
	ip_addr_t ip = to_ip(local->ip);
	weft__lwip_lock_take();
	int err = -ENOMEM;
	struct udp_pcb *pcb = udp_new();
	if (pcb) {
		err = map_err(udp_bind(pcb, &ip, local->port));
		if (err) {
			udp_remove(pcb);
		} else {
			s->upcb = pcb;
			udp_recv(pcb, on_udp, s);
		}
	}
	weft__lwip_unlock();
	if (err) {
		free(s);
		return err;
	}
	weft__sock_init(&s->base, &weft__net_lwip, NK_UDP);
	*out = &s->base;
	return 0;
}

static ssize_t l_sendto(struct weft_sock *sk, const void *buf, size_t len, const weft_addr_t *to,
			int64_t deadline)
{
	(void)deadline; /* lwIP's UDP never blocks: a full device drops */
	struct lsock *s = L(sk);
	ip_addr_t ip = to_ip(to->ip);
	weft__lwip_lock_take();
	int err = -ENOMEM;
	struct pbuf *p = pbuf_alloc(PBUF_TRANSPORT, (u16_t)len, PBUF_RAM);
	if (p) {
		pbuf_take(p, buf, (u16_t)len);
		err = atomic_load(&sk->closed) ? -EBADF : map_err(udp_sendto(s->upcb, p, &ip, to->port));
		if (err == -ENETUNREACH)
			err = -EHOSTUNREACH;
		pbuf_free(p);
	}
	weft__lwip_unlock();
	return err ? err : (ssize_t)len;
}

static ssize_t l_recvfrom(struct weft_sock *sk, void *buf, size_t len, weft_addr_t *from,
			  int64_t deadline)
{
	struct lsock *s = L(sk);
	ssize_t n;
	weft__lwip_lock_take();
	for (;;) {
		if (atomic_load(&sk->closed)) {
			n = -EBADF;
			break;
		}
		if (s->qlen) {
			struct dgram *d = &s->q[s->qhead];
			s->qhead = (s->qhead + 1) % UDP_QUEUE;
			s->qlen--;
			size_t take = len < d->p->tot_len ? len : d->p->tot_len;
			pbuf_copy_partial(d->p, buf, (u16_t)take, 0);
			if (from)
				*from = (weft_addr_t){.ip = ip4_addr_get_u32(ip_2_ip4(&d->addr)),
						      .port = d->port};
			pbuf_free(d->p);
			n = (ssize_t)take;
			break;
		}
		int r = wait_on(&s->rdq, deadline);
		if (r) {
			n = r;
			break;
		}
	}
	weft__lwip_unlock();
	return n;
}

/* Let a connection's pcb go: lwIP finishes sending and closes it (with a
 * reset if data was left unread, as a kernel does). */
static void release_conn(struct lsock *s)
{
	/* Unread data goes whether or not the pcb is still there: after a
	 * reset (on_err) lwIP has freed the pcb but the data is ours. */
	if (s->rx) {
		pbuf_free(s->rx); /* unread: its window stays closed, so close resets */
		s->rx = NULL;
	}
	struct tcp_pcb *pcb = s->pcb;
	s->pcb = NULL;
	if (!pcb)
		return;
	tcp_arg(pcb, NULL);
	tcp_sent(pcb, NULL);
	tcp_err(pcb, NULL);
	if (tcp_close(pcb) != ERR_OK)
		tcp_abort(pcb);
}

static void l_abort(struct weft_sock *sk)
{
	struct lsock *s = L(sk);
	weft__lwip_lock_take();
	wake(&s->rdq, -EBADF);
	wake(&s->wrq, -EBADF);
	if (sk->kind == NK_LISTEN) {
		if (s->pcb) {
			tcp_arg(s->pcb, NULL);
			tcp_accept(s->pcb, NULL);
			tcp_close(s->pcb);
			s->pcb = NULL;
		}
		/* Refuse what was never accepted. */
		struct lsock *c;
		while ((c = s->acc_head)) {
			s->acc_head = c->acc_next;
			if (c->pcb) {
				tcp_arg(c->pcb, NULL);
				tcp_abort(c->pcb);
			}
			if (c->rx)
				pbuf_free(c->rx);
			free(c);
		}
		s->acc_tail = NULL;
	} else if (sk->kind == NK_CONN) {
		release_conn(s);
	} else if (s->upcb) {
		udp_remove(s->upcb);
		s->upcb = NULL;
		while (s->qlen) {
			pbuf_free(s->q[s->qhead].p);
			s->qhead = (s->qhead + 1) % UDP_QUEUE;
			s->qlen--;
		}
	}
	weft__lwip_unlock();
}

static void l_destroy(struct weft_sock *sk) { free(sk); }

const struct net_ops weft__net_lwip = {
	.name = "lwip",
	.init = l_init,
	.fini = l_fini,
	.listen = l_listen,
	.accept = l_accept,
	.connect = l_connect,
	.read = l_read,
	.write = l_write,
	.shutdown = l_shutdown,
	.local = l_local,
	.peer = l_peer,
	.udp_bind = l_udp_bind,
	.sendto = l_sendto,
	.recvfrom = l_recvfrom,
	.abort = l_abort,
	.destroy = l_destroy,
	.stats = weft__lwip_stats,
};
