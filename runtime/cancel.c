/* SPDX-License-Identifier: MIT */
/* Cancellation: a request to a fiber, made by weft_fiber_cancel, by
 * weft_fiber_interrupt from anywhere, or by a graceful shutdown (runtime.c,
 * and a spawn while it drains: fiber.c). The request is the park word's
 * pending bit (park.h): a parked fiber is woken with -ECANCELED through
 * weft__unpark, a running one finds the bit at its next suspension point (a
 * park, park.c; a yield, sched.c). A fiber may hold requests off around a
 * critical section (the park word's hold bit); a primitive that completed
 * although its park said -ECANCELED puts the request back for the next
 * suspension point; a fiber's end spends what it has not seen
 * (weft__cancel_end, from supervise.c's exit status). */
#include "internal.h"

int weft_fiber_cancel(weft_fiber_t h)
{
	struct weft__fiber *f;
	int err = weft__fiber_lookup(h, false, &f);
	if (err)
		return err;
	if (atomic_load(&f->done.state) != FS_PENDING)
		err = -EALREADY;
	else
		weft__cancel_request(f);
	weft__fiber_unref(f);
	return err;
}

void weft__cancel_repend(struct weft__fiber *self)
{
	atomic_fetch_or_explicit(&self->park, PW_CANCEL, memory_order_acq_rel);
}

void weft__cancel_request(struct weft__fiber *f)
{
	atomic_fetch_or(&f->life, FL_CANCELLED); /* its exit status (supervise.c) */
	uint64_t w = atomic_load_explicit(&f->park, memory_order_acquire);
	for (;;) {
		unsigned st = PW_STATE(w);
		/* A hold is only taken or dropped by the running fiber, so a
		 * parked fiber's hold bit stays as read until it is woken. */
		if ((st == PS_PARKING || st == PS_PARKED) && !(w & PW_HOLD)) {
			if (weft__unpark(f, PW_GEN(w), -ECANCELED))
				return;
			w = atomic_load_explicit(&f->park, memory_order_acquire);
			continue;
		}
		/* Woken by an earlier request that it has not seen yet: the two
		 * merge into that one delivery. */
		if ((st == PS_WOKEN || st == PS_RUNNING) && PW_RESULT(w) == -ECANCELED)
			return;
		/* Running, already woken, or holding cancellation off: leave the
		 * request for the next park (after the hold ends). */
		if (atomic_compare_exchange_weak_explicit(&f->park, &w, w | PW_CANCEL,
							  memory_order_acq_rel,
							  memory_order_acquire))
			return;
	}
}

/* ---- Holding cancellation off ------------------------------------------- */

int weft_fiber_cancel_hold(void)
{
	struct weft__fiber *self = weft__self();
	if (self->cancel_hold == WEFT_CANCEL_HOLD_MAX)
		return -EOVERFLOW;
	if (self->cancel_hold++ == 0)
		atomic_fetch_or_explicit(&self->park, PW_HOLD, memory_order_acq_rel);
	return (int)self->cancel_hold;
}

int weft_fiber_cancel_release(void)
{
	struct weft__fiber *self = weft__self();
	if (self->cancel_hold == 0)
		return -EPERM;
	/* The outermost release makes a pending request deliverable: the next
	 * suspension point returns -ECANCELED (a park cannot be in progress
	 * here, since only the fiber itself parks). */
	if (--self->cancel_hold == 0)
		atomic_fetch_and_explicit(&self->park, ~PW_HOLD, memory_order_acq_rel);
	return (int)self->cancel_hold;
}

/* ---- Interrupts ---------------------------------------------------------
 * Interrupting a fiber from anywhere: another OS thread, a signal handler, a
 * bare-metal interrupt handler. The request is a cancellation (the park
 * word's pending bit), delivered at the fiber's next yield point: the
 * weft_fiber_yield of a loop that spins, or the park it is in or makes next.
 *
 * An interrupt handler may have stopped the very code that holds one of the
 * runtime's locks or is halfway through pushing on a deque, so this path
 * takes no lock, no reference and queues nothing: it finds the record
 * through the fiber table (weft__fiber_peek: records and the table's chunks
 * are never freed while the runtime runs), sets the bit with a
 * compare-and-swap, and if the fiber is parked, raises a flag and wakes
 * every worker with stores and the shim's wake calls. The first worker to
 * look for work sees the flag and wakes the parked fibers whose request is
 * deliverable, from thread context.
 *
 * The record may be freed and reused by another fiber at any moment. A
 * spawn stores the record's new handle and then (release) a park word of a
 * new generation; so once the park word is read (acquire) and the handle
 * still matches, that park word is f's, and the compare-and-swap from it
 * cannot succeed on a later life of the record. */

int weft_fiber_interrupt(weft_fiber_t h)
{
	struct weft__fiber *f = weft__fiber_peek(h);
	if (!f)
		return -ESRCH;
	uint64_t w = atomic_load_explicit(&f->park, memory_order_acquire);
	for (;;) {
		if (atomic_load_explicit(&f->handle, memory_order_acquire) != h)
			return -ESRCH; /* gone meanwhile */
		if (atomic_load_explicit(&f->done.state, memory_order_acquire) != FS_PENDING)
			return weft__fiber_named(f, false) ? -EALREADY : -ESRCH;
		unsigned st = PW_STATE(w);
		/* Woken by a request it has not seen yet: they merge (as
		 * weft__cancel_request). */
		if ((st == PS_WOKEN || st == PS_RUNNING) && PW_RESULT(w) == -ECANCELED)
			return 0;
		if (atomic_compare_exchange_weak_explicit(&f->park, &w, w | PW_CANCEL,
							  memory_order_acq_rel,
							  memory_order_acquire))
			break;
	}
	/* Parked (or on its way): somebody must wake it. Held off: the
	 * request waits for the hold to end, like any other. */
	unsigned st = PW_STATE(w);
	if ((st == PS_PARKING || st == PS_PARKED) && !(w & PW_HOLD)) {
		atomic_store(&weft__rt.irq_sweep, 1);
		weft__kick_all();
	}
	return 0;
}

static void sweep_one(struct weft__fiber *f, void *ctx)
{
	(void)ctx;
	uint64_t w = atomic_load_explicit(&f->park, memory_order_acquire);
	unsigned st = PW_STATE(w);
	if ((st == PS_PARKING || st == PS_PARKED) && PW_DELIVERABLE(w) &&
	    atomic_load(&f->done.state) == FS_PENDING)
		weft__cancel_request(f);
}

void weft__irq_sweep(void)
{
	if (atomic_exchange(&weft__rt.irq_sweep, 0))
		weft__fibers_each(sweep_one, NULL);
}
