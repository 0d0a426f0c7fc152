/* SPDX-License-Identifier: MIT */
/* The "lwip" stack's UDP: a socket keeps up to UDP_QUEUE datagrams that
 * arrived and were not read; beyond that it drops, as a kernel's full
 * buffer does. Sending never waits: a full device holds the
 * datagram back (net/lwip_netif.c), and drops it beyond 1,024 held. */
#include <stdlib.h>
#include <string.h>

#include "lwip_sock.h"

#include "lwip/udp.h"

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
	weft__lsock_wake(&s->rdq, 0);
	weft__lsock_ready(s);
}

int weft__ludp_bind(struct weft_sock **out, const weft_addr_t *local)
{
	struct lsock *s = weft__lsock_new(true);
	if (!s)
		return -ENOMEM;
	ip_addr_t ip;
	if (weft__lsock_ip(local, &ip)) {
		free(s);
		return -EINVAL;
	}
	weft__lwip_lock_take();
	int err = -ENOMEM;
	struct udp_pcb *pcb = udp_new_ip_type(IP_GET_TYPE(&ip));
	if (pcb) {
		err = weft__lsock_err(udp_bind(pcb, &ip, local->port));
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

ssize_t weft__ludp_sendto(struct weft_sock *sk, const void *buf, size_t len, const weft_addr_t *to,
			  int64_t deadline)
{
	(void)deadline; /* lwIP's UDP never blocks (lwip_netif.c holds or drops) */
	struct lsock *s = L(sk);
	ip_addr_t ip;
	if (weft__lsock_ip(to, &ip))
		return -EINVAL;
	weft__lwip_lock_take();
	int err = -ENOMEM;
	struct pbuf *p = pbuf_alloc(PBUF_TRANSPORT, (u16_t)len, PBUF_RAM);
	if (p) {
		pbuf_take(p, buf, (u16_t)len);
		err = atomic_load(&sk->closed)
			      ? -EBADF
			      : weft__lsock_err(udp_sendto(s->upcb, p, &ip, to->port));
		if (err == -ENETUNREACH)
			err = -EHOSTUNREACH;
		pbuf_free(p);
	}
	weft__lwip_unlock();
	return err ? err : (ssize_t)len;
}

ssize_t weft__ludp_recvfrom(struct weft_sock *sk, void *buf, size_t len, weft_addr_t *from,
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
				*from = weft__lsock_addr(&d->addr, d->port);
			pbuf_free(d->p);
			n = (ssize_t)take;
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

void weft__ludp_abort(struct lsock *s)
{
	if (!s->upcb)
		return;
	udp_remove(s->upcb);
	s->upcb = NULL;
	while (s->qlen) {
		pbuf_free(s->q[s->qhead].p);
		s->qhead = (s->qhead + 1) % UDP_QUEUE;
		s->qlen--;
	}
}
