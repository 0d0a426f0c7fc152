/* SPDX-License-Identifier: MIT */
/* Wait lists: how futures and channels queue parked callers under their own
 * lock, and the one place that settles "completed" against "timed out or
 * cancelled". A waker completes a waiter and unparks it while holding the
 * primitive's lock; the waiter re-takes that lock before looking, so neither
 * side can see the other half-done, and the waiter's memory (on its stack)
 * outlives every access to it. */
#include "internal.h"

void weft__waitq_push(struct weft__waiter **head, struct weft__waiter *w)
{
	/* Circular doubly linked; *head is the oldest. */
	if (!*head) {
		w->next = w->prev = w;
		*head = w;
		return;
	}
	struct weft__waiter *h = *head;
	w->prev = h->prev;
	w->next = h;
	h->prev->next = w;
	h->prev = w;
}

void weft__waitq_remove(struct weft__waiter **head, struct weft__waiter *w)
{
	if (w->next == w) {
		*head = NULL;
	} else {
		w->prev->next = w->next;
		w->next->prev = w->prev;
		if (*head == w)
			*head = w->next;
	}
	w->next = w->prev = NULL;
}

struct weft__waiter *weft__waitq_pop(struct weft__waiter **head)
{
	struct weft__waiter *w = *head;
	if (w)
		weft__waitq_remove(head, w);
	return w;
}

bool weft__waiter_claim(struct weft__waiter *w)
{
	return !w->claim || weft__unpark(w->f, w->gen, 0);
}

struct weft__waiter *weft__waitq_take(struct weft__waiter **head)
{
	struct weft__waiter *w;
	while ((w = weft__waitq_pop(head)))
		if (weft__waiter_claim(w))
			return w;
	return NULL;
}

void weft__waiter_complete(struct weft__waiter *w, int result)
{
	w->done = 1;
	w->result = result;
	if (!w->claim)
		weft__unpark(w->f, w->gen, 0);
}

static int settle(struct weft__waiter **head, struct weft__waiter *w, int res);

int weft__waiter_wait(weft__lock_t *lock, struct weft__waiter **head, struct weft__waiter *w,
		      int64_t deadline)
{
	return weft__waiter_wait_why(lock, head, w, deadline, "wait list");
}

/* Queue w, park, and return with the lock released. With hold, the lock
 * is the object's own and may be held across the switch (park.h's
 * weft__park_locked) when the park has no deadline. */
static int wait_unlocked(weft__lock_t *lock, struct weft__waiter **head, struct weft__waiter *w,
			 int64_t deadline, const char *why, bool hold)
{
	w->f = weft__self();
	w->done = 0;
	w->result = 0;
	w->claim = 0;
	int res;
	if (hold && weft__park_lockable(w->f, deadline)) {
		/* No timer to arm: the lock is released after the switch, and
		 * the park takes one CAS, not two. */
		w->gen = weft__park_next_gen(w->f);
		weft__waitq_push(head, w);
		res = weft__park_locked(w->f, lock, why);
	} else {
		w->gen = weft__park_begin_why(w->f, why);
		weft__waitq_push(head, w);
		weft__unlock(lock);
		res = weft__park_end(w->f, deadline);
	}
	/* A plain wake comes only from weft__waiter_complete, which finished
	 * with w before its unpark (whose CAS this park's end has read): the
	 * result stands without the lock. */
	if (res == 0 && __atomic_load_n(&w->done, __ATOMIC_ACQUIRE))
		return w->result;
	weft__lock(lock);
	int r = settle(head, w, res);
	weft__unlock(lock);
	return r;
}

int weft__waiter_wait_why(weft__lock_t *lock, struct weft__waiter **head, struct weft__waiter *w,
			  int64_t deadline, const char *why)
{
	int r = wait_unlocked(lock, head, w, deadline, why, false);
	weft__lock(lock);
	return r;
}

int weft__waiter_wait_own(weft__lock_t *lock, struct weft__waiter **head, struct weft__waiter *w,
			  int64_t deadline, const char *why)
{
	int r = wait_unlocked(lock, head, w, deadline, why, true);
	weft__lock(lock);
	return r;
}

int weft__waiter_wait_own_unlocked(weft__lock_t *lock, struct weft__waiter **head,
				   struct weft__waiter *w, int64_t deadline, const char *why)
{
	return wait_unlocked(lock, head, w, deadline, why, true);
}

/* After a park that may have ended another way (lock held): a completion
 * stands, else w leaves the list. */
static int settle(struct weft__waiter **head, struct weft__waiter *w, int res)
{
	if (w->done) {
		/* Completed: that stands, and a cancellation that raced with it
		 * is kept for the next suspension point. */
		if (res == -ECANCELED)
			weft__cancel_repend(w->f);
		return w->result;
	}
	weft__waitq_remove(head, w);
	return res ? res : -EINTR; /* a plain wake without completion cannot happen */
}
