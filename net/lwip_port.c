/* SPDX-License-Identifier: MIT */
/* lwIP's port to weft: its clock, its lock, its timers and its network
 * interfaces. Two service fibers keep the stack going: a timer fiber runs
 * sys_check_timeouts when lwIP's next timeout is due (woken early when a
 * call makes an earlier one), and, for a device, a receive fiber drains
 * frames into lwIP whenever the device's I/O source is readable. The
 * loopback interface (127.0.0.1, and any packet an interface sends to its
 * own address) is drained before the lock is let go, so the in-memory wire
 * needs no fiber of its own. */
#include <stdlib.h>
#include <string.h>

#include "lwip.h"

#include "lwip/init.h"
#include "lwip/ip4_addr.h"
#include "lwip/netif.h"
#include "lwip/pbuf.h"
#include "lwip/timeouts.h"
#include "netif/etharp.h"
#include "netif/ethernet.h"
#include "netif/ppp/ppp_opts.h" /* PPP_NUM_TIMEOUTS, in MEMP_NUM_SYS_TIMEOUT */

weft__lock_t weft__lwip_lock = WEFT__LOCK_INIT;

static bool core_ready;      /* lwip_init is once per process */
static struct {
	struct weft__waiter *q;  /* the timer fiber while it waits */
	bool forever;            /* waiting with no timeout due */
	u32_t wake_ms;           /* else lwIP's time (sys_now) it wakes at */
} timer;
static weft_fiber_t timer_fiber;
static _Atomic int stopping;

static _Atomic uint64_t frames_in, frames_out, frames_dropped;
/* Blocks lwIP holds now: every allocation of its heap and pools; and the
 * allocations that failed (each dropped a frame, a segment or a
 * connection: lwIP handles a NULL everywhere but its timeouts, which come
 * from timeo_pool instead). */
static _Atomic int64_t mem_blocks;
static _Atomic uint64_t mem_failed;
/* Tests: every fail_every-th allocation fails (0: none). */
static _Atomic unsigned fail_every;
static _Atomic unsigned fail_count;

/* ---- Clock, randomness, assertions ---------------------------------------- */

/* lwIP's milliseconds are the runtime's clock: with the virtual clock,
 * lwIP's timers (retransmission, delayed ACK, TIME-WAIT) follow it. */
u32_t sys_now(void) { return (u32_t)(weft__now() / 1000000); }

uint32_t weft__lwip_rand(void)
{
	static uint64_t x;
	if (!x)
		x = (uint64_t)shim_now() * 0x9e3779b97f4a7c15ull | 1; /* a seed, not a time */
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return (uint32_t)(x >> 32);
}

void weft__lwip_assert(const char *msg, const char *file, int line)
{
	char buf[256];
	int n = snprintf(buf, sizeof buf, "weft: lwIP assertion failed: %s (%s:%d)\n", msg, file,
			 line);
	shim_console_write(buf, n > 0 ? (size_t)n : 0);
	abort();
}

/* ---- Memory ------------------------------------------------------------------- */

static bool injected_failure(void)
{
	unsigned every = atomic_load_explicit(&fail_every, memory_order_relaxed);
	return every && atomic_fetch_add_explicit(&fail_count, 1, memory_order_relaxed) % every ==
				every - 1;
}

static void *counted(void *p)
{
	if (p)
		atomic_fetch_add_explicit(&mem_blocks, 1, memory_order_relaxed);
	else
		atomic_fetch_add_explicit(&mem_failed, 1, memory_order_relaxed);
	return p;
}

void *weft__lwip_malloc(size_t size) { return counted(injected_failure() ? NULL : malloc(size)); }

void *weft__lwip_calloc(size_t n, size_t size)
{
	return counted(injected_failure() ? NULL : calloc(n, size));
}

void weft__lwip_fail_every(unsigned n)
{
	atomic_store(&fail_count, 0);
	atomic_store(&fail_every, n);
}

/* lwIP's timeouts (net/patches/0003), under the lwIP lock. lwIP never arms
 * more than MEMP_NUM_SYS_TIMEOUT at once (one per cyclic timer), so running
 * out would be a broken invariant: lwIP's assertion then says so. */
static struct sys_timeo timeo_pool[MEMP_NUM_SYS_TIMEOUT];
static struct sys_timeo *timeo_free;
static bool timeo_ready;

void *weft__lwip_timeout_alloc(void)
{
	if (!timeo_ready) {
		for (size_t i = 0; i < MEMP_NUM_SYS_TIMEOUT; i++)
			weft__lwip_timeout_free(&timeo_pool[i]);
		timeo_ready = true;
	}
	struct sys_timeo *t = timeo_free;
	if (t)
		timeo_free = t->next;
	return t;
}

void weft__lwip_timeout_free(void *p)
{
	struct sys_timeo *t = p;
	t->next = timeo_free;
	timeo_free = t;
}

void weft__lwip_free(void *p)
{
	if (p)
		atomic_fetch_sub_explicit(&mem_blocks, 1, memory_order_relaxed);
	free(p);
}

