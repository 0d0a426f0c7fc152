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

#endif
