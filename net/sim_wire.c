/* SPDX-License-Identifier: MIT */
/* The simulated wire (docs/decisions/simulation.md, "Slice 5, as built"),
 * in libweft-sim.a only: the Makefile leaves this file out of libweft.a,
 * as it leaves runtime/sim.c, and lwip_port.c reaches it only behind
 * WEFT__SIM_WIRE (seam/sim_fault.h), 0 there.
 *
 * Under a seed with drop=, dup= or delay= set (WEFT_SIM_FAULTS), every
 * frame lwIP's loopback queues (the loop netif's 127.0.0.1, and a packet an
 * interface sends to its own address) comes here instead of netif_poll:
 *
 * - drop: the frame is freed (lwIP's timers retransmit it);
 * - dup: a copy goes on beside it, each then on its own;
 * - delay: the frame is held 1 to 20 ms (drawn, in microseconds) and the
 *   frames after it go on: with a jitter, that is a reorder.
 *
 * - part: a frame between two simulated hosts (below) draws whether a
 *   partition starts now; if so, a pair of hosts (drawn) is cut for a
 *   drawn time, 10 ms to 90 s of virtual time, after which it heals; while
 *   a pair is cut, no draw (one partition at a time). A frame between the
 *   two hosts of a cut pair, either way, is freed.
 *
 * Each is a draw of its own stream (runtime/sim_fault.c), one per frame in
 * that order (part first, and a frame it cuts draws nothing else); a frame not held is delivered at once, as netif_poll would.
 * A held frame is delivered by the wire fiber (started only with delay=), a
 * service fiber that waits
 * under the lwIP lock with the earliest delivery as its deadline, so the
 * virtual clock reaches it as it reaches any timer; holding an earlier
 * one wakes it. Held frames that are due at the same instant go in the
 * order they were held. */
#include "lwip.h"
#include "sim_fault.h"

#include "lwip/ip.h"
#include "lwip/ip4_addr.h"
#include "lwip/netif.h"
#include "lwip/pbuf.h"
#include "lwip/prot/ip4.h"

/* ---- The simulated hosts ---------------------------------------------------
 * libweft-sim.a's weft_net_init with the loop netif adds SIM_HOSTS hosts,
 * numbered 1 to SIM_HOSTS, to the one lwIP stack, joined pairwise by
 * point-to-point links: host x's end of its link to host y is a netif of
 * its own, address 10.77.x.y/32, its peer (lwIP's gateway field) 10.77.y.x,
 * no broadcast, no ARP. lwIP routes by destination (ip4_route): the first
 * netif on its list whose address matches, else the first point-to-point
 * one whose peer is the destination; netif_add puts a netif first. The
 * ends x -> y with x < y are added last, so a connection to 10.77.y.x
 * (host y's end) with x < y leaves through host x's end, from 10.77.x.y:
 * host x dials host y. (From y to x, with x < y, lwIP finds host x's end
 * itself first, an address of its own, and loops the connection on host
 * x: a host dials only hosts numbered above it.) An end's output puts the
 * frame on its peer end's loopback queue, as netif_loop_output does for a
 * frame to one's own address, so every frame between hosts passes
 * weft__lwip_flush and the wire, and the wire tells the hosts apart by
 * the frame's source and destination addresses. */
#define SIM_HOSTS 4
#define PAIRS (SIM_HOSTS * (SIM_HOSTS - 1) / 2)
#define CUT_MIN_NS (10LL * 1000000)
#define CUT_SPAN_MS 89991 /* 10 ms to 90 s */

static struct netif host_end[SIM_HOSTS][SIM_HOSTS]; /* [x-1][y-1]: x's end to y */
static bool hosts_up;

/* The host (1 to SIM_HOSTS) whose end a is (network order), else 0; the
 * other end's host in *peer. */
static int host_of(uint32_t a, int *peer)
{
	uint32_t h = lwip_ntohl(a);
	int x = (int)(h >> 8 & 0xff), y = (int)(h & 0xff);
	if ((h >> 16) != (10u << 8 | 77) || x < 1 || x > SIM_HOSTS || y < 1 || y > SIM_HOSTS ||
	    x == y)
		return 0;
	if (peer)
		*peer = y;
	return x;
}

static err_t end_output(struct netif *n, struct pbuf *p, const ip4_addr_t *dest)
{
	(void)n;
	int y, x = host_of(ip4_addr_get_u32(dest), &y);
	if (!x)
		return ERR_RTE;
	return netif_loop_output(&host_end[x - 1][y - 1], p);
}

