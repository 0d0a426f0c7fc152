/* SPDX-License-Identifier: MIT */
/* lwIP's device interfaces: one Ethernet netif over the shim's network
 * device (TAP, AF_PACKET, virtio-net), its output, and a receive fiber that
 * drains frames into lwIP, up to a batch per lock hold, whenever the
 * device's I/O source is readable. One device at a time.
 *
 * A frame the device has no room for is held back (a copy, in a queue of
 * TXQ_MAX, as a kernel's qdisc holds what its NIC's ring cannot take), and
 * a transmit fiber sends it once the device has room; beyond TXQ_MAX, or
 * with no memory for the copy, it is dropped as a wire would drop it.
 * Dropping at once was what a burst met: a thousand echoes written
 * together against virtio-net's 64 transmit slots lost over 300, and lwIP,
 * resending them all at the same timer tick, met the full ring again with
 * 64 fewer each time: six backoffs, over a minute. */
#include <stdlib.h>
#include <string.h>

#include "lwip.h"
#include "weft.h"

#include "lwip/ethip6.h"
#include "lwip/ip4_addr.h"
#include "lwip/netif.h"
#include "lwip/pbuf.h"
#include "netif/etharp.h"
#include "netif/ethernet.h"

#define TXQ_MAX 1024         /* frames held back while the device is full */
#define TXQ_RETRY_NS 2000000 /* look again this soon if room is not reported */

struct ndev {
	struct netif netif;
	struct shim_netdev *dev;
	struct shim_netdev_info info;
	weft_fiber_t rx_fiber, tx_fiber;
	/* Held-back frames, under the lwIP lock: a ring, oldest first. */
	struct pbuf *txq[TXQ_MAX];
	unsigned txq_first, txq_len;
	weft_sem_t *txq_sem; /* released when the queue stops being empty */
	/* Under the lwIP lock, for a device whose sends wait for
	 * shim_netdev_flush (info.batched): rx_main is feeding lwIP a batch,
	 * and flushes once at its end (batch); other sends (an API call's, a
	 * timer's) leave the flush to tx_main, woken once (flush_due), which
	 * runs when the sending fiber gives up its worker: the sends of every
	 * fiber that ran meanwhile go with one flush. Before tx_main runs, and
	 * once it is stopped, each send flushes (defer false). */
	bool batch, defer, flush_due;
};

static struct ndev *ndev; /* one device interface at a time */

/* Under the lwIP lock: p to the device. 0, -EAGAIN (no room), -ENOMEM (no
 * memory to flatten it), or the device's error. */
static int dev_send(struct ndev *d, struct pbuf *p)
{
	struct shim_iov iov[16];
	int n = 0;
	struct pbuf *q;
	for (q = p; q && n < 16; q = q->next)
		iov[n++] = (struct shim_iov){q->payload, q->len};
	if (!q)
		return shim_netdev_send(d->dev, iov, n);
	/* More pieces than the device takes: flatten. */
	struct pbuf *flat = pbuf_clone(PBUF_RAW, PBUF_RAM, p);
	if (!flat)
		return -ENOMEM;
	struct shim_iov one = {flat->payload, flat->len};
	int err = shim_netdev_send(d->dev, &one, 1);
	pbuf_free(flat);
	return err;
}

/* A frame sent (err 0) or dropped (as a wire would: TCP resends). */
static void count_sent(int err)
{
	if (err)
		weft__lwip_count_drop();
	else
		weft__lwip_count_frames(0, 1);
}

/* Under the lwIP lock: the held-back frames to the device, oldest first,
 * while it has room. True when none is left. */
static bool txq_flush(struct ndev *d)
{
	while (d->txq_len) {
		struct pbuf *p = d->txq[d->txq_first];
		int err = dev_send(d, p);
		if (err == -EAGAIN)
			return false;
		count_sent(err);
		pbuf_free(p);
		d->txq_first = (d->txq_first + 1) % TXQ_MAX;
		d->txq_len--;
	}
	return true;
}

