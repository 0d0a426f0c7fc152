/* SPDX-License-Identifier: MIT */
/* Wait lists (waiter.c), beyond what the seam (service.h) offers net/. */
#ifndef WEFT_WAITER_H
#define WEFT_WAITER_H

#include <stdbool.h>
#include <stdint.h>

#include "lock.h"
#include "service.h"

void weft__waitq_push(struct weft__waiter **head, struct weft__waiter *w);
void weft__waitq_remove(struct weft__waiter **head, struct weft__waiter *w);

/* Decide whether the waker may complete w, just taken off its list (under its
 * primitive's lock). A plain waiter always; a claim waiter only if this call
 * wakes its owner: one whose park has ended another way (another case won,
 * the deadline passed, a cancellation) is dropped, and its owner, finding it
 * neither queued nor done, knows it lost. */
bool weft__waiter_claim(struct weft__waiter *w);

/* Pop the oldest waiter of head that may be completed (weft__waiter_claim),
 * dropping those that may not; NULL when none is left. */
struct weft__waiter *weft__waitq_take(struct weft__waiter **head);

/* The same, naming what it waits on (weft__park_begin_why). */
int weft__waiter_wait_why(weft__lock_t *lock, struct weft__waiter **head, struct weft__waiter *w,
			  int64_t deadline, const char *why);

#endif
