/* SPDX-License-Identifier: MIT */
/* The "lwip" stack's TCP: listen, accept, connect, read, write, shutdown
 * and close over lwIP's raw API. Flow control is lwIP's own: received data
 * is acknowledged to the window (tcp_recved) only as the reader takes it,
 * and a writer waits for tcp_sent to free send buffer. A listener's
 * accepted-but-not-taken connections count against its backlog
 * (tcp_backlog_delayed), so beyond it new SYNs are dropped, not queued. */
#include <stdlib.h>
#include <string.h>

#include "lwip_sock.h"

#include "lwip/tcp.h"
#include "lwip/priv/tcp_priv.h"

/* ---- Callbacks (lock held) ------------------------------------------------------ */

/* What a received segment holds of lwIP's budget, or 0 if not all of it
 * is known (a pbuf whose data lives elsewhere). */
static size_t held_by(const struct pbuf *p)
{
	size_t n = 0;
	for (; p; p = p->next) {
		u8_t src = pbuf_get_allocsrc(p);
		if (src != PBUF_TYPE_ALLOC_SRC_MASK_STD_HEAP &&
		    src != PBUF_TYPE_ALLOC_SRC_MASK_STD_MEMP_PBUF_POOL)
			return 0;
		n += weft__lwip_block_bytes(p);
	}
	return n;
}

/* A received segment arrives in the frame it came in: a block of a whole
 * frame (about 1,600 bytes) for a 64-byte message, and pbuf_realloc cannot
 * shrink it (MEM_LIBC_MALLOC). Held until a reader takes it, that is what
 * a waiting message would cost; so one that holds more than twice its
 * bytes (and a pbuf's header) is copied into a block of its own size and
 * the frame freed. Without memory for the copy the frame stays. */
struct pbuf *weft__ltcp_fit(struct pbuf *p)
{
	size_t held = held_by(p);
	if (!held || held <= 2 * ((size_t)p->tot_len + sizeof(struct pbuf)))
		return p;
	struct pbuf *c = pbuf_clone(PBUF_RAW, PBUF_RAM, p);
	if (!c)
		return p;
	pbuf_free(p);
	return c;
}

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
		pbuf_cat(s->rx, weft__ltcp_fit(p));
	} else {
		s->rx = weft__ltcp_fit(p);
	}
	weft__lsock_wake(&s->rdq, 0);
	weft__lsock_ready(s);
	return ERR_OK;
}

static err_t on_sent(void *arg, struct tcp_pcb *pcb, u16_t len)
{
	(void)pcb;
	(void)len;
	struct lsock *s = arg;
	if (s) {
		weft__lsock_wake(&s->wrq, 0);
		weft__lsock_ready(s);
	}
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
		s->err = err == ERR_ABRT ? -ECONNABORTED : weft__lsock_err(err);
	if (!s->err)
		s->err = -ECONNRESET;
	weft__lsock_wake(&s->rdq, 0);
	weft__lsock_wake(&s->wrq, 0);
	weft__lsock_ready(s);
}

