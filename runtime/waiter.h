/* SPDX-License-Identifier: MIT */
/* Wait lists (waiter.c), beyond what the seam (service.h) offers net/. */
#ifndef WEFT_WAITER_H
#define WEFT_WAITER_H

#include <stdbool.h>
#include <stdint.h>

#include "lock.h"
#include "service.h"

/* Pop the oldest waiter of head that may be completed (weft__waiter_claim),
 * dropping those that may not; NULL when none is left. */
struct weft__waiter *weft__waitq_take(struct weft__waiter **head);

/* The same, naming what it waits on (weft__park_begin_why). */
int weft__waiter_wait_why(weft__lock_t *lock, struct weft__waiter **head, struct weft__waiter *w,
			  int64_t deadline, const char *why);

/* weft__waiter_wait_why for a lock that is the object's own (a channel's,
 * a mutex's, a future's ...): no other object's waiters or wakers take it,
 * and nothing a worker does while looking for work does. A wait with no deadline then parks holding it
 * (park.h's weft__park_locked, docs/decisions/park-locked.md). A lock shared
 * by many objects (lwIP's, the step scheduler's) or one the reactor's poll
 * takes must not be held so: use the plain calls. */
int weft__waiter_wait_own(weft__lock_t *lock, struct weft__waiter **head, struct weft__waiter *w,
			  int64_t deadline, const char *why);
/* The same, returning with the lock released (a completed wait then never
 * takes it again): a channel's. */
int weft__waiter_wait_own_unlocked(weft__lock_t *lock, struct weft__waiter **head,
				   struct weft__waiter *w, int64_t deadline, const char *why);

#endif