static err_t dev_linkoutput(struct netif *nif, struct pbuf *p)
{
	struct ndev *d = nif->state;
	/* Behind what is held back, so that no frame overtakes another. */
	int err = txq_flush(d) ? dev_send(d, p) : -EAGAIN;
	if (d->info.batched && !d->batch) {
		if (!d->defer)
			(void)shim_netdev_flush(d->dev);
		else if (!d->flush_due) {
			d->flush_due = true;
			weft_sem_release(d->txq_sem);
		}
	}
	if (err != -EAGAIN) {
		count_sent(err);
		return err == -ENOMEM ? ERR_MEM : ERR_OK;
	}
	/* A copy: lwIP may change p (a TCP segment it resends) once we return. */
	struct pbuf *c = d->txq_len < TXQ_MAX ? pbuf_clone(PBUF_RAW, PBUF_RAM, p) : NULL;
	if (!c) {
		weft__lwip_count_drop();
		return ERR_OK;
	}
	d->txq[(d->txq_first + d->txq_len) % TXQ_MAX] = c;
	if (d->txq_len++ == 0)
		weft_sem_release(d->txq_sem);
	return ERR_OK;
}

/* Sends what is held back: waits for the queue to fill, then for room in
 * the device until the queue is empty again. Room is its I/O source's OUT;
 * a device that does not report it, or reports room and then refuses (an
 * AF_PACKET socket's ENOBUFS), is tried again every TXQ_RETRY_NS instead,
 * so this never spins. */
static void *tx_main(void *arg)
{
	struct ndev *d = arg;
	while (!weft__lwip_stopping()) {
		if (weft_sem_acquire(d->txq_sem, -1) != 0)
			break; /* cancelled: the device is closing */
		for (bool first = true;; first = false) {
			weft__lwip_lock_take();
			unsigned was = d->txq_len;
			bool empty = txq_flush(d);
			(void)shim_netdev_flush(d->dev);
			d->flush_due = false;
			bool moved = d->txq_len != was;
			weft__lwip_unlock();
			if (empty)
				break;
			int64_t retry = weft_deadline_in(TXQ_RETRY_NS);
			int r = first || moved ? weft__io_wait(d->info.src, WEFT_IO_OUT, retry)
					       : weft_sleep_until(retry);
			if (r == -ECANCELED || r == -EBADF)
				return NULL;
		}
	}
	return NULL;
}

static err_t dev_netif_init(struct netif *nif)
{
	struct ndev *d = nif->state;
	nif->name[0] = 'w';
	nif->name[1] = 't';
	nif->output = etharp_output;
	nif->output_ip6 = ethip6_output;
	nif->linkoutput = dev_linkoutput;
	nif->mtu = (u16_t)(d->info.mtu > 9000 ? 9000 : d->info.mtu);
	nif->hwaddr_len = 6;
	memcpy(nif->hwaddr, d->info.mac, 6);
	nif->flags = NETIF_FLAG_BROADCAST | NETIF_FLAG_ETHARP | NETIF_FLAG_ETHERNET |
		     NETIF_FLAG_LINK_UP | NETIF_FLAG_MLD6;
	return ERR_OK;
}

/* Drain the device into lwIP, up to a batch per lock hold, and wait on its
 * I/O source when it is empty. */
static void *rx_main(void *arg)
{
	struct ndev *d = arg;
	const u16_t cap = (u16_t)(d->netif.mtu + 14 + 4); /* frame, with a VLAN tag */
	struct pbuf *spare = NULL;
	while (!weft__lwip_stopping()) {
		int r = 0;
		weft__lwip_lock_take();
		d->batch = true;
		for (int i = 0; i < 64; i++) {
			if (!spare) {
				weft__lwip_mem_rx(true);
				spare = pbuf_alloc(PBUF_RAW, cap, PBUF_RAM);
				weft__lwip_mem_rx(false);
			}
			if (!spare) {
				r = -ENOMEM;
				break;
			}
			r = shim_netdev_recv(d->dev, spare->payload, cap);
			if (r == -EAGAIN)
				break;
			if (r < 0) {
				weft__lwip_count_drop();
				continue;
			}
			struct pbuf *p = spare;
			spare = NULL;
			pbuf_realloc(p, (u16_t)r);
			weft__lwip_count_frames(1, 0);
			if (d->netif.input(p, &d->netif) != ERR_OK) {
				pbuf_free(p);
				weft__lwip_count_drop();
			}
		}
		/* What lwIP sent answering the batch goes out at once. */
		d->batch = false;
		(void)shim_netdev_flush(d->dev);
		weft__lwip_unlock();
		if (r == -EAGAIN)
			weft__io_wait(d->info.src, WEFT_IO_IN, -1);
		else if (r == -ENOMEM)
			weft_sleep_until(weft_deadline_in(1000000)); /* let memory come back */
		else
			weft_fiber_yield();
	}
	if (spare) {
		weft__lwip_lock_take();
		pbuf_free(spare);
		weft__unlock(&weft__lwip_lock);
	}
	return NULL;
}

