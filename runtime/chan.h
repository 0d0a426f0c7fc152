/* SPDX-License-Identifier: MIT */
/* Channels (chan.c), as select (select.c) and supervisors see them. */
#ifndef WEFT_CHAN_H
#define WEFT_CHAN_H

#include <stdbool.h>
#include <stddef.h>

#include "lock.h"
#include "weft.h"

struct weft__waiter;

/* The lock that guards c; held around each of the calls below. */
weft__lock_t *weft__chan_lock(weft_chan_t *c);
/* Send elem or receive into it without waiting: 0, -EPIPE, or -EAGAIN. */
int weft__chan_try(weft_chan_t *c, bool send, void *elem);
/* Queue w (w->data the element) as a sender or receiver, and take it off
 * again if no waker has (a waker that took it set it done or dropped it). */
void weft__chan_enqueue(weft_chan_t *c, bool send, struct weft__waiter *w);
void weft__chan_dequeue(weft_chan_t *c, bool send, struct weft__waiter *w);

/* chan.c: a channel's element size. */
size_t weft__chan_elem_size(weft_chan_t *c);

#endif
