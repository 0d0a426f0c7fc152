/* SPDX-License-Identifier: MIT */
/* Cancellation (cancel.c): the request, its re-pend, and what a fiber's
 * end does with it. */
#ifndef WEFT_CANCEL_H
#define WEFT_CANCEL_H

#include "fiber.h"
#include "park.h"

/* A primitive that completed although park returned -ECANCELED keeps the
 * request pending for the next suspension point. */
void weft__cancel_repend(struct weft__fiber *self);

/* Request cancellation of f; wakes it if parked. */
void weft__cancel_request(struct weft__fiber *f);

/* A request reached self: its exit status says cancelled (supervise.c),
 * whoever made the request. weft_fiber_interrupt cannot mark it itself
 * (the record may be reused under it), so the delivery points do. */
static inline void weft__cancel_mark(struct weft__fiber *self)
{
	atomic_fetch_or_explicit(&self->life, FL_CANCELLED, memory_order_relaxed);
}

/* weft_fiber_yield delivers the pending request: spent, and marked. */
static inline void weft__cancel_delivered(struct weft__fiber *self)
{
	atomic_fetch_and_explicit(&self->park, ~PW_CANCEL, memory_order_acq_rel);
	weft__cancel_mark(self);
}

/* The exit path of self, once its status is decided (weft__exit_status):
 * the fiber has ended, so a request it has not seen is spent (its status
 * says so), and a hold it forgot to release no longer protects anything.
 * What is left of its exit (destructors, the report) waits as any code
 * would, and a request made from now on interrupts it. */
static inline void weft__cancel_end(struct weft__fiber *self)
{
	self->cancel_hold = 0;
	/* Only the fiber sets the hold; a request that lands after this load
	 * is one made after the end, which stands. Most fibers have neither:
	 * no locked instruction for them. */
	if (atomic_load_explicit(&self->park, memory_order_acquire) & (PW_CANCEL | PW_HOLD))
		atomic_fetch_and_explicit(&self->park, ~(PW_CANCEL | PW_HOLD),
					  memory_order_acq_rel);
}

/* weft_fiber_interrupt left a parked fiber to wake (weft__rt.irq_sweep):
 * a worker wakes every parked fiber whose request is deliverable. Called
 * by weft__find_work when the flag is set. */
void weft__irq_sweep(void);

#endif
