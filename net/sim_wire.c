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
 * Each is a draw of its own stream (runtime/sim_fault.c), one per frame in
 * that order; a frame not held is delivered at once, as netif_poll would.
 * A held frame is delivered by the wire fiber (started only with delay=), a
 * service fiber that waits
 * under the lwIP lock with the earliest delivery as its deadline, so the
 * virtual clock reaches it as it reaches any timer; holding an earlier
 * one wakes it. Held frames that are due at the same instant go in the
 * order they were held. */
#include "lwip.h"
#include "sim_fault.h"

#include "lwip/ip.h"
#include "lwip/netif.h"
#include "lwip/pbuf.h"

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

int weft__sim_wire_up(void)
{
	unsigned delay = weft__sim_fault_rate(SIM_FAULT_DELAY);
	if (!weft__sim_fault_rate(SIM_FAULT_DROP) && !weft__sim_fault_rate(SIM_FAULT_DUP) && !delay)
		return 0;
	weft__lwip_lock_take();
	wire.n = 0;
	wire.seq = 0;
	wire.q = NULL;
	wire.up = true;
	weft__unlock(&weft__lwip_lock);
	/* Only a delay holds frames: without one, no fiber (and a drop= or
	 * dup= that never fires leaves the schedule as it was). */
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
	weft__unlock(&weft__lwip_lock);
}
