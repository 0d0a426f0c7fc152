/* SPDX-License-Identifier: MIT */
/* Mutex and condition variable for fibers and plain threads. A caller that
 * must wait queues on the object's wait list and parks (weft__waiter_wait),
 * so a worker thread is never blocked. Unlock hands the mutex straight to the
 * oldest waiter instead of letting whoever runs next barge in: waiters are
 * served in order and none starves. The owner is the calling fiber (or plain
 * thread), told apart by its record and its id, which is never reused, so a
 * fiber that reuses a finished one's record does not inherit its locks. */
#include <stdlib.h>

#include "internal.h"

struct weft_mutex {
	weft__lock_t lock;
	struct weft__fiber *owner; /* NULL: unlocked */
	weft_fiber_t owner_handle; /* the record may be reused by another fiber */
	struct weft__waiter *waiters;
};

struct weft_cond {
	weft__lock_t lock;
	struct weft__waiter *waiters;
};

static bool owns(const struct weft_mutex *m, const struct weft__fiber *f)
{
	return m->owner == f && m->owner_handle == f->handle;
}

static void set_owner(struct weft_mutex *m, struct weft__fiber *f)
{
	m->owner = f;
	m->owner_handle = f ? f->handle : 0;
}

int weft_mutex_create(weft_mutex_t **out)
{
	if (!out)
		return -EINVAL;
	struct weft_mutex *m = calloc(1, sizeof *m);
	if (!m)
		return -ENOMEM;
	*out = m;
	return 0;
}

int weft_mutex_destroy(weft_mutex_t *m)
{
	if (!m)
		return 0;
	weft__lock(&m->lock);
	bool busy = m->owner || m->waiters;
	weft__unlock(&m->lock);
	if (busy)
		return -EBUSY;
	free(m);
	return 0;
}

int weft_mutex_lock(weft_mutex_t *m, int64_t deadline)
{
	if (!m)
		return -EINVAL;
	struct weft__fiber *self = weft__self();
	weft__lock(&m->lock);
	int r = 0;
	if (!m->owner) {
		set_owner(m, self);
	} else if (owns(m, self)) {
		r = -EDEADLK;
	} else {
		/* The unlocker makes us the owner before completing us. */
		struct weft__waiter w = {0};
		r = weft__waiter_wait_own(&m->lock, &m->waiters, &w, deadline, "mutex");
	}
	weft__unlock(&m->lock);
	return r;
}

static int unlock_as(struct weft_mutex *m, struct weft__fiber *self)
{
	weft__lock(&m->lock);
	int r = 0;
	if (!owns(m, self)) {
		r = -EPERM;
	} else {
		struct weft__waiter *w = weft__waitq_take(&m->waiters);
		set_owner(m, w ? w->f : NULL);
		if (w)
			weft__waiter_complete(w, 0);
	}
	weft__unlock(&m->lock);
	return r;
}

int weft_mutex_unlock(weft_mutex_t *m)
{
	if (!m)
		return -EINVAL;
	return unlock_as(m, weft__self());
}

/* ---- Condition variable ------------------------------------------------- */

int weft_cond_create(weft_cond_t **out)
{
	if (!out)
		return -EINVAL;
	struct weft_cond *c = calloc(1, sizeof *c);
	if (!c)
		return -ENOMEM;
	*out = c;
	return 0;
}

int weft_cond_destroy(weft_cond_t *c)
{
	if (!c)
		return 0;
	weft__lock(&c->lock);
	bool busy = c->waiters != NULL;
	weft__unlock(&c->lock);
	if (busy)
		return -EBUSY;
	free(c);
	return 0;
}

int weft_cond_wait(weft_cond_t *c, weft_mutex_t *m, int64_t deadline)
{
	if (!c || !m)
		return -EINVAL;
	struct weft__fiber *self = weft__self();
	weft__lock(&m->lock);
	bool held = owns(m, self);
	weft__unlock(&m->lock);
	if (!held)
		return -EPERM;

	/* Queue on c before letting go of m: a signal sent by whoever takes m
	 * next finds us. As weft__waiter_wait, with m released in between. */
	struct weft__waiter w = {.f = self};
	weft__lock(&c->lock);
	w.gen = weft__park_begin_why(self, "cond");
	weft__waitq_push(&c->waiters, &w);
	weft__unlock(&c->lock);
	unlock_as(m, self);
	int r = weft__park_end(self, deadline);
	weft__lock(&c->lock);
	if (w.done) {
		if (r == -ECANCELED)
			weft__cancel_repend(self); /* signalled first: that stands */
		r = 0;
	} else {
		weft__waitq_remove(&c->waiters, &w);
		if (r == 0)
			r = -EINTR; /* a plain wake without a signal cannot happen */
	}
	weft__unlock(&c->lock);

	/* Take m back whatever happened; a cancellation arriving meanwhile is
	 * kept for the next suspension point instead of leaving m unheld. */
	bool cancelled = false;
	int lr;
	while ((lr = weft_mutex_lock(m, -1)) == -ECANCELED)
		cancelled = true;
	if (cancelled)
		weft__cancel_repend(self);
	return lr ? lr : r;
}

static int wake(weft_cond_t *c, bool all)
{
	if (!c)
		return -EINVAL;
	weft__lock(&c->lock);
	struct weft__waiter *w;
	while ((w = weft__waitq_take(&c->waiters))) {
		weft__waiter_complete(w, 0);
		if (!all)
			break;
	}
	weft__unlock(&c->lock);
	return 0;
}

int weft_cond_signal(weft_cond_t *c) { return wake(c, false); }

int weft_cond_broadcast(weft_cond_t *c) { return wake(c, true); }
