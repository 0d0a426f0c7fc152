/* SPDX-License-Identifier: MIT */
/* Chase-Lev deque in C11 atomics: the weak-memory-model version of Lê, Pop,
 * Cohen and Zappa Nardelli, "Correct and Efficient Work-Stealing for Weak
 * Memory Models" (PPoPP 2013), with signed 64-bit indices (they never wrap)
 * and a fixed ring: a full ring is the caller's to spill, as Go spills half
 * of a full local run queue to the global one. */
#include "deque.h"
#include "fence.h"

#if defined(__SANITIZE_THREAD__)
_Atomic int weft__fence_word;
#endif

#define MASK (WEFT_DEQUE_CAP - 1)

bool weft__deque_push(struct weft__deque *d, struct weft__fiber *f)
{
	int64_t b = atomic_load_explicit(&d->bottom, memory_order_relaxed);
	int64_t t = atomic_load_explicit(&d->top, memory_order_acquire);
	if (b - t >= WEFT_DEQUE_CAP)
		return false;
	atomic_store_explicit(&d->ring[b & MASK], f, memory_order_relaxed);
	/* The paper's release fence + relaxed store, as one release store:
	 * the same order, and visible to TSan, which does not model fences. */
	atomic_store_explicit(&d->bottom, b + 1, memory_order_release);
	return true;
}

struct weft__fiber *weft__deque_take(struct weft__deque *d)
{
	/* Empty at a glance: top only grows, so an old top that already
	 * reaches bottom means empty now, and nothing is written (bottom's
	 * line stays shared with the thieves that look at it). */
	if (atomic_load_explicit(&d->bottom, memory_order_relaxed) <=
	    atomic_load_explicit(&d->top, memory_order_relaxed))
		return NULL;
	int64_t b = atomic_load_explicit(&d->bottom, memory_order_relaxed) - 1;
	atomic_store_explicit(&d->bottom, b, memory_order_relaxed);
	weft__fence();
	int64_t t = atomic_load_explicit(&d->top, memory_order_relaxed);
	struct weft__fiber *f = NULL;
	if (t <= b) {
		f = atomic_load_explicit(&d->ring[b & MASK], memory_order_relaxed);
		if (t == b) {
			/* The last element: race the thieves for it. */
			if (!atomic_compare_exchange_strong_explicit(
				    &d->top, &t, t + 1, memory_order_seq_cst, memory_order_relaxed))
				f = NULL;
			atomic_store_explicit(&d->bottom, b + 1, memory_order_relaxed);
		}
	} else {
		atomic_store_explicit(&d->bottom, b + 1, memory_order_relaxed);
	}
	return f;
}

struct weft__fiber *weft__deque_take_alone(struct weft__deque *d)
{
	/* No thief: nothing to race for, so no fence and no CAS. */
	int64_t b = atomic_load_explicit(&d->bottom, memory_order_relaxed) - 1;
	int64_t t = atomic_load_explicit(&d->top, memory_order_relaxed);
	if (t > b)
		return NULL;
	struct weft__fiber *f = atomic_load_explicit(&d->ring[b & MASK], memory_order_relaxed);
	atomic_store_explicit(&d->bottom, b, memory_order_relaxed);
	return f;
}

struct weft__fiber *weft__deque_steal(struct weft__deque *d)
{
	int64_t t = atomic_load_explicit(&d->top, memory_order_acquire);
	weft__fence();
	int64_t b = atomic_load_explicit(&d->bottom, memory_order_acquire);
	if (t >= b)
		return NULL;
	struct weft__fiber *f = atomic_load_explicit(&d->ring[t & MASK], memory_order_relaxed);
	if (!atomic_compare_exchange_strong_explicit(&d->top, &t, t + 1, memory_order_seq_cst,
						     memory_order_relaxed))
		return NULL;
	return f;
}

int64_t weft__deque_size(struct weft__deque *d)
{
	int64_t b = atomic_load_explicit(&d->bottom, memory_order_relaxed);
	int64_t t = atomic_load_explicit(&d->top, memory_order_relaxed);
	return b > t ? b - t : 0;
}
