/* SPDX-License-Identifier: MIT */
/* Interrupting a fiber from anywhere: another OS thread, a signal handler, a
 * bare-metal interrupt handler. The request is a cancellation (the park
 * word's pending bit), delivered at the fiber's next yield point: the
 * weft_fiber_yield of a loop that spins, or the park it is in or makes next.
 *
 * An interrupt handler may have stopped the very code that holds one of the
 * runtime's locks or is halfway through pushing on a deque, so this path
 * takes no lock and queues nothing: it resolves no handle (the caller took a
 * reference beforehand, which keeps the fiber's record from being reused),
 * sets the bit with a compare-and-swap, and if the fiber is parked, raises a
 * flag and wakes every worker with stores and the shim's wake calls. The
 * first worker to look for work sees the flag and wakes the parked fibers
 * whose request is deliverable, from thread context. */
#include "internal.h"

int weft_fiber_ref(weft_fiber_t f, weft_fiber_ref_t **out)
{
	if (!out)
		return -EINVAL;
	struct weft__fiber *fb;
	int err = weft__fiber_lookup(f, &fb);
	if (err)
		return err;
	*out = (weft_fiber_ref_t *)fb;
	return 0;
}

void weft_fiber_ref_release(weft_fiber_ref_t *r)
{
	if (r)
		weft__fiber_unref((struct weft__fiber *)r);
}

int weft_fiber_interrupt(weft_fiber_ref_t *r)
{
	if (!r)
		return -EINVAL;
	struct weft__fiber *f = (struct weft__fiber *)r;
	if (atomic_load_explicit(&f->done.state, memory_order_acquire) != FS_PENDING)
		return -EALREADY;
	uint64_t w = atomic_load_explicit(&f->park, memory_order_acquire);
	for (;;) {
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
