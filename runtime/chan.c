/* SPDX-License-Identifier: MIT */
/* Channels of fixed-size elements: a ring of capacity N (0 = rendezvous) and
 * two wait lists under one lock, as in Go. A send meeting a waiting receiver
 * copies straight into the receiver's buffer; a receive meeting a waiting
 * sender (ring full, or rendezvous) takes the oldest element and moves that
 * sender's element into the ring. Close wakes every waiter with -EPIPE;
 * receivers drain the ring first. A waiter may belong to a select (claim set):
 * a waker claims it before copying, so an element never goes to a select that
 * another case has already completed. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define MAX_ELEM (64 * 1024)
#define MAX_CAP ((size_t)1 << 24)

struct weft_chan {
	weft__lock_t lock;
	size_t elem, cap, head, len;
	int closed;
	struct weft__waiter *senders, *receivers;
	unsigned char *ring;
};

int weft_chan_create(weft_chan_t **out, size_t elem_size, size_t capacity)
{
	if (!out || elem_size == 0 || elem_size > MAX_ELEM || capacity > MAX_CAP)
		return -EINVAL;
	struct weft_chan *c = calloc(1, sizeof *c);
	if (!c)
		return -ENOMEM;
	if (capacity && !(c->ring = malloc(capacity * elem_size))) {
		free(c);
		return -ENOMEM;
	}
	c->elem = elem_size;
	c->cap = capacity;
	*out = c;
	return 0;
}

int weft_chan_destroy(weft_chan_t *c)
{
	if (!c)
		return 0;
	/* A waiter leaves the lists before its call returns, so a waiter
	 * here is a call still running (the safety net of weft.h). */
	weft__lock(&c->lock);
	bool busy = c->senders || c->receivers;
	weft__unlock(&c->lock);
	if (busy)
		return -EBUSY;
	free(c->ring);
	free(c);
	return 0;
}

/* memcpy of an element: the common sizes as fixed-size copies, which the
 * compiler turns into a move or two instead of a call into the C library
 * (about 24 instructions, 4% of a round trip of 8-byte elements). */
static inline void copy(void *dst, const void *src, size_t n)
{
	switch (n) {
	case 4:
		memcpy(dst, src, 4);
		break;
	case 8:
		memcpy(dst, src, 8);
		break;
	case 16:
		memcpy(dst, src, 16);
		break;
	default:
		memcpy(dst, src, n);
		break;
	}
}

static unsigned char *slot(struct weft_chan *c, size_t i)
{
	return c->ring + ((c->head + i) % c->cap) * c->elem;
}

/* One send that does not wait, c's lock held: 0, -EPIPE, or -EAGAIN (it
 * would have to wait). A waiter of a select that another case has already
 * completed is never chosen (weft__waitq_take). */
static int try_send(struct weft_chan *c, const void *elem)
{
	struct weft__waiter *w;
	if (c->closed)
		return -EPIPE;
	if ((w = weft__waitq_take(&c->receivers))) {
		copy(w->data, elem, c->elem);
		weft__waiter_complete(w, 0);
		return 0;
	}
	if (c->len < c->cap) {
		copy(slot(c, c->len++), elem, c->elem);
		return 0;
	}
	return -EAGAIN;
}

/* One receive that does not wait, c's lock held: 0, -EPIPE, or -EAGAIN. */
static int try_recv(struct weft_chan *c, void *elem)
{
	struct weft__waiter *w;
	if (c->len) {
		copy(elem, slot(c, 0), c->elem);
		c->head = (c->head + 1) % c->cap;
		c->len--;
		if ((w = weft__waitq_take(&c->senders))) {
			copy(slot(c, c->len++), w->data, c->elem);
			weft__waiter_complete(w, 0);
		}
		return 0;
	}
	if ((w = weft__waitq_take(&c->senders))) {
		copy(elem, w->data, c->elem);
		weft__waiter_complete(w, 0);
		return 0;
	}
	return c->closed ? -EPIPE : -EAGAIN;
}

int weft_chan_send(weft_chan_t *c, const void *elem, int64_t deadline)
{
	if (!c || !elem)
		return -EINVAL;
	weft__lock(&c->lock);
	int r = try_send(c, elem);
	if (r == -EAGAIN) {
		struct weft__waiter me = {.data = (void *)elem};
		return weft__waiter_wait_own_unlocked(&c->lock, &c->senders, &me, deadline,
						      "chan send");
	}
	weft__unlock(&c->lock);
	return r;
}

int weft_chan_recv(weft_chan_t *c, void *elem, int64_t deadline)
{
	if (!c || !elem)
		return -EINVAL;
	weft__lock(&c->lock);
	int r = try_recv(c, elem);
	if (r == -EAGAIN) {
		struct weft__waiter me = {.data = elem};
		return weft__waiter_wait_own_unlocked(&c->lock, &c->receivers, &me, deadline,
						      "chan recv");
	}
	weft__unlock(&c->lock);
	return r;
}

/* ---- select's view (select.c): c's lock is held around each of these --- */

weft__lock_t *weft__chan_lock(weft_chan_t *c) { return &c->lock; }

size_t weft__chan_elem_size(weft_chan_t *c) { return c->elem; }

int weft__chan_try(weft_chan_t *c, bool send, void *elem)
{
	return send ? try_send(c, elem) : try_recv(c, elem);
}

void weft__chan_enqueue(weft_chan_t *c, bool send, struct weft__waiter *w)
{
	weft__waitq_push(send ? &c->senders : &c->receivers, w);
}

void weft__chan_dequeue(weft_chan_t *c, bool send, struct weft__waiter *w)
{
	if (w->next) /* still queued: no waker took it */
		weft__waitq_remove(send ? &c->senders : &c->receivers, w);
}

int weft_chan_close(weft_chan_t *c)
{
	if (!c)
		return -EINVAL;
	weft__lock(&c->lock);
	int r = c->closed ? -EPIPE : 0;
	c->closed = 1;
	struct weft__waiter *w;
	while ((w = weft__waitq_take(&c->receivers)))
		weft__waiter_complete(w, -EPIPE);
	while ((w = weft__waitq_take(&c->senders)))
		weft__waiter_complete(w, -EPIPE);
	weft__unlock(&c->lock);
	return r;
}

size_t weft_chan_len(weft_chan_t *c)
{
	if (!c)
		return 0;
	weft__lock(&c->lock);
	size_t n = c->len;
	weft__unlock(&c->lock);
	return n;
}
