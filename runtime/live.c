/* SPDX-License-Identifier: MIT */
/* The count of live fibers that weft_run and weft_shutdown_grace wait on,
 * without a locked instruction per fiber: a spawn on a worker takes from the
 * worker's credit, taken from weft__rt.live LIVE_BATCH at a time; an exit
 * gives to the credit of the worker it ends on; a worker out of work gives
 * all of its credit back. Whoever takes the count to 0 wakes the waiters. */
#include <limits.h>

#include "internal.h"

/* weft_shutdown_grace waits here for the last fiber: a wait list, so its
 * deadline is an ordinary park's (a timer under the virtual clock). */
static weft__lock_t drain_lock = WEFT__LOCK_INIT;
static struct weft__waiter *drain_waiters;

#define LIVE_BATCH 64

/* Take n off live: whoever takes it to 0 wakes weft_run and the drain. */
static void live_sub(int64_t n)
{
	if (atomic_fetch_sub(&weft__rt.live, n) == n) {
		atomic_fetch_add(&weft__rt.live_seq, 1);
		shim_wake(&weft__rt.live_seq, INT_MAX);
		weft__lock(&drain_lock);
		struct weft__waiter *w;
		while ((w = weft__waitq_pop(&drain_waiters)))
			weft__waiter_complete(w, 0);
		weft__unlock(&drain_lock);
	}
}

/* The credit has one writer: the thread that drives its worker. */
static int64_t credit(struct weft__worker *w)
{
	return atomic_load_explicit(&w->live_credit, memory_order_relaxed);
}

static void set_credit(struct weft__worker *w, int64_t c)
{
	atomic_store_explicit(&w->live_credit, c, memory_order_relaxed);
}

void weft__live_inc(struct weft__worker *w)
{
	if (!w) {
		atomic_fetch_add(&weft__rt.live, 1);
		return;
	}
	int64_t c = credit(w);
	if (c == 0) {
		atomic_fetch_add(&weft__rt.live, LIVE_BATCH);
		c = LIVE_BATCH;
	}
	set_credit(w, c - 1);
}

void weft__live_dec(struct weft__worker *w)
{
	int64_t c = credit(w) + 1;
	if (c >= 2 * LIVE_BATCH) {
		set_credit(w, c - LIVE_BATCH);
		live_sub(LIVE_BATCH);
	} else {
		set_credit(w, c);
	}
}

void weft__live_flush(struct weft__worker *w)
{
	int64_t c = credit(w);
	if (c) {
		set_credit(w, 0);
		live_sub(c);
	}
}

int64_t weft__live_count(void)
{
	int64_t n = atomic_load(&weft__rt.live);
	for (unsigned i = 0; i < weft__rt.nworkers; i++)
		n -= credit(&weft__rt.workers[i]);
	return n > 0 ? n : 0;
}

/* weft_shutdown_grace's wait for the count to reach 0 (threaded runtime). */
int weft__live_wait(int64_t deadline)
{
	int r = 0;
	weft__lock(&drain_lock);
	while (r == 0 && atomic_load(&weft__rt.live) != 0) {
		struct weft__waiter w = {0};
		r = weft__waiter_wait_why(&drain_lock, &drain_waiters, &w, deadline, "shutdown");
	}
	weft__unlock(&drain_lock);
	return r;
}
