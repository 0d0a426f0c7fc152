/* SPDX-License-Identifier: MIT */
/* Futures: settle once, wake every waiter. A settled future is read with one
 * acquire load, without the lock and without a switch. */
#include <stdlib.h>

#include "internal.h"

/* A weft_future_t: the core that select, the combinators and a fiber's
 * result share, then what only a future made by weft_future_create has. */
struct heap_future {
	struct weft__future f; /* first: a weft_future_t * points here */
	_Atomic int refs;
	void (*cancel_fn)(void *arg); /* weft_future_on_cancel, until settled */
	void *cancel_arg;
};

void weft__future_init(struct weft__future *f)
{
	f->lock = (weft__lock_t)WEFT__LOCK_INIT;
	atomic_store_explicit(&f->state, FS_PENDING, memory_order_relaxed);
	f->value = NULL;
	f->waiters = NULL;
}

/* Settle a pending future, f's lock held: every waiter that may be
 * completed is (a select's waiter whose select has already been decided is
 * dropped instead). A rejected future keeps its error where a resolved one
 * keeps its value. */
static void settle_locked(struct weft__future *f, int state, void *value, int error)
{
	f->value = state == FS_REJECTED ? (void *)(intptr_t)error : value;
	atomic_store_explicit(&f->state, state, memory_order_release);
	struct weft__waiter *w;
	while ((w = weft__waitq_take(&f->waiters)))
		weft__waiter_complete(w, 0);
}

int weft__future_settle(struct weft__future *f, int state, void *value, int error)
{
	weft__lock(&f->lock);
	if (atomic_load_explicit(&f->state, memory_order_relaxed) != FS_PENDING) {
		weft__unlock(&f->lock);
		return -EALREADY;
	}
	settle_locked(f, state, value, error);
	weft__unlock(&f->lock);
	return 0;
}

int weft__future_outcome(struct weft__future *f, void **value)
{
	if (atomic_load_explicit(&f->state, memory_order_acquire) == FS_REJECTED)
		return (int)(intptr_t)f->value;
	if (value)
		*value = f->value;
	return 0;
}

int weft__future_wait(struct weft__future *f, int64_t deadline, void **value)
{
	return weft__future_wait_why(f, deadline, value, "future");
}

int weft__future_wait_why(struct weft__future *f, int64_t deadline, void **value, const char *why)
{
	if (atomic_load_explicit(&f->state, memory_order_acquire) != FS_PENDING)
		return weft__future_outcome(f, value);
	weft__lock(&f->lock);
	int r = 0;
	if (atomic_load_explicit(&f->state, memory_order_relaxed) == FS_PENDING) {
		struct weft__waiter w;
		r = weft__waiter_wait_own(&f->lock, &f->waiters, &w, deadline, why);
	}
	weft__unlock(&f->lock);
	return r ? r : weft__future_outcome(f, value);
}

int weft_future_create(weft_future_t **out)
{
	if (!out)
		return -EINVAL;
	struct heap_future *h = malloc(sizeof *h);
	if (!h)
		return -ENOMEM;
	weft__future_init(&h->f);
	atomic_store_explicit(&h->refs, 1, memory_order_relaxed);
	h->cancel_fn = NULL;
	h->cancel_arg = NULL;
	*out = (weft_future_t *)h;
	return 0;
}

weft_future_t *weft_future_retain(weft_future_t *pub)
{
	struct heap_future *h = (struct heap_future *)pub;
	if (h)
		atomic_fetch_add_explicit(&h->refs, 1, memory_order_relaxed);
	return pub;
}

int weft_future_release(weft_future_t *pub)
{
	struct heap_future *h = (struct heap_future *)pub;
	if (h && atomic_fetch_sub_explicit(&h->refs, 1, memory_order_acq_rel) == 1)
		free(h);
	return 0;
}

int weft_future_resolve(weft_future_t *pub, void *value)
{
	if (!pub)
		return -EINVAL;
	return weft__future_settle((struct weft__future *)pub, FS_RESOLVED, value, 0);
}

int weft_future_reject(weft_future_t *pub, int error)
{
	if (!pub || error >= 0)
		return -EINVAL;
	return weft__future_settle((struct weft__future *)pub, FS_REJECTED, NULL, error);
}

int weft_future_await(weft_future_t *pub, int64_t deadline, void **value)
{
	if (!pub)
		return -EINVAL;
	struct weft__future *f = (struct weft__future *)pub;
	weft_future_retain(pub);
	int r = weft__future_wait(f, deadline, value);
	weft_future_release(pub);
	return r;
}

int weft_future_on_cancel(weft_future_t *pub, void (*fn)(void *arg), void *arg)
{
	struct heap_future *h = (struct heap_future *)pub;
	if (!h)
		return -EINVAL;
	struct weft__future *f = &h->f;
	weft__lock(&f->lock);
	int r = -EALREADY;
	if (atomic_load_explicit(&f->state, memory_order_relaxed) == FS_PENDING) {
		h->cancel_fn = fn;
		h->cancel_arg = fn ? arg : NULL;
		r = 0;
	}
	weft__unlock(&f->lock);
	return r;
}

int weft_future_cancel(weft_future_t *pub)
{
	struct heap_future *h = (struct heap_future *)pub;
	if (!h)
		return -EINVAL;
	struct weft__future *f = &h->f;
	weft__lock(&f->lock);
	if (atomic_load_explicit(&f->state, memory_order_relaxed) != FS_PENDING) {
		weft__unlock(&f->lock);
		return -EALREADY;
	}
	/* Settled, the hook is never read again. */
	void (*fn)(void *) = h->cancel_fn;
	void *arg = h->cancel_arg;
	settle_locked(f, FS_REJECTED, NULL, -ECANCELED);
	weft__unlock(&f->lock);
	/* Outside the lock: the hook may settle or cancel other futures. The
	 * caller's reference keeps f alive meanwhile. */
	if (fn)
		fn(arg);
	return 0;
}
