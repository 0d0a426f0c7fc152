/* SPDX-License-Identifier: MIT */
/* The fibers waiting for a stack for their first run (starve.c). */
#ifndef WEFT_STARVE_H
#define WEFT_STARVE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct weft__fiber;
struct weft__worker;

/* Fibers whose first run found no stack (weft__stack_start) wait on the
 * starved list, still alive: each fiber that ends readies one, and an idle
 * worker (or the host loop) readies them all once before it sleeps. */
/* Read inline on every fiber's end (weft__finish_switch): hidden, so that
 * the shared library reads it directly, not through the GOT. */
extern _Atomic unsigned weft__nstarved __attribute__((visibility("hidden")));
/* Any waits. */
static inline bool weft__starved(void)
{
	return atomic_load_explicit(&weft__nstarved, memory_order_relaxed) > 0;
}
/* f's first run on w found no stack: it waits on the starved list. */
void weft__starve(struct weft__worker *w, struct weft__fiber *f);
void weft__unstarve(unsigned max);
/* Called after stacks went back (weft__stack_returns moved): readies the
 * starved fibers. With the starver's look at the count after it queued the
 * fiber (weft__starve, for every refused first run), no fiber is left
 * starved beside a stack it could have had. */
void weft__stacks_returned(void);
/* How many times a first run found no stack (for tests). */
extern _Atomic uint64_t weft__starves;

#endif
