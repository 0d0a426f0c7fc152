/* SPDX-License-Identifier: MIT */
/* lwIP's port to weft: its clock, its lock and its timers, and bringing the
 * stack up and down (its memory is lwip_mem.c's, its device interfaces
 * lwip_netif.c's). A timer fiber runs sys_check_timeouts when lwIP's next
 * timeout is due (woken early when a call makes an earlier one). The
 * loopback interface (127.0.0.1, and any packet an interface sends to its
 * own address) is drained before the lock is let go, so the in-memory wire
 * needs no fiber of its own; under simulation with wire faults, its frames
 * go through the simulated wire instead (sim_wire.c, seam/sim_fault.h),
 * and libweft-sim.a's loop netif has simulated hosts (sim_wire.c). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lwip.h"
#include "sim_fault.h"

#include "lwip/init.h"
#include "lwip/netif.h"
#include "lwip/pbuf.h"
#include "lwip/timeouts.h"

weft__lock_t weft__lwip_lock = WEFT__LOCK_INIT;

static bool core_ready; /* lwip_init is once per process */
static struct {
	struct weft__waiter *q; /* the timer fiber while it waits */
	bool forever;           /* waiting with no timeout due */
	u32_t wake_ms;          /* else lwIP's time (sys_now) it wakes at */
} timer;
static weft_fiber_t timer_fiber;
static _Atomic int stopping;

static _Atomic uint64_t frames_in, frames_out, frames_dropped;

/* ---- Clock, randomness, assertions ---------------------------------------- */

/* lwIP's milliseconds are the runtime's clock: with the virtual clock,
 * lwIP's timers (retransmission, delayed ACK, TIME-WAIT) follow it. */
u32_t sys_now(void) { return (u32_t)(weft__now() / 1000000); }

