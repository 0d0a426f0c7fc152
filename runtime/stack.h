/* SPDX-License-Identifier: MIT */
/* Fiber stacks (stack.c): the pools, and a fiber's stack from its first
 * run to its end. */
#ifndef WEFT_STACK_H
#define WEFT_STACK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "shim.h"
#include "rt.h"

struct weft__fiber;

/* stack.c: before f first runs on w (its context's sp is NULL until then):
 * its stack, unless it has one of another size already, and its frame on
 * it, entering weft__rt.fiber_main; -ENOMEM when no stack could be had (f
 * is unchanged: the scheduler puts it on its starved list). Once f has
 * exited and is off its stack: the stack back to the pools. */
__attribute__((warn_unused_result)) int weft__stack_start(struct weft__worker *w,
							  struct weft__fiber *f);
void weft__stack_release(struct weft__worker *w, struct weft__fiber *f);

/* The stacks the pools keep are of the common shape: the default size,
 * the guard of the first default-size stack the shim gave since weft_init
 * (stack.c), no tool id. A fiber's record keeps only the base of such a
 * stack. */
extern _Atomic size_t weft__stack_guard;
static inline bool weft__stack_common(const struct shim_stack *s)
{
	return s->size == weft__rt.stack_size && !s->tool_id &&
	       s->guard == atomic_load_explicit(&weft__stack_guard, memory_order_relaxed);
}
/* f's stack, whole. */
void weft__stack_of(const struct weft__fiber *f, struct shim_stack *out);
int weft__stack_get(struct weft__worker *w, size_t size, struct shim_stack *out);
/* Spawn of a default-size fiber: 0 if w's cache (with no w: the shared
 * tier) holds a stack or one could be put there, else -ENOMEM. */
int weft__stack_admit_slow(struct weft__worker *w);
static inline int weft__stack_admit(struct weft__worker *w)
{
	return w && w->ncached ? 0 : weft__stack_admit_slow(w);
}
void weft__stack_put(struct weft__worker *w, const struct shim_stack *s);
void weft__stack_cache_drain(struct weft__worker *w);
/* Called as a worker looks for work: if the shim ran out of stacks since
 * w last looked, w's cache goes to the shared tier, which is trimmed to
 * SHARED_KEEP (true: stacks went back). */
bool weft__stack_pressure(struct weft__worker *w);
/* A count that moves each time stacks go back where a first run looks for
 * one (weft__stack_cache_drain, weft__stack_trim). weft__stack_get stores
 * it in w->stack_returns before it looks beyond w's cache: a first run
 * refused while the count has moved since may find a stack now. The
 * other half is the returner's: weft__stacks_returned (starve.c). */
unsigned weft__stack_returns(void);
/* Stacks in the shared tier now (a relaxed look: the simulator's checker
 * reads it while every worker sleeps). */
unsigned weft__stack_shared(void);
/* The shared tier keeps at most keep stacks; the shim gives back the pages
 * of those it pools (shim_stack_trim). */
void weft__stack_trim(unsigned keep);
/* Every worker is out of work: trim what a burst left. */
void weft__stack_idle(void);
/* weft_shutdown: every kept stack goes back to the shim. */
void weft__stack_reset(void);

#endif
