/* SPDX-License-Identifier: MIT */
/* Generators: a fiber that runs only while its resumer waits for a value.
 *
 * A lock, a state and two one-place wait lists: the resumer waits on rwait
 * for a value or the end, the generator on gwait to be resumed. The states:
 *   IDLE     the generator waits to be resumed (at its start, or in a yield
 *            whose value has been taken)
 *   RUNNING  resumed: fn runs until its next yield or its end
 *   YIELDED  a value waits for the resumer; the generator waits to be resumed
 *   DONE     fn has ended (the fiber's exit path, weft__gen_exit: a return,
 *            and weft_fiber_exit both end up there)
 * A next that times out leaves the state as it is, so the value yielded
 * meanwhile is the next call's. Close stops a generator that has not ended:
 * one waiting in gwait is woken there with -ECANCELED; one that is running
 * (or has not run yet) is cancelled like any fiber. Either way its status
 * says cancelled, and every later yield returns -ECANCELED. Close then
 * joins the fiber, which also gives its exit status. */
#include <stdlib.h>

#include "internal.h"

enum { GS_IDLE, GS_RUNNING, GS_YIELDED, GS_DONE };

struct weft_gen {
	weft__lock_t lock;
	int state; /* GS_* */
	int busy;  /* a next or a close is in progress */
	int closed;
	void *value;                /* YIELDED: the value; DONE: the result */
	struct weft__waiter *rwait; /* the resumer, in next */
	struct weft__waiter *gwait; /* the generator, waiting to be resumed */
	weft_fiber_t fiber;         /* held until close joins it */
	weft_fn fn;
	void *arg;
};

/* A yield (or the start) that finds the generator closed is where its fiber
 * sees the close: a cancellation request pending then is delivered by it,
 * not by the next call that would block (requests merge, as elsewhere). */
static int closed_result(struct weft__fiber *self)
{
	/* Its status says cancelled: marked here, where the generator learns
	 * of the close, so it holds however the close reached it (woken in
	 * gwait, or seeing the flag before the closer's weft_fiber_cancel). */
	atomic_fetch_or(&self->life, FL_CANCELLED);
	uint64_t pw = atomic_load_explicit(&self->park, memory_order_acquire);
	while (PW_DELIVERABLE(pw) &&
	       !atomic_compare_exchange_weak_explicit(&self->park, &pw, pw & ~PW_CANCEL,
						      memory_order_acq_rel, memory_order_acquire))
		;
	return -ECANCELED;
}

/* The generator's side, g locked: wait until a next resumes it. 0, or
 * -ECANCELED (closed, or its fiber cancelled). */
static int wait_resume(struct weft_gen *g, struct weft__fiber *self)
{
	while (g->state != GS_RUNNING) {
		if (g->closed)
			return closed_result(self);
		struct weft__waiter w;
		int r = weft__waiter_wait_own(&g->lock, &g->gwait, &w, -1, "generator");
		if (r)
			return g->closed ? closed_result(self) : r;
	}
	return g->closed ? closed_result(self) : 0;
}

static void *gen_main(void *arg)
{
	struct weft_gen *g = arg;
	struct weft__fiber *self = weft__self();
	weft__cold(self)->gen = g; /* made at the spawn (weft__spawn_cold) */
	weft__lock(&g->lock);
	int r = wait_resume(g, self);
	weft__unlock(&g->lock);
	return r ? NULL : g->fn(g->arg);
}

void weft__gen_exit(struct weft__fiber *self, void *result)
{
	struct weft__fiber_cold *c = weft__cold(self);
	struct weft_gen *g = c ? c->gen : NULL;
	if (!g)
		return;
	c->gen = NULL;
	weft__lock(&g->lock);
	g->state = GS_DONE;
	g->value = result;
	struct weft__waiter *w = weft__waitq_take(&g->rwait);
	if (w)
		weft__waiter_complete(w, 0);
	weft__unlock(&g->lock);
}

