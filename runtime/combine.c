/* SPDX-License-Identifier: MIT */
/* Combinators: all, all-settled, any and race over an array of futures.
 *
 * The caller queues one waiter on each pending future, all carrying the same
 * park generation, and parks once: the first settlement wakes it and any
 * others in the same instant are dropped by the park word, so it is woken
 * once however many settle together. Each settlement also marks its waiter
 * done under that future's lock. After a wake the caller looks at the
 * futures; if the outcome is still open it starts a new park and moves the
 * waiters still queued to the new generation, each under its future's lock:
 * a settlement before the move is seen as done, one after it wakes the new
 * park. One future's lock is held at a time. */
#include <stdlib.h>

#include "internal.h"

enum { ALL, ALL_SETTLED, ANY, RACE };

#define STACK_WAITERS 8

struct multi {
	struct weft__future *const *fs;
	size_t n;
	int kind;
	size_t index; /* decided: the future that decided it */
};

static int state_of(struct weft__future *f)
{
	return atomic_load_explicit(&f->state, memory_order_acquire);
}

/* Is the outcome decided? Settlement is one-way, so an answer of yes stays
 * true; index names the future that decides it (lowest first). */
static bool decided(struct multi *m)
{
	size_t rejected = 0;
	bool pending = false;
	for (size_t i = 0; i < m->n; i++) {
		int st = state_of(m->fs[i]);
		switch (m->kind) {
		case ALL:
			if (st == FS_REJECTED) {
				m->index = i;
				return true;
			}
			break;
		case ANY:
			if (st == FS_RESOLVED) {
				m->index = i;
				return true;
			}
			rejected += st == FS_REJECTED;
			break;
		case RACE:
			if (st != FS_PENDING) {
				m->index = i;
				return true;
			}
			break;
		}
		pending |= st == FS_PENDING;
	}
	switch (m->kind) {
	case ANY:
		m->index = 0;
		return rejected == m->n;
	case RACE:
		return false;
	default: /* ALL with none rejected, ALL_SETTLED */
		return !pending;
	}
}

/* Leave a park that has begun without sleeping. A cancellation it would
 * deliver stays pending: the caller is not waiting. */
static void park_abandon(struct weft__fiber *self)
{
	if (weft__park_end(self, 0) == -ECANCELED)
		weft__cancel_repend(self);
}

/* Wait until m is decided: 0, -ETIMEDOUT, -ECANCELED, -ENOMEM. */
static int wait_decided(struct multi *m, int64_t deadline)
{
	if (decided(m))
		return 0; /* no park, no switch */
	struct weft__fiber *self = weft__self();
	if (weft__deadline_norm(deadline) == 0) {
		/* Trying once: deliver a pending cancellation as a blocking call
		 * that cannot complete at once does, without queueing. */
		weft__park_begin_why(self, "combinator");
		return weft__park_end(self, 0);
	}
	struct weft__waiter stack_ws[STACK_WAITERS];
	struct weft__waiter *ws = stack_ws;
	if (m->n > STACK_WAITERS && !(ws = calloc(m->n, sizeof *ws)))
		return -ENOMEM;
	for (size_t i = 0; i < m->n; i++)
		ws[i] = (struct weft__waiter){.f = self};

	int r;
	for (;;) {
		/* (Re)arm: queue a waiter on every future still pending, or move
		 * the queued ones to this park's generation. */
		uint32_t gen = weft__park_begin_why(self, "combinator");
		for (size_t i = 0; i < m->n; i++) {
			struct weft__future *f = m->fs[i];
			struct weft__waiter *w = &ws[i];
			weft__lock(&f->lock);
			if (!w->done) { /* done: settled, and off the list */
				w->gen = gen;
				if (!w->next &&
				    atomic_load_explicit(&f->state, memory_order_relaxed) ==
					    FS_PENDING)
					weft__waitq_push(&f->waiters, w);
			}
			weft__unlock(&f->lock);
		}
		if (decided(m)) {
			park_abandon(self);
			r = 0;
			break;
		}
		r = weft__park_end(self, deadline);
		if (decided(m)) {
			/* Decided, whatever else woke us: that outcome stands. */
			if (r == -ECANCELED)
				weft__cancel_repend(self);
			r = 0;
			break;
		}
		if (r != 0)
			break; /* -ETIMEDOUT, -ECANCELED */
	}

	/* Take every waiter no settlement has taken off its list. */
	for (size_t i = 0; i < m->n; i++) {
		struct weft__future *f = m->fs[i];
		weft__lock(&f->lock);
		if (ws[i].next)
			weft__waitq_remove(&f->waiters, &ws[i]);
		weft__unlock(&f->lock);
	}
	if (ws != stack_ws)
		free(ws);
	return r;
}

