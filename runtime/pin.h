/* SPDX-License-Identifier: MIT */
/* Pinned fibers (pin.c): the pinned lists and the inbox of each worker. */
#ifndef WEFT_PIN_H
#define WEFT_PIN_H

#include "rt.h"
#include "fiber.h"

/* Queue f, pinned to t, from the thread of worker w (NULL: a plain thread):
 * on t's pinned list from t itself, else in t's inbox, waking t if it
 * sleeps. Kept out of line: the common path (no pin) pays a load and a
 * branch. */
__attribute__((cold)) void weft__pinned_ready(struct weft__worker *w, struct weft__worker *t,
					      struct weft__fiber *f);
/* The owner moves its inbox to its pinned lists, oldest first. */
__attribute__((cold)) void weft__inbox_drain(struct weft__worker *w);
/* The oldest fiber of class c pinned to w and runnable, or NULL (owner
 * only). */
static inline struct weft__fiber *weft__take_pinned(struct weft__worker *w, int c)
{
	struct weft__fiber *f = w->pinned[c];
	if (f && !(w->pinned[c] = f->next))
		w->pinned_tail[c] = NULL;
	return f;
}

#endif