int weft__lwip_parse_cidr(const char *s, ip4_addr_t *ip, ip4_addr_t *mask)
{
	char buf[32];
	const char *slash = strchr(s, '/');
	size_t n = slash ? (size_t)(slash - s) : strlen(s);
	if (n >= sizeof buf)
		return -EINVAL;
	memcpy(buf, s, n);
	buf[n] = 0;
	weft_addr_t a;
	if (weft_addr_parse(buf, &a) || a.port || a.family != WEFT_AF_INET)
		return -EINVAL;
	unsigned long len = 24;
	if (slash) {
		char *end;
		len = strtoul(slash + 1, &end, 10);
		if (!slash[1] || *end || len > 32)
			return -EINVAL;
	}
	ip->addr = a.ip;
	mask->addr = lwip_htonl(len ? 0xffffffffu << (32 - len) : 0);
	return 0;
}

#define IP6_FORM "ADDR/64 (e.g. fd00::2/64)"

int weft__lwip_parse_ip6(const char *s, ip6_addr_t *ip, const char **why)
{
	const char *slash = strchr(s, '/');
	char buf[48];
	size_t n = slash ? (size_t)(slash - s) : strlen(s);
	weft_addr_t a = {0};
	if (n < sizeof buf) {
		memcpy(buf, s, n);
		buf[n] = 0;
	}
	/* Brackets (weft_addr_parse's "[::1]") belong to an address with a
	 * port; a zone to a link-local one. */
	if (n >= sizeof buf || s[0] == '[' || weft_addr_parse(buf, &a) || a.port ||
	    a.family != WEFT_AF_INET6 || a.scope) {
		*why = "not an IPv6 address " IP6_FORM;
		return -EINVAL;
	}
	if (!slash) {
		*why = "no prefix length: " IP6_FORM;
		return -EINVAL;
	}
	if (strcmp(slash + 1, "64")) {
		*why = "/64 only (lwIP 2.1 keeps no prefix length: a static address's /64 "
		       "is on-link): " IP6_FORM;
		return -EINVAL;
	}
	static const uint8_t zero[15];
	const uint8_t *b = a.ip6;
	bool unspec_or_loop = !memcmp(b, zero, 15) && b[15] <= 1;
	bool mapped = !memcmp(b, zero, 10) && b[10] == 0xff && b[11] == 0xff;
	bool link_local = b[0] == 0xfe && (b[1] & 0xc0) == 0x80;
	if (unspec_or_loop || mapped || link_local || b[0] == 0xff) {
		*why = "not a global or unique-local unicast address (not ::, ::1, IPv4-mapped, "
		       "multicast or link-local: the interface makes its own fe80:: one): " IP6_FORM;
		return -EINVAL;
	}
	memcpy(ip->addr, b, 16);
	ip6_addr_clear_zone(ip);
	return 0;
}