static err_t on_connected(void *arg, struct tcp_pcb *pcb, err_t err)
{
	(void)pcb;
	struct lsock *s = arg;
	if (s && err == ERR_OK) {
		s->connected = true;
		weft__lsock_wake(&s->wrq, 0);
		weft__lsock_ready(s);
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
	if (!ls || !weft__lwip_conn_admit())
		return ERR_MEM; /* lwIP aborts it: the peer sees a reset */
	struct lsock *c = weft__lsock_new(false);
	if (!c) {
		weft__lwip_conn_gone();
		return ERR_MEM;
	}
	c->admitted = true;
	hook(c, newpcb);
	c->connected = true;
	/* Until taken, it counts against the listener's backlog. */
	tcp_backlog_delayed(newpcb);
	if (ls->acc_tail)
		ls->acc_tail->acc_next = c;
	else
		ls->acc_head = c;
	ls->acc_tail = c;
	weft__lsock_wake(&ls->rdq, 0);
	weft__lsock_ready(ls);
	return ERR_OK;
}

/* ---- Calls ------------------------------------------------------------------------ */

int weft__ltcp_listen(struct weft_sock **out, const weft_addr_t *local, int backlog)
{
	struct lsock *s = weft__lsock_new(false);
	if (!s)
		return -ENOMEM;
	ip_addr_t ip;
	if (weft__lsock_ip(local, &ip)) {
		free(s);
		return -EINVAL;
	}
	weft__lwip_lock_take();
	int err = -ENOMEM;
	/* Address reuse (below) is for the TIME_WAIT of past connections;
	 * two listeners of one family on one port, one of them on any
	 * address, conflict as on a kernel (an IPv6 socket takes IPv6 only). */
	for (struct tcp_pcb_listen *l = tcp_listen_pcbs.listen_pcbs; l; l = l->next)
		if (l->local_port == local->port && local->port &&
		    IP_IS_V6_VAL(l->local_ip) == IP_IS_V6_VAL(ip) &&
		    (ip_addr_isany(&l->local_ip) || ip_addr_isany(&ip) ||
		     ip_addr_cmp(&l->local_ip, &ip))) {
			weft__lwip_unlock();
			free(s);
			return -EADDRINUSE;
		}
	struct tcp_pcb *pcb = tcp_new_ip_type(IP_GET_TYPE(&ip));
	if (pcb) {
		ip_set_option(pcb, SOF_REUSEADDR);
		err = weft__lsock_err(tcp_bind(pcb, &ip, local->port));
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
				err = weft__lsock_err(e);
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

int weft__ltcp_accept(struct weft_sock *lsk, struct weft_sock **out, weft_addr_t *peer,
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
		if ((err = weft__lsock_wait(&ls->rdq, deadline)))
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
				*peer = weft__lsock_addr(&c->pcb->remote_ip, c->pcb->remote_port);
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

int weft__ltcp_connect(struct weft_sock **out, const weft_addr_t *remote, int64_t deadline)
{
	struct lsock *s = weft__lsock_new(false);
	if (!s)
		return -ENOMEM;
	ip_addr_t ip;
	if (weft__lsock_ip(remote, &ip)) {
		free(s);
		return -EINVAL;
	}
	weft__lwip_lock_take();
	int err = -ENOMEM;
	struct tcp_pcb *pcb = tcp_new_ip_type(IP_GET_TYPE(&ip));
	if (pcb) {
		hook(s, pcb);
		err = weft__lsock_err(tcp_connect(pcb, &ip, remote->port, on_connected));
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
		if ((err = weft__lsock_wait(&s->wrq, deadline)))
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

ssize_t weft__ltcp_read(struct weft_sock *sk, void *buf, size_t len, int64_t deadline)
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
		int r = weft__lsock_wait(&s->rdq, deadline);
		if (r) {
			n = r;
			break;
		}
	}
	weft__lwip_unlock();
	return n;
}

ssize_t weft__ltcp_write(struct weft_sock *sk, const void *buf, size_t len, int64_t deadline)
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
			u8_t flags =
				TCP_WRITE_FLAG_COPY | (done + n < len ? TCP_WRITE_FLAG_MORE : 0);
			err_t e = tcp_write(s->pcb, p + done, (u16_t)n, flags);
			if (e == ERR_OK) {
				done += n;
				continue;
			}
			if (e != ERR_MEM) {
				err = weft__lsock_err(e);
				break;
			}
		}
		tcp_output(s->pcb);
		/* tcp_sent wakes this writer when data in flight is acknowledged.
		 * With none in flight, tcp_write ran out of memory and nothing
		 * will: look again in a millisecond (as rx_main does), until the
		 * deadline. */
		int64_t until = deadline;
		bool idle = !s->pcb->unsent && !s->pcb->unacked;
		if (idle && deadline != 0) {
			int64_t soon = weft__now() + 1000000;
			if (deadline < 0 || deadline > soon)
				until = soon;
		}
		err = weft__lsock_wait(&s->wrq, until);
		if (err == -ETIMEDOUT && until != deadline)
			err = 0;
		if (err)
			break;
	}
	if (s->pcb)
		tcp_output(s->pcb);
	weft__lwip_unlock();
	return done ? (ssize_t)done : err;
}

int weft__ltcp_shutdown(struct weft_sock *sk, int how)
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
			weft__lsock_wake(&s->rdq, 0);
		}
		if ((how & WEFT_SHUT_WR) && !s->shut_wr) {
			s->shut_wr = true;
			err = weft__lsock_err(tcp_shutdown(s->pcb, 0, 1));
			weft__lsock_wake(&s->wrq, 0);
		}
	}
	weft__lwip_unlock();
	return err;
}

/* Let a connection's pcb go: lwIP finishes sending and closes it (with a
 * reset if data was left unread, as a kernel does). */
static void release_conn(struct lsock *s)
{
	if (s->admitted) {
		s->admitted = false;
		weft__lwip_conn_gone();
	}
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

void weft__ltcp_abort(struct lsock *s, int kind)
{
	if (kind == NK_CONN) {
		release_conn(s);
		return;
	}
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
		if (c->admitted)
			weft__lwip_conn_gone();
		free(c);
	}
	s->acc_tail = NULL;
}
