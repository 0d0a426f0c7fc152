/* SPDX-License-Identifier: MIT */
/* The "lwip" stack's names: lwIP's DNS client (A or AAAA queries), asking
 * the server of weft_net_config_t.dns or $WEFT_DNS. A query is a record
 * here, named to lwIP by a number, not a pointer: lwIP calls back with it
 * when the answer comes or its retries run out, possibly after the caller
 * gave up (its deadline, a cancellation) or even after the stack went down
 * and up again, and a number that names no record is ignored. A record is
 * freed by whichever of the caller and the callback is done with it last,
 * and at weft__lwip_dns_down (no caller is inside then: weft_net_fini
 * refuses while a resolve runs). Everything here runs under the lwIP lock. */
#include <stdlib.h>
#include <string.h>

#include "lwip_sock.h"

#include "lwip/dns.h"

struct query {
	struct query *next;
	uintptr_t id;
	int refs; /* the caller's, and lwIP's until it calls back */
	bool done;
	int err;
	weft_addr_t addr;
	struct weft__waiter *q; /* the caller, parked */
};

static struct query *pending; /* lwIP has not called back */
static uintptr_t last_id;

static struct query *unlink_id(uintptr_t id)
{
	for (struct query **p = &pending; *p; p = &(*p)->next) {
		if ((*p)->id == id) {
			struct query *q = *p;
			*p = q->next;
			q->next = NULL;
			return q;
		}
	}
	return NULL;
}

static void put(struct query *q)
{
	if (--q->refs == 0)
		free(q);
}

static void found(const char *name, const ip_addr_t *ip, void *arg)
{
	(void)name;
	struct query *q = unlink_id((uintptr_t)arg);
	if (!q)
		return; /* its record went with an earlier stack */
	q->done = true;
	/* lwIP says "no address" alike for a server's "no such name" and
	 * for its retries running out. */
	q->err = ip ? 0 : -ENOENT;
	if (ip)
		q->addr = weft__lsock_addr(ip, 0);
	struct weft__waiter *w;
	while ((w = weft__waitq_pop(&q->q)))
		weft__waiter_complete(w, 0);
	put(q);
}

int weft__lwip_dns_up(const weft_net_config_t *cfg, const char *netif)
{
	const char *s = cfg->dns ? cfg->dns : shim_getenv("WEFT_DNS");
	ip_addr_t server = *IP_ADDR_ANY;
	if (s && *s) {
		weft_addr_t a;
		static const uint8_t zero[16];
		if (weft_addr_parse(s, &a) || a.port ||
		    (a.family == WEFT_AF_INET ? !a.ip : !memcmp(a.ip6, zero, 16)) ||
		    weft__lsock_ip(&a, &server))
			return weft__lwip_bad_value(cfg->dns != NULL, "dns", "WEFT_DNS", s,
						    "not an IPv4 or IPv6 address (a.b.c.d, or "
						    "::-form) other than 0.0.0.0 and ::");
	} else if (cfg->dns) {
		/* "" is no server (NULL means the default) */
		return weft__lwip_bad_value(true, "dns", "WEFT_DNS", "",
					    "not an IPv4 or IPv6 address (NULL: none)");
	} else if (!strcmp(netif, "virtio")) {
		IP_ADDR4(&server, 10, 0, 2, 3); /* QEMU's user network's */
	}
	dns_setserver(0, &server);
	return 0;
}

void weft__lwip_dns_down(void)
{
	struct query *q;
	while ((q = pending)) {
		pending = q->next;
		free(q); /* no caller holds it: each has left */
	}
	dns_setserver(0, IP_ADDR_ANY);
}

/* One family's lookup (type: LWIP_DNS_ADDRTYPE_IPV4 or _IPV6). */
static int lookup(const char *name, u8_t type, weft_addr_t *out, int64_t deadline)
{
	struct query *q = calloc(1, sizeof *q);
	if (!q)
		return -ENOMEM;
	weft__lwip_lock_take();
	q->id = ++last_id;
	q->refs = 2;
	q->next = pending;
	pending = q;
	ip_addr_t a;
	err_t e = dns_gethostbyname_addrtype(name, &a, found, (void *)q->id, type);
	int err = 0;
	if (e == ERR_OK) {
		*out = weft__lsock_addr(&a, 0); /* in lwIP's cache */
		unlink_id(q->id);
		free(q);
		weft__lwip_unlock();
		return 0;
	}
	if (e != ERR_INPROGRESS) {
		unlink_id(q->id);
		free(q);
		weft__lwip_unlock();
		/* ERR_VAL: no server; ERR_MEM: lwIP's table of queries in
		 * flight is full. */
		return e == ERR_VAL ? -EDESTADDRREQ : e == ERR_MEM ? -EAGAIN : weft__lsock_err(e);
	}
	while (!q->done) {
		/* The query may be on the loopback wire: deliver it first. */
		if (weft__lwip_flush())
			continue;
		struct weft__waiter w;
		err = weft__waiter_wait(&weft__lwip_lock, &q->q, &w, deadline);
		if (err && !q->done)
			break;
		err = 0;
	}
	if (q->done) {
		err = q->err;
		if (!err)
			*out = q->addr;
	}
	put(q);
	weft__lwip_unlock();
	return err;
}

/* A preference is two lookups, one family after the other, rather than
 * lwIP's own IPV4_IPV6 and IPV6_IPV4: those answer from the cache with the
 * second family when the first is not cached, so "IPv6 first" would give
 * an IPv4 address without asking for the IPv6 one. */
int weft__lwip_resolve(const char *name, int pref, weft_addr_t *out, int64_t deadline)
{
	const u8_t v4 = LWIP_DNS_ADDRTYPE_IPV4, v6 = LWIP_DNS_ADDRTYPE_IPV6;
	int err;
	switch (pref) {
	case WEFT_RESOLVE_INET:
		return lookup(name, v4, out, deadline);
	case WEFT_RESOLVE_INET6:
		return lookup(name, v6, out, deadline);
	case WEFT_RESOLVE_INET6_FIRST:
		err = lookup(name, v6, out, deadline);
		return err == -ENOENT ? lookup(name, v4, out, deadline) : err;
	default:
		err = lookup(name, v4, out, deadline);
		return err == -ENOENT ? lookup(name, v6, out, deadline) : err;
	}
}
