/* SPDX-License-Identifier: MIT */
/* How a fiber ends: its exit status, and the report a supervised fiber
 * sends on its supervisor channel. docs/decisions/exit-status.md says why
 * "cancelled" means "a request was made and the fiber did not say
 * otherwise", and why the report may block the exiting fiber. */
#include "internal.h"

int weft_fiber_set_status(int status)
{
	struct weft__worker *w = weft__worker_self();
	struct weft__fiber *self = w ? w->cur : NULL;
	if (!self)
		return -EPERM;
	if (status > 0)
		return -EINVAL;
	if (atomic_load_explicit(&self->life, memory_order_relaxed) & FL_ENDING)
		return -EALREADY; /* a destructor run by its exit: status decided */
	self->status = status;
	return 0;
}

int weft__exit_status(struct weft__fiber *self)
{
	/* A request still pending (weft_fiber_interrupt's, not yet seen) was
	 * made before the end as much as a delivered one. */
	bool asked = (atomic_load(&self->life) & FL_CANCELLED) ||
		     (atomic_load_explicit(&self->park, memory_order_acquire) & PW_CANCEL);
	int status = self->status != WEFT__STATUS_UNSET ? self->status : asked ? -ECANCELED : 0;
	weft__cancel_end(self); /* a request it has not seen is spent */
	return status;
}

void weft__supervise_exit(struct weft__fiber *self, void *result, int status)
{
	weft_chan_t *c = weft__cold(self)->supervisor;
	if (!c)
		return;
	weft_exit_t e = {
		.fiber = self->handle,
		.status = status,
		.result = result,
	};
	/* The exiting fiber is still a fiber: it may wait for room, and is
	 * not finished (join, weft_run) until the report is in. Only a closed
	 * channel or a new cancellation (a shutdown giving up on a supervisor
	 * that stopped reading) drops it. */
	(void)weft_chan_send(c, &e, -1);
}
