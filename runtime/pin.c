/* SPDX-License-Identifier: MIT */
/* Pinned fibers (weft_fiber_pin, WEFT_ATTR_PIN). A pinned fiber is never in
 * a deque, a next-run slot that thieves look at, or the global queue: its
 * own worker keeps it on a private list (the scheduler, sched.c, takes it
 * from there: weft__take_pinned), and other threads that make it runnable
 * put it in that worker's inbox and wake the worker if it sleeps. */
#include "internal.h"

static void pinned_push(struct weft__worker *w, struct weft__fiber *f)
{
	int c = weft__fiber_class(f);
	f->next = NULL;
	if (w->pinned_tail[c])
		w->pinned_tail[c]->next = f;
	else
		w->pinned[c] = f;
	w->pinned_tail[c] = f;
}

/* From a thread other than t's: into t's inbox, and wake t if it sleeps. */
static void inbox_push(struct weft__worker *t, struct weft__fiber *f)
{
	f->next = NULL;
	weft__lock(&t->inbox_lock);
	if (t->inbox_tail)
		t->inbox_tail->next = f;
	else
		t->inbox = f;
	t->inbox_tail = f;
	atomic_store_explicit(&t->inbox_len,
			      atomic_load_explicit(&t->inbox_len, memory_order_relaxed) + 1,
			      memory_order_release);
	weft__unlock(&t->inbox_lock);
	SIM_POINT_UNHELD(weft__tls_worker, SIM_INBOX_PUSH);
	weft__wake_if_asleep(t);
}

void weft__inbox_drain(struct weft__worker *w)
{
	weft__lock(&w->inbox_lock);
	struct weft__fiber *f = w->inbox;
	w->inbox = w->inbox_tail = NULL;
	atomic_store_explicit(&w->inbox_len, 0, memory_order_relaxed);
	weft__unlock(&w->inbox_lock);
	while (f) {
		struct weft__fiber *next = f->next;
		pinned_push(w, f);
		f = next;
	}
}

void weft__pinned_ready(struct weft__worker *w, struct weft__worker *t, struct weft__fiber *f)
{
	if (w == t)
		pinned_push(w, f);
	else
		inbox_push(t, f);
}

int weft_fiber_pin(int worker)
{
	struct weft__worker *w = weft__worker_self();
	if (!w || !w->cur)
		return -EPERM;
	if (worker < -1 || worker >= (int)weft__rt.nworkers)
		return -EINVAL;
	struct weft__fiber *self = w->cur;
	if (worker == -1)
		worker = w->index;
	weft__fiber_set_pin(self, (uint32_t)worker + 1);
	if (worker != w->index)
		weft__switch_out(self, ACT_MOVE);
	return 0;
}

int weft_fiber_unpin(void)
{
	struct weft__worker *w = weft__worker_self();
	if (!w || !w->cur)
		return -EPERM;
	weft__fiber_set_pin(w->cur, 0);
	return 0;
}