static err_t end_init(struct netif *n)
{
	n->name[0] = 's';
	n->name[1] = 'h';
	n->output = end_output;
	n->mtu = 1500;
	n->flags = 0; /* point-to-point: no broadcast, no ARP */
	return ERR_OK;
}

static void end_add(int x, int y)
{
	ip4_addr_t a, m, g;
	IP4_ADDR(&a, 10, 77, x, y);
	IP4_ADDR(&m, 255, 255, 255, 255);
	IP4_ADDR(&g, 10, 77, y, x);
	struct netif *n = &host_end[x - 1][y - 1];
	if (netif_add(n, &a, &m, &g, NULL, end_init, ip_input)) {
		netif_set_up(n);
		netif_set_link_up(n);
	}
}

/* Under the lwIP lock. */
static void hosts_add(void)
{
	/* The ends toward lower hosts first: they end up after the others on
	 * lwIP's list (see above). */
	for (int x = 1; x <= SIM_HOSTS; x++)
		for (int y = 1; y < x; y++)
			end_add(x, y);
	for (int x = 1; x <= SIM_HOSTS; x++)
		for (int y = x + 1; y <= SIM_HOSTS; y++)
			end_add(x, y);
	hosts_up = true;
}

static void hosts_remove(void)
{
	if (!hosts_up)
		return;
	for (int x = 0; x < SIM_HOSTS; x++)
		for (int y = 0; y < SIM_HOSTS; y++)
			if (x != y)
				netif_remove(&host_end[x][y]);
	hosts_up = false;
}

/* ---- Partitions ---------------------------------------------------------- */

static struct pair {
	int64_t until; /* cut while weft__now() is before it */
	uint64_t cuts; /* partitions of this pair started, ever */
} pairs[PAIRS];

/* Pair {a, b} (a != b, 1 to SIM_HOSTS) by its place among them. */
static struct pair *pair_of(int a, int b)
{
	if (a > b) {
		int t = a;
		a = b;
		b = t;
	}
	return &pairs[(a - 1) * (2 * SIM_HOSTS - a) / 2 + (b - a - 1)];
}

/* Whether frame p, from one host to another, is cut: first the draw of
 * whether a partition starts now. */
static bool cut(struct pbuf *p)
{
	struct ip_hdr h;
	if (pbuf_copy_partial(p, &h, sizeof h, 0) != sizeof h || IPH_V(&h) != 4)
		return false;
	int a = host_of(h.src.addr, NULL), b = host_of(h.dest.addr, NULL);
	if (!a || !b || a == b)
		return false;
	int64_t now = weft__now();
	/* One partition at a time: a draw only while every pair is whole. */
	bool whole = true;
	for (int i = 0; i < PAIRS && whole; i++)
		whole = now >= pairs[i].until;
	if (whole && weft__sim_fault_fire(SIM_FAULT_PART)) {
		struct pair *c = &pairs[weft__sim_fault_value(SIM_FAULT_PART, PAIRS)];
		int64_t until =
			now + CUT_MIN_NS +
			(int64_t)weft__sim_fault_value(SIM_FAULT_PART, CUT_SPAN_MS) * 1000000;
		c->until = until;
		c->cuts++;
	}
	if (now >= pair_of(a, b)->until)
		return false;
	weft__sim_fault_note(SIM_FAULT_PART);
	return true;
}

uint64_t weft__sim_wire_cuts(uint32_t a, uint32_t b, bool *now)
{
	int x = host_of(a, NULL), y = host_of(b, NULL);
	*now = false;
	if (!x || !y || x == y)
		return 0;
	weft__lwip_lock_take();
	struct pair *c = pair_of(x, y);
	uint64_t n = c->cuts;
	*now = weft__now() < c->until;
	weft__unlock(&weft__lwip_lock);
	return n;
}

/* Frames held at once, at most: beyond, a delayed frame goes at once
 * (TCP's window keeps far fewer in flight on the loopback). */
#define HELD_MAX 1024
#define DELAY_MIN_US 1000
#define DELAY_SPAN_US 19001 /* 1 ms to 20 ms */

static struct {
	bool up;                /* the wire fiber runs: frames come here */
	struct weft__waiter *q; /* the wire fiber while it waits */
	int64_t wake_at;        /* its deadline then (-1: none) */
	unsigned n;
	uint64_t seq; /* frames held, ever: the order among equal times */
	struct held {
		int64_t at;
		uint64_t seq;
		u8_t if_idx;
		struct pbuf *p;
	} held[HELD_MAX];
} wire;
static weft_fiber_t wire_fiber;

static void deliver(struct netif *n, struct pbuf *p)
{
	p->if_idx = netif_get_index(n);
	if (ip_input(p, n) != ERR_OK)
		pbuf_free(p);
}

