/* SPDX-License-Identifier: MIT */
/* Parking (park.c): the one way to wait, and the park word that settles
 * every race between parking, waking, timeouts and cancellation. */
#ifndef WEFT_PARK_H
#define WEFT_PARK_H

#include <stdbool.h>
#include <stdint.h>

#include "fiber.h"
#include "lock.h"
#include "rt.h"

struct weft__fiber;

/* The park word: one 64-bit word per fiber settles every race between
 * parking, waking, timeouts and cancellation with a single compare-and-swap:
 *   bits 0-2   state (below)
 *   bit  3     a cancellation request not yet delivered
 *   bit  4     cancellation is held off (weft_fiber_cancel_hold): a request stays
 *              pending and wakes nobody until the hold ends
 *   bits 16-31 the wake result, as a positive errno (0 = plain wake)
 *   bits 32-63 the park generation: each park takes a new one, and a wake
 *              carrying an older generation is dropped (stale wakeup). */
enum {
	PS_RUNNING = 0, /* running, or runnable in a queue */
	PS_PARKING = 1, /* decided to park, still on its stack */
	PS_PARKED = 2,  /* switched out; a waker must queue it */
	PS_WOKEN = 3,   /* woken while still PARKING: it will not sleep */
};
#define PW_STATE(w) ((unsigned)((w)&7))
#define PW_CANCEL ((uint64_t)8)
#define PW_HOLD ((uint64_t)16)
#define PW_FLAGS (PW_CANCEL | PW_HOLD)
/* A request that may be delivered now: pending and not held off. */
#define PW_DELIVERABLE(w) (((w)&PW_FLAGS) == PW_CANCEL)
#define PW_RESULT(w) (-(int)(((w) >> 16) & 0xffff))
#define PW_GEN(w) ((uint32_t)((w) >> 32))
#define PW_MAKE(gen, res, state) \
	(((uint64_t)(gen) << 32) | ((uint64_t)(uint16_t)(-(res)) << 16) | (uint64_t)(state))

/* The calling fiber, or the calling plain thread's stand-in. */
struct weft__fiber *weft__self(void) WEFT_NOIPA;

/* Start a park: a new generation, state PARKING. After this the fiber may be
 * published to wakers as (self, gen). Returns the generation. */
uint32_t weft__park_begin(struct weft__fiber *self);
/* The same, naming what the park waits on for weft_dump: a string literal
 * ("sleep", "chan recv", ...). weft__park_begin says "park". */
uint32_t weft__park_begin_why(struct weft__fiber *self, const char *why);

/* Sleep until woken, the deadline, or cancellation. Returns the wake result:
 * 0 (woken), -ETIMEDOUT, -ECANCELED, or what the waker passed. */
int weft__park_end(struct weft__fiber *self, int64_t deadline);

/* Parking with a wait list's lock held (docs/decisions/park-locked.md), for
 * a fiber (not a plain thread) with no deadline and no cancellation request
 * it would take now (weft__park_lockable). The caller, holding lock, queues
 * its waiter with generation weft__park_next_gen(self) and calls
 * weft__park_locked, which switches out without releasing lock; the next
 * context makes the park word PARKED in that generation (or delivers a
 * cancellation request that came meanwhile) and then releases lock. Returns
 * as weft__park_end: 0 (woken), -ECANCELED, or what the waker passed. */
static inline bool weft__park_lockable(struct weft__fiber *self, int64_t deadline)
{
	return deadline == -1 && !(self->flags & FF_THREAD) &&
	       !PW_DELIVERABLE(atomic_load_explicit(&self->park, memory_order_relaxed));
}
static inline uint32_t weft__park_next_gen(struct weft__fiber *self)
{
	return PW_GEN(atomic_load_explicit(&self->park, memory_order_relaxed)) + 1;
}
int weft__park_locked(struct weft__fiber *self, weft__lock_t *lock, const char *why);

/* Wake (f, gen) with result. Returns true if this call woke it; false if the
 * generation is stale or it was already woken. Callers must guarantee that
 * f stays allocated during the call (hold the lock f's waiter is under). */
bool weft__unpark(struct weft__fiber *f, uint32_t gen, int result);

#endif
