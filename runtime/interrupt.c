/* SPDX-License-Identifier: MIT */
/* Interrupting a fiber from anywhere: another OS thread, a signal handler, a
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
#include "internal.h"

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
