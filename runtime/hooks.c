/* SPDX-License-Identifier: MIT */
/* The hooks of the fiber context at spawn and at exit: local storage
 * (fls.c), the generator a fiber runs (generator.c), its mailbox
 * (mailbox.c) and its supervisor (supervise.c). fiber.c reaches these only
 * through this table (weft__rt.hooks), since each of them depends on fibers and the
 * scheduler. docs/decisions/exit-status.md says why the exit runs in this
 * order. */
#include "internal.h"
#include "process.h"

static int check_supervisor(weft_chan_t *c)
{
	return weft__chan_elem_size(c) == sizeof(weft_exit_t) ? 0 : -EINVAL;
}

static void hooks_exit(struct weft__fiber *self, void *result)
{
	/* One locked instruction: from here a sender makes no mailbox for it
	 * (mailbox.c), and local storage refuses new values (fls.c). */
	atomic_fetch_or(&self->life, FL_ENDING);
	self->status = weft__exit_status(self);
	/* Most fibers have none of these (no cold block): one check here, not
	 * a call each. */
	struct weft__fiber_cold *c = weft__cold(self);
	if (c && c->fls)
		weft__fls_exit(self);
	if (c && c->gen)
		weft__gen_exit(self, result);
	weft__mbox_exit(self); /* processes: sends fail (-ESRCH) from here on */
	if (c && c->supervisor)
		weft__supervise_exit(self, result, self->status);
}

const struct weft__hooks weft__fiber_hooks = {
	.check_supervisor = check_supervisor,
	.fls_inherit = weft__fls_inherit,
	.fls_drop = weft__fls_drop,
	.exit = hooks_exit,
};