static int run(weft_future_t *const *pub, size_t n, int64_t deadline, int kind, size_t *index)
{
	if (n && !pub)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (!pub[i])
			return -EINVAL;
	if (n == 0 && (kind == ANY || kind == RACE))
		return -EINVAL;
	struct multi m = {(struct weft__future *const *)pub, n, kind, 0};
	for (size_t i = 0; i < n; i++)
		weft_future_retain(pub[i]);
	int r = wait_decided(&m, deadline);
	if (r == 0)
		*index = m.index;
	return r;
}

static void release_all(weft_future_t *const *fs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		weft_future_release(fs[i]);
}

int weft_future_all(weft_future_t *const *fs, size_t n, int64_t deadline, void **values,
		    size_t *failed)
{
	size_t at = 0;
	int r = run(fs, n, deadline, ALL, &at);
	if (r == -EINVAL)
		return r;
	if (r == 0 && n) {
		struct weft__future *f = (struct weft__future *)fs[at];
		if (state_of(f) == FS_REJECTED) {
			r = weft__future_outcome(f, NULL);
			if (failed)
				*failed = at;
		} else if (values) {
			for (size_t i = 0; i < n; i++)
				weft__future_outcome((struct weft__future *)fs[i], &values[i]);
		}
	}
	release_all(fs, n);
	return r;
}

int weft_future_all_settled(weft_future_t *const *fs, size_t n, int64_t deadline, void **values,
			    int *errors)
{
	size_t at = 0;
	int r = run(fs, n, deadline, ALL_SETTLED, &at);
	if (r == -EINVAL)
		return r;
	for (size_t i = 0; r == 0 && i < n; i++) {
		void *v = NULL;
		int e = weft__future_outcome((struct weft__future *)fs[i], &v);
		if (values)
			values[i] = v;
		if (errors)
			errors[i] = e;
	}
	release_all(fs, n);
	return r;
}

int weft_future_any(weft_future_t *const *fs, size_t n, int64_t deadline, size_t *index,
		    void **value)
{
	size_t at = 0;
	int r = run(fs, n, deadline, ANY, &at);
	if (r == -EINVAL)
		return r;
	if (r == 0) {
		/* Resolved: that one's value. Every one rejected: fs[0]'s error. */
		r = weft__future_outcome((struct weft__future *)fs[at], value);
		if (r == 0 && index)
			*index = at;
	}
	release_all(fs, n);
	return r;
}

int weft_future_race(weft_future_t *const *fs, size_t n, int64_t deadline, size_t *index,
		     void **value)
{
	size_t at = 0;
	int r = run(fs, n, deadline, RACE, &at);
	if (r == -EINVAL)
		return r;
	if (r == 0) {
		r = weft__future_outcome((struct weft__future *)fs[at], value);
		if (index)
			*index = at;
		/* The losers: whoever computes them is told to stop (their
		 * cancel hooks); the winner's time is not spent waiting for them. */
		for (size_t i = 0; i < n; i++)
			if (fs[i] != fs[at])
				weft_future_cancel(fs[i]);
	}
	release_all(fs, n);
	return r;
}