int weft__lwip_dev_open(const char *spec, const weft_net_config_t *cfg)
{
	bool virtio = !strcmp(spec, "virtio");
	const char *ip = cfg->ip ? cfg->ip : shim_getenv("WEFT_IP");
	const char *gw = cfg->gw ? cfg->gw : shim_getenv("WEFT_GW");
	const char *ip6 = cfg->ip6 ? cfg->ip6 : shim_getenv("WEFT_IP6");
	if (!ip || !*ip)
		ip = virtio ? "10.0.2.15/24" : NULL;
	if ((!gw || !*gw) && virtio)
		gw = "10.0.2.2";
	if (!ip) /* a device needs an address */
		return weft__lwip_refuse(-EINVAL,
					 "netif \"%.40s\" needs an IPv4 address: "
					 "weft_net_config_t.ip or WEFT_IP, a.b.c.d/len",
					 spec);
	ip4_addr_t a, m, g;
	ip4_addr_set_zero(&g);
	weft_addr_t gwa;
	if (weft__lwip_parse_cidr(ip, &a, &m))
		return weft__lwip_bad_value(cfg->ip != NULL, "ip", "WEFT_IP", ip,
					    WEFT__LWIP_CIDR_FORM);
	if (gw && *gw) {
		if (weft_addr_parse(gw, &gwa) || gwa.port || gwa.family != WEFT_AF_INET)
			return weft__lwip_bad_value(cfg->gw != NULL, "gw", "WEFT_GW", gw,
						    "not an IPv4 address a.b.c.d");
		g.addr = gwa.ip;
	}
	/* $WEFT_IP6 empty is unset, as $WEFT_IP is; the field empty was
	 * refused by weft__lwip_up. */
	bool has6 = ip6 && *ip6;
	ip6_addr_t a6;
	const char *why;
	if (has6 && weft__lwip_parse_ip6(ip6, &a6, &why))
		return weft__lwip_bad_value(cfg->ip6 != NULL, "ip6", "WEFT_IP6", ip6, why);
	struct ndev *d = calloc(1, sizeof *d);
	if (!d)
		return -ENOMEM;
	int err = shim_netdev_open(spec, &d->dev, &d->info);
	if (err) {
		free(d);
		return err;
	}
	weft__lwip_lock_take();
	struct netif *ok = netif_add(&d->netif, &a, &m, &g, d, dev_netif_init, ethernet_input);
	if (ok) {
		netif_set_default(&d->netif);
		netif_set_up(&d->netif);
		netif_set_link_up(&d->netif);
		/* IPv6: the link-local address from the MAC (fe80::/64, EUI-64),
		 * valid once duplicate address detection has passed (about a
		 * second), and the configured global one, preferred at once:
		 * no DAD (docs/decisions/ipv6.md). Making an address valid
		 * joins its solicited-node multicast group (lwIP's
		 * nd6_adjust_mld_membership), so neighbour solicitations for
		 * it are taken in and answered. */
		netif_create_ip6_linklocal_address(&d->netif, 1);
		s8_t i6 = -1;
		if (has6 && netif_add_ip6_address(&d->netif, &a6, &i6) == ERR_OK && i6 >= 0)
			netif_ip6_addr_set_state(&d->netif, i6, IP6_ADDR_PREFERRED);
		else if (has6)
			ok = NULL; /* no slot: cannot happen on a new netif */
		if (!ok)
			netif_remove(&d->netif);
	}
	weft__lwip_unlock();
	if (!ok) {
		shim_netdev_close(d->dev);
		free(d);
		return -ENOMEM;
	}
	ndev = d;
	err = weft_sem_create(&d->txq_sem, 0);
	if (!err)
		err = weft__spawn_service(&d->tx_fiber, "net-tx", tx_main, d);
	if (!err) {
		weft__lwip_lock_take();
		d->defer = true;
		weft__lwip_unlock();
	}
	if (!err)
		err = weft__spawn_service(&d->rx_fiber, "net-rx", rx_main, d);
	return err;
}

void weft__lwip_dev_close(void)
{
	struct ndev *d = ndev;
	if (!d)
		return;
	weft__lwip_stop_fiber(&d->rx_fiber);
	weft__lwip_lock_take();
	d->defer = false; /* tx_main stops: each send flushes itself */
	(void)shim_netdev_flush(d->dev);
	weft__lwip_unlock();
	weft__lwip_stop_fiber(&d->tx_fiber);
	weft__lwip_lock_take();
	netif_remove(&d->netif);
	for (; d->txq_len; d->txq_len--, d->txq_first = (d->txq_first + 1) % TXQ_MAX)
		pbuf_free(d->txq[d->txq_first]);
	weft__lwip_unlock();
	if (d->txq_sem)
		weft_sem_destroy(d->txq_sem);
	weft__io_forget(d->info.src);
	shim_netdev_close(d->dev);
	free(d);
	ndev = NULL;
}