void weft__lwip_count_drop(void) { atomic_fetch_add(&frames_dropped, 1); }

/* ---- The lock ---------------------------------------------------------------- */

void weft__lwip_lock_take(void) { weft__lock(&weft__lwip_lock); }

bool weft__lwip_flush(void)
{
	bool delivered = false;
	/* Loopback delivery can answer with more loopback traffic (an ACK,
	 * the next segments): repeat until the queues stay empty. Each round
	 * moves data that a window bounds, so this ends. */
	for (;;) {
		bool any = false;
		struct netif *n;
		NETIF_FOREACH(n)
		{
			if (n->loop_first) {
				/* Count the packets as frames out and in; the last
				 * pbuf of each has tot_len == len. */
				uint64_t k = 0;
				for (struct pbuf *q = n->loop_first; q; q = q->next)
					k += q->tot_len == q->len;
				atomic_fetch_add(&frames_out, k);
				atomic_fetch_add(&frames_in, k);
				netif_poll(n);
				any = true;
			}
		}
		if (!any)
			break;
		delivered = true;
	}
	if (timer.q) {
		u32_t ms = sys_timeouts_sleeptime();
		if (ms != SYS_TIMEOUTS_SLEEPTIME_INFINITE &&
		    (timer.forever || (s32_t)(sys_now() + ms - timer.wake_ms) < 0))
			weft__waiter_complete(weft__waitq_pop(&timer.q), 0);
	}
	return delivered;
}

void weft__lwip_unlock(void)
{
	weft__lwip_flush();
	weft__unlock(&weft__lwip_lock);
}

/* ---- The timer fiber ----------------------------------------------------------- */

static void *timer_main(void *arg)
{
	(void)arg;
	weft__lwip_lock_take();
	while (!atomic_load(&stopping)) {
		sys_check_timeouts();
		u32_t now = sys_now(), ms = sys_timeouts_sleeptime();
		timer.forever = ms == SYS_TIMEOUTS_SLEEPTIME_INFINITE;
		timer.wake_ms = now + ms;
		/* lwIP counts whole milliseconds: wake at the start of the one it
		 * is due in, not up to 1 ms later. */
		int64_t at = timer.forever ? -1 : ((int64_t)(weft__now() / 1000000) + ms) * 1000000;
		/* What the timers sent over the loopback (retransmitted SYNs,
		 * delayed ACKs) is delivered before the timer fiber waits. */
		weft__lwip_flush();
		/* Woken by the deadline, by a flush that made an earlier timeout
		 * (weft__waiter_complete), or by stop_fiber's cancellation. */
		struct weft__waiter w;
		weft__waiter_wait(&weft__lwip_lock, &timer.q, &w, at);
	}
	weft__unlock(&weft__lwip_lock);
	return NULL;
}

/* ---- Device interfaces ------------------------------------------------------------ */

struct ndev {
	struct netif netif;
	struct shim_netdev *dev;
	struct shim_netdev_info info;
	weft_fiber_t rx_fiber;
};

static struct ndev *ndev; /* one device interface at a time */

static err_t dev_linkoutput(struct netif *nif, struct pbuf *p)
{
	struct ndev *d = nif->state;
	struct shim_iov iov[16];
	int n = 0;
	struct pbuf *q;
	for (q = p; q && n < 16; q = q->next)
		iov[n++] = (struct shim_iov){q->payload, q->len};
	int err;
	if (q) {
		/* More pieces than the device takes: flatten. */
		struct pbuf *flat = pbuf_clone(PBUF_RAW, PBUF_RAM, p);
		if (!flat) {
			weft__lwip_count_drop();
			return ERR_MEM;
		}
		struct shim_iov one = {flat->payload, flat->len};
		err = shim_netdev_send(d->dev, &one, 1);
		pbuf_free(flat);
	} else {
		err = shim_netdev_send(d->dev, iov, n);
	}
	/* A full device queue drops the frame, as a wire would; TCP resends. */
	if (err)
		weft__lwip_count_drop();
	else
		atomic_fetch_add(&frames_out, 1);
	return ERR_OK;
}

static err_t dev_netif_init(struct netif *nif)
{
	struct ndev *d = nif->state;
	nif->name[0] = 'w';
	nif->name[1] = 't';
	nif->output = etharp_output;
	nif->linkoutput = dev_linkoutput;
	nif->mtu = (u16_t)(d->info.mtu > 9000 ? 9000 : d->info.mtu);
	nif->hwaddr_len = 6;
	memcpy(nif->hwaddr, d->info.mac, 6);
	nif->flags = NETIF_FLAG_BROADCAST | NETIF_FLAG_ETHARP | NETIF_FLAG_ETHERNET |
		     NETIF_FLAG_LINK_UP;
	return ERR_OK;
}

/* Drain the device into lwIP, up to a batch per lock hold, and wait on its
 * I/O source when it is empty. */