int weft_gen_create_site(weft_gen_t **out, const weft_attr_t *attr, weft_fn fn, void *arg,
			 const char *file, int line)
{
	if (!out || !fn)
		return -EINVAL;
	struct weft_gen *g = calloc(1, sizeof *g);
	if (!g)
		return -ENOMEM;
	g->lock = (weft__lock_t)WEFT__LOCK_INIT;
	g->state = GS_IDLE;
	g->fn = fn;
	g->arg = arg;
	int r = weft__spawn_cold(&g->fiber, attr, gen_main, g, file, line);
	if (r) {
		free(g);
		return r;
	}
	*out = g;
	return 0;
}

int weft_gen_next(weft_gen_t *g, int64_t deadline, void **value)
{
	if (!g)
		return -EINVAL;
	if (weft_fiber_self() == g->fiber)
		return -EDEADLK;
	weft__lock(&g->lock);
	if (g->busy) {
		weft__unlock(&g->lock);
		return -EBUSY;
	}
	g->busy = 1;
	int r;
	void *v = NULL;
	for (;;) {
		if (g->state == GS_YIELDED) {
			v = g->value;
			g->state = GS_IDLE;
			r = 0;
			break;
		}
		if (g->state == GS_DONE) {
			v = g->value;
			r = -EPIPE; /* the end of the stream, as a channel's */
			break;
		}
		if (g->state == GS_IDLE) {
			g->state = GS_RUNNING;
			struct weft__waiter *gw = weft__waitq_take(&g->gwait);
			if (gw)
				weft__waiter_complete(gw, 0);
		}
		struct weft__waiter w;
		r = weft__waiter_wait_own(&g->lock, &g->rwait, &w, deadline, "generator");
		if (r)
			break;
	}
	g->busy = 0;
	weft__unlock(&g->lock);
	if ((r == 0 || r == -EPIPE) && value)
		*value = v;
	return r;
}

int weft_gen_yield(void *value)
{
	struct weft__worker *wk = weft__worker_self();
	struct weft__fiber *self = wk ? wk->cur : NULL;
	struct weft__fiber_cold *c = self ? weft__cold(self) : NULL;
	struct weft_gen *g = c ? c->gen : NULL;
	if (!g)
		return -EPERM;
	weft__lock(&g->lock);
	/* Normally RUNNING here; not after a yield that a cancellation cut
	 * short: then its value must be taken and the generator resumed
	 * before this one is handed over. */
	int r = g->state == GS_RUNNING ? 0 : wait_resume(g, self);
	if (r == 0 && g->closed)
		r = closed_result(self);
	if (r == 0) {
		g->value = value;
		g->state = GS_YIELDED;
		struct weft__waiter *w = weft__waitq_take(&g->rwait);
		if (w)
			weft__waiter_complete(w, 0);
		r = wait_resume(g, self);
	}
	weft__unlock(&g->lock);
	return r;
}

int weft_gen_destroy(weft_gen_t *g, int64_t deadline, int *status)
{
	if (!g)
		return 0;
	if (weft_fiber_self() == g->fiber)
		return -EDEADLK;
	weft__lock(&g->lock);
	if (g->busy) {
		weft__unlock(&g->lock);
		return -EBUSY;
	}
	bool cancel = false;
	if (!g->closed && g->state != GS_DONE) {
		g->closed = 1;
		struct weft__waiter *w = weft__waitq_take(&g->gwait);
		if (w) {
			/* Parked waiting to be resumed, perhaps holding
			 * cancellation off: woken here directly. */
			weft__waiter_complete(w, -ECANCELED);
		} else {
			cancel = true;
		}
	}
	g->busy = 1; /* no next while the join below waits */
	weft__unlock(&g->lock);
	if (cancel)
		(void)weft_fiber_cancel(g->fiber); /* -EALREADY: it has just ended */
	int st;
	int r = weft_fiber_join(g->fiber, deadline, NULL, &st);
	if (r) {
		weft__lock(&g->lock);
		g->busy = 0;
		weft__unlock(&g->lock);
		return r;
	}
	free(g);
	if (status)
		*status = st;
	return 0;
}