/* The next frame due, or -1. */
static int next_held(void)
{
	int best = -1;
	for (unsigned i = 0; i < wire.n; i++)
		if (best < 0 || wire.held[i].at < wire.held[best].at ||
		    (wire.held[i].at == wire.held[best].at &&
		     wire.held[i].seq < wire.held[best].seq))
			best = (int)i;
	return best;
}

/* One copy of a frame on its way: held, or delivered now. */
static void send(struct netif *n, struct pbuf *p)
{
	if (weft__sim_fault_fire(SIM_FAULT_DELAY) && wire.n < HELD_MAX) {
		int64_t at = weft__now() +
			     (int64_t)(DELAY_MIN_US +
				       weft__sim_fault_value(SIM_FAULT_DELAY, DELAY_SPAN_US)) *
				     1000;
		wire.held[wire.n++] = (struct held){
			.at = at, .seq = wire.seq++, .if_idx = netif_get_index(n), .p = p};
		if (wire.q && (wire.wake_at < 0 || at < wire.wake_at))
			weft__waiter_complete(weft__waitq_pop(&wire.q), 0);
		return;
	}
	deliver(n, p);
}

bool weft__sim_wire_take(struct netif *n)
{
	if (!wire.up)
		return false;
	/* The loopback queue, frame by frame, as netif_poll takes it (a
	 * frame's last pbuf has len == tot_len). */
	while (n->loop_first) {
		struct pbuf *p = n->loop_first, *end = p;
		while (end->len != end->tot_len)
			end = end->next;
		if (end == n->loop_last)
			n->loop_first = n->loop_last = NULL;
		else
			n->loop_first = end->next;
		end->next = NULL;
		if (weft__sim_fault_rate(SIM_FAULT_PART) && cut(p)) {
			pbuf_free(p);
			continue;
		}
		if (weft__sim_fault_fire(SIM_FAULT_DROP)) {
			pbuf_free(p);
			continue;
		}
		if (weft__sim_fault_fire(SIM_FAULT_DUP)) {
			struct pbuf *c = pbuf_clone(PBUF_LINK, PBUF_RAM, p);
			if (c)
				send(n, c);
		}
		send(n, p);
	}
	return true;
}

static void *wire_main(void *arg)
{
	(void)arg;
	weft__lwip_lock_take();
	while (!weft__lwip_stopping()) {
		int i;
		while ((i = next_held()) >= 0 && wire.held[i].at <= weft__now()) {
			struct held h = wire.held[i];
			wire.held[i] = wire.held[--wire.n];
			struct netif *n = netif_get_by_index(h.if_idx);
			if (n)
				deliver(n, h.p);
			else
				pbuf_free(h.p);
			/* What it caused (an ACK, the next segments). */
			weft__lwip_flush();
		}
		wire.wake_at = i >= 0 ? wire.held[i].at : -1;
		struct weft__waiter w;
		weft__waiter_wait(&weft__lwip_lock, &wire.q, &w, wire.wake_at);
	}
	weft__unlock(&weft__lwip_lock);
	return NULL;
}

int weft__sim_wire_up(bool loop)
{
	unsigned delay = weft__sim_fault_rate(SIM_FAULT_DELAY);
	bool part = weft__sim_fault_rate(SIM_FAULT_PART) != 0;
	weft__lwip_lock_take();
	if (loop)
		hosts_add();
	for (int i = 0; i < PAIRS; i++)
		pairs[i] = (struct pair){.until = 0, .cuts = 0};
	weft__unlock(&weft__lwip_lock);
	if (!weft__sim_fault_rate(SIM_FAULT_DROP) && !weft__sim_fault_rate(SIM_FAULT_DUP) &&
	    !delay && !part)
		return 0;
	weft__lwip_lock_take();
	wire.n = 0;
	wire.seq = 0;
	wire.q = NULL;
	wire.up = true;
	weft__unlock(&weft__lwip_lock);
	/* Only a delay holds frames: without one, no fiber (and a drop=,
	 * dup= or part= that never fires leaves the schedule as it was). */
	int err = delay ? weft__spawn_service(&wire_fiber, "net-wire", wire_main, NULL) : 0;
	if (err) {
		weft__lwip_lock_take();
		wire.up = false;
		weft__unlock(&weft__lwip_lock);
	}
	return err;
}

void weft__sim_wire_down(void)
{
	weft__lwip_stop_fiber(&wire_fiber);
	weft__lwip_lock_take();
	wire.up = false;
	for (unsigned i = 0; i < wire.n; i++)
		pbuf_free(wire.held[i].p);
	wire.n = 0;
	hosts_remove();
	weft__unlock(&weft__lwip_lock);
}
