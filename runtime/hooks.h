/* SPDX-License-Identifier: MIT */
/* The fiber context's hooks (hooks.c): what spawn and exit run for local
 * storage (fls.c), generators (generator.c), mailboxes (mailbox.c) and
 * supervisors (supervise.c). */
#ifndef WEFT_HOOKS_H
#define WEFT_HOOKS_H

#include "weft.h"

struct weft__fiber;

struct weft__fls;
/* The table a child spawned by parent (NULL: a plain thread) starts with,
 * by mode WEFT_FLS_*: 0 and *out (NULL = empty), or -ENOMEM. */
int weft__fls_inherit(struct weft__fiber *parent, unsigned mode, struct weft__fls **out);
/* Let go of a table (destructors of values it held last run here). */
void weft__fls_drop(struct weft__fls *t);
/* The exit path: the status self ends with (set, cancelled or ok); drops a
 * request not yet delivered and any hold, so the rest of the exit waits
 * as any code would. */
int weft__exit_status(struct weft__fiber *self);
/* The exit path: let go of self's table (its destructors run here). */
void weft__fls_exit(struct weft__fiber *self);
/* The exit path of a generator's fiber: its resumer sees the end. */
void weft__gen_exit(struct weft__fiber *self, void *result);
/* The exit path of a supervised fiber (after weft__mbox_exit): send its
 * weft_exit_t on its supervisor channel. */
void weft__supervise_exit(struct weft__fiber *self, void *result, int status);

/* What spawn and exit run for the fiber context (hooks.c). fiber.c calls
 * it only through weft__rt.hooks, which weft_init sets, so the fiber core
 * does not depend on local storage, generators, mailboxes, supervisors and
 * channels, which depend on it (and on the scheduler, which depends on the
 * fiber core): the exit path is a table, not a circle of files. */
struct weft__hooks {
	/* attr->supervisor is a channel of weft_exit_t: 0 or -EINVAL. */
	int (*check_supervisor)(weft_chan_t *c);
	/* weft__fls_inherit and weft__fls_drop. */
	int (*fls_inherit)(struct weft__fiber *parent, unsigned mode, struct weft__fls **out);
	void (*fls_drop)(struct weft__fls *t);
	/* Everything a fiber's exit does before its result settles, in order:
	 * sets self->status, runs destructors, ends a generator, closes the
	 * mailbox, sends the supervisor report. */
	void (*exit)(struct weft__fiber *self, void *result);
};
extern const struct weft__hooks weft__fiber_hooks;

#endif