uint32_t weft__lwip_rand(void)
{
	static uint64_t x;
	if (!x) {
		/* A seed, not a time; under a simulation seed, one from it (the
		 * same ports each run; 0 in libweft.a). */
		uint64_t s = weft__sim_net_seed();
		x = s ? s : (uint64_t)shim_now() * 0x9e3779b97f4a7c15ull | 1;
	}
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

void weft__lwip_count_drop(void) { atomic_fetch_add(&frames_dropped, 1); }

void weft__lwip_count_frames(uint64_t in, uint64_t out)
{
	if (in)
		atomic_fetch_add(&frames_in, in);
	if (out)
		atomic_fetch_add(&frames_out, out);
}

bool weft__lwip_stopping(void) { return atomic_load(&stopping); }

void weft__lwip_stop_fiber(weft_fiber_t *f)
{
	if (!*f)
		return;
	weft_fiber_cancel(*f);
	weft_fiber_join(*f, -1, NULL, NULL);
	*f = 0;
}

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
				weft__lwip_count_frames(k, k);
				if (!(WEFT__SIM_WIRE && weft__sim_wire_take(n)))
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

/* ---- Refusals ------------------------------------------------------------------ */

int weft__lwip_refuse(int e, const char *fmt, ...)
{
	char why[320], line[sizeof why + 24];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof why, fmt, ap);
	va_end(ap);
	int n = snprintf(line, sizeof line, "weft_net_init: %s\n", why);
	if (n > 0)
		shim_console_write(line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
	return e;
}

int weft__lwip_bad_value(bool from_field, const char *field, const char *var, const char *v,
			 const char *accepted)
{
	if (from_field)
		return weft__lwip_refuse(-EINVAL, "weft_net_config_t.%s \"%.40s\": %s", field, v,
					 accepted);
	return weft__lwip_refuse(-EINVAL, "%s=%.40s: %s", var, v, accepted);
}

#define NETIFS "not loop, tap:NAME, packet:IFNAME, xdp:IFNAME[:QUEUE], virtio or dwmac"
#define GW_FORM "not an IPv4 address a.b.c.d"
#define DNS_FORM "not an IPv4 or IPv6 address (a.b.c.d, or ::-form) other than 0.0.0.0 and ::"

int weft__lwip_up(const weft_net_config_t *cfg)
{
	const char *spec = cfg->netif ? cfg->netif : shim_getenv("WEFT_NETIF");
	if (cfg->netif && !*cfg->netif)
		return weft__lwip_bad_value(true, "netif", "WEFT_NETIF", "", NETIFS);
	if (!spec || !*spec)
		spec = "loop";
	bool loop = !strcmp(spec, "loop");
	if (!loop && strcmp(spec, "virtio") && strcmp(spec, "dwmac") && strncmp(spec, "tap:", 4) &&
	    strncmp(spec, "packet:", 7) && strncmp(spec, "xdp:", 4))
		return weft__lwip_bad_value(cfg->netif != NULL, "netif", "WEFT_NETIF", spec,
					    NETIFS);
	/* Addresses given are checked even where they are not used ("loop"). */
	ip4_addr_t a, m;
	ip6_addr_t a6;
	weft_addr_t g;
	const char *why;
	if (cfg->ip && weft__lwip_parse_cidr(cfg->ip, &a, &m))
		return weft__lwip_bad_value(true, "ip", "WEFT_IP", cfg->ip, WEFT__LWIP_CIDR_FORM);
	if (cfg->gw && (weft_addr_parse(cfg->gw, &g) || g.port || g.family != WEFT_AF_INET))
		return weft__lwip_bad_value(true, "gw", "WEFT_GW", cfg->gw, GW_FORM);
	weft_addr_t d;
	static const uint8_t zero[16];
	if (cfg->dns && (weft_addr_parse(cfg->dns, &d) || d.port ||
			 (d.family == WEFT_AF_INET ? !d.ip : !memcmp(d.ip6, zero, 16))))
		return weft__lwip_bad_value(true, "dns", "WEFT_DNS", cfg->dns, DNS_FORM);
	if (cfg->ip6 && weft__lwip_parse_ip6(cfg->ip6, &a6, &why))
		return weft__lwip_bad_value(true, "ip6", "WEFT_IP6", cfg->ip6, why);
	if (weft__lwip_mem_config())
		return -EINVAL;
	/* A partition cuts the simulated hosts (sim_wire.c), which only the
	 * loop netif has: with a device, refused rather than not run. */
	if (WEFT__SIM_WIRE && !loop && weft__sim_fault_rate(SIM_FAULT_PART))
		return weft__lwip_refuse(-EINVAL,
					 "WEFT_SIM_FAULTS part=%u: a partition cuts the simulated "
					 "hosts of WEFT_NETIF=loop, and this is %.40s",
					 weft__sim_fault_rate(SIM_FAULT_PART), spec);
	weft__lwip_lock_take();
	if (!core_ready) {
		lwip_init();
		core_ready = true;
	} else {
		/* lwIP's cyclic timers are due at times on the clock of the
		 * runtime that last brought the stack up. A virtual clock starts
		 * again at the real clock's reading at each weft_init, so it may
		 * be far behind them: without a rebase they would not run until
		 * the clock leapt there. */
		sys_restart_timeouts();
	}
	int dns = weft__lwip_dns_up(cfg, spec);
	weft__unlock(&weft__lwip_lock);
	if (dns)
		return dns;
	atomic_store(&stopping, 0);
	int err = loop ? 0 : weft__lwip_dev_open(spec, cfg);
	if (!err)
		err = weft__spawn_service(&timer_fiber, "net-timer", timer_main, NULL);
	if (!err && WEFT__SIM_WIRE)
		err = weft__sim_wire_up(loop);
	if (err) {
		if (WEFT__SIM_WIRE)
			weft__lwip_stop_fiber(&timer_fiber);
		atomic_store(&stopping, 1);
		weft__lwip_dev_close();
	}
	return err;
}

void weft__lwip_down(void)
{
	atomic_store(&stopping, 1);
	weft__lwip_stop_fiber(&timer_fiber);
	if (WEFT__SIM_WIRE)
		weft__sim_wire_down();
	weft__lwip_dev_close();
	weft__lwip_lock_take();
	weft__lwip_dns_down();
	weft__unlock(&weft__lwip_lock);
}

void weft__lwip_stats(weft_net_stats_t *out)
{
	out->frames_in = atomic_load(&frames_in);
	out->frames_out = atomic_load(&frames_out);
	out->frames_dropped = atomic_load(&frames_dropped);
	weft__lwip_mem_stats(out);
}