static void *rx_main(void *arg)
{
	struct ndev *d = arg;
	const u16_t cap = (u16_t)(d->netif.mtu + 14 + 4); /* frame, with a VLAN tag */
	struct pbuf *spare = NULL;
	while (!atomic_load(&stopping)) {
		int r = 0;
		weft__lwip_lock_take();
		for (int i = 0; i < 64; i++) {
			if (!spare && !(spare = pbuf_alloc(PBUF_RAW, cap, PBUF_RAM))) {
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
			atomic_fetch_add(&frames_in, 1);
			if (d->netif.input(p, &d->netif) != ERR_OK) {
				pbuf_free(p);
				weft__lwip_count_drop();
			}
		}
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

/* "a.b.c.d/len" */
static int parse_cidr(const char *s, ip4_addr_t *ip, ip4_addr_t *mask)
{
	char buf[32];
	const char *slash = strchr(s, '/');
	size_t n = slash ? (size_t)(slash - s) : strlen(s);
	if (n >= sizeof buf)
		return -EINVAL;
	memcpy(buf, s, n);
	buf[n] = 0;
	weft_addr_t a;
	if (weft_addr_parse(buf, &a) || a.port)
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

static void stop_fiber(weft_fiber_t *f)
{
	if (!*f)
		return;
	weft_fiber_cancel(*f);
	weft_fiber_join(*f, -1, NULL);
	*f = 0;
}

static int open_device(const char *spec, const weft_net_config_t *cfg)
{
	bool virtio = !strcmp(spec, "virtio");
	const char *ip = cfg->ip ? cfg->ip : shim_getenv("WEFT_IP");
	const char *gw = cfg->gw ? cfg->gw : shim_getenv("WEFT_GW");
	if (!ip || !*ip)
		ip = virtio ? "10.0.2.15/24" : NULL;
	if ((!gw || !*gw) && virtio)
		gw = "10.0.2.2";
	if (!ip)
		return -EINVAL; /* a device needs an address */
	ip4_addr_t a, m, g;
	ip4_addr_set_zero(&g);
	weft_addr_t gwa;
	if (parse_cidr(ip, &a, &m))
		return -EINVAL;
	if (gw && *gw) {
		if (weft_addr_parse(gw, &gwa) || gwa.port)
			return -EINVAL;
		g.addr = gwa.ip;
	}
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
	}
	weft__lwip_unlock();
	if (!ok) {
		shim_netdev_close(d->dev);
		free(d);
		return -ENOMEM;
	}
	ndev = d;
	err = weft__spawn_service(&d->rx_fiber, "net-rx", rx_main, d);
	return err;
}

static void close_device(void)
{
	struct ndev *d = ndev;
	if (!d)
		return;
	stop_fiber(&d->rx_fiber);
	weft__lwip_lock_take();
	netif_remove(&d->netif);
	weft__lwip_unlock();
	weft__io_forget(d->info.src);
	shim_netdev_close(d->dev);
	free(d);
	ndev = NULL;
}

int weft__lwip_up(const weft_net_config_t *cfg)
{
	const char *spec = cfg->netif ? cfg->netif : shim_getenv("WEFT_NETIF");
	if (cfg->netif && !*cfg->netif)
		return -EINVAL;
	if (!spec || !*spec)
		spec = "loop";
	bool loop = !strcmp(spec, "loop");
	if (!loop && strcmp(spec, "virtio") && strncmp(spec, "tap:", 4) &&
	    strncmp(spec, "packet:", 7))
		return -EINVAL;
	/* Addresses given are checked even where they are not used ("loop"). */
	ip4_addr_t a, m;
	weft_addr_t g;
	if (cfg->ip && parse_cidr(cfg->ip, &a, &m))
		return -EINVAL;
	if (cfg->gw && (weft_addr_parse(cfg->gw, &g) || g.port))
		return -EINVAL;
	weft__lwip_lock_take();
	if (!core_ready) {
		lwip_init();
		core_ready = true;
	}
	weft__unlock(&weft__lwip_lock);
	atomic_store(&stopping, 0);
	int err = loop ? 0 : open_device(spec, cfg);
	if (!err)
		err = weft__spawn_service(&timer_fiber, "net-timer", timer_main, NULL);
	if (err) {
		atomic_store(&stopping, 1);
		close_device();
	}
	return err;
}

void weft__lwip_down(void)
{
	atomic_store(&stopping, 1);
	stop_fiber(&timer_fiber);
	close_device();
}

void weft__lwip_stats(weft_net_stats_t *out)
{
	out->frames_in = atomic_load(&frames_in);
	out->frames_out = atomic_load(&frames_out);
	out->frames_dropped = atomic_load(&frames_dropped);
	int64_t blocks = atomic_load_explicit(&mem_blocks, memory_order_relaxed);
	out->mem_blocks = blocks > 0 ? (uint64_t)blocks : 0;
	out->mem_failed = atomic_load_explicit(&mem_failed, memory_order_relaxed);
}
