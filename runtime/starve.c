/* SPDX-License-Identifier: MIT */
/* Fibers that found no stack at their first run
 * (docs/decisions/lazy-stacks.md). They wait here, still counted alive and
 * not in any queue, until a fiber ends (its stack is then in the pools:
 * weft__finish_switch readies one) or an idle worker tries them all again. */
#include <limits.h>

#include "fence.h"
#include "internal.h"

static weft__lock_t starved_lock = WEFT__LOCK_INIT;
static struct weft__fiber *starved_head, *starved_tail;
_Alignas(64) _Atomic unsigned weft__nstarved; /* read without the lock: a hint */
_Atomic uint64_t weft__starves;

/* f's first run on w found no stack (weft__stack_start): it waits on the
 * starved list. Stacks may have gone back since w's look found none (a
 * sleeper drained its cache, a worker under pressure its own), and whoever
 * gave them may have looked at the starved list before f was on it: the
 * two sides fence between their write and their read (here the list, then
 * the count; weft__stacks_returned the count, then the list), so one of
 * them sees the other, and f is tried again. Every refused first run comes
 * here: a switch's (sched.c's no_stack) and the worker loop's (weft__run). */
void weft__starve(struct weft__worker *w, struct weft__fiber *f)
{
	atomic_fetch_add_explicit(&weft__starves, 1, memory_order_relaxed);
	f->next = NULL;
	weft__lock(&starved_lock);
	if (starved_tail)
		starved_tail->next = f;
	else
		starved_head = f;
	starved_tail = f;
	atomic_store_explicit(&weft__nstarved,
			      atomic_load_explicit(&weft__nstarved, memory_order_relaxed) + 1,
			      memory_order_relaxed);
	weft__unlock(&starved_lock);
	SIM_POINT_UNHELD(w, SIM_STARVE);
	weft__fence();
	if (weft__stack_returns() != w->stack_returns)
		weft__unstarve(1);
}

void weft__unstarve(unsigned max)
{
	while (max-- && weft__starved()) {
		weft__lock(&starved_lock);
		struct weft__fiber *f = starved_head;
		if (f) {
			starved_head = f->next;
			if (!starved_head)
				starved_tail = NULL;
			atomic_store_explicit(
				&weft__nstarved,
				atomic_load_explicit(&weft__nstarved, memory_order_relaxed) - 1,
				memory_order_relaxed);
		}
		weft__unlock(&starved_lock);
		if (!f)
			break;
		f->next = NULL;
		weft__ready(f);
	}
}

void weft__stacks_returned(void)
{
	/* Against weft__starve's: a returner that moved the count either sees
	 * the fiber starved, or the starver sees the count moved. */
	SIM_POINT_UNHELD(weft__tls_worker, SIM_STACKS_BACK);
	weft__fence();
	if (weft__starved())
		weft__unstarve(UINT_MAX);
}
