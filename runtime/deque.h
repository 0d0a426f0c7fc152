/* SPDX-License-Identifier: MIT */
/* A Chase-Lev work-stealing deque of fibers with a fixed ring: the owner
 * pushes and takes at the bottom (LIFO), thieves steal at the top (FIFO). */
#ifndef WEFT_DEQUE_H
#define WEFT_DEQUE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WEFT_DEQUE_CAP 1024 /* a power of two */

struct weft__fiber;

struct weft__deque {
	_Alignas(64) _Atomic int64_t top;
	_Alignas(64) _Atomic int64_t bottom;
	_Atomic(struct weft__fiber *) ring[WEFT_DEQUE_CAP];
};

/* Owner only. false when the ring is full (the caller spills). */
bool weft__deque_push(struct weft__deque *d, struct weft__fiber *f);

/* Owner only. NULL when empty. */
struct weft__fiber *weft__deque_take(struct weft__deque *d);

/* Owner only, when no other thread ever steals from d (a runtime of one
 * worker): the same without the fence. NULL when empty. */
struct weft__fiber *weft__deque_take_alone(struct weft__deque *d);

/* Any thread. NULL when empty or when another thief won the race. */
struct weft__fiber *weft__deque_steal(struct weft__deque *d);

/* Any thread: a snapshot of the number of elements. */
int64_t weft__deque_size(struct weft__deque *d);

#endif
