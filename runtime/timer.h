/* SPDX-License-Identifier: MIT */
/* Timers (timer.c): the deadlines of parked fibers. */
#ifndef WEFT_TIMER_H
#define WEFT_TIMER_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "rt.h"

struct weft__fiber;

void weft__timer_arm(struct weft__fiber *f, uint32_t gen, int64_t deadline);
void weft__timer_disarm(struct weft__fiber *f);
/* Wake the fibers whose deadline has passed, in every worker's heap: the
 * check for none armed inline (every look for work makes it), the rest in
 * timer.c. weft__timer_deadline is at most the earliest deadline armed in
 * any heap (a disarm leaves it early: timer.c), INT64_MAX: none armed. */
extern _Atomic int64_t weft__timer_deadline;
void weft__timer_fire_due_slow(void);
static inline void weft__timer_fire_due(void)
{
	if (atomic_load_explicit(&weft__timer_deadline, memory_order_acquire) != INT64_MAX)
		weft__timer_fire_due_slow();
}
/* A look for work by w (weft__find_work): fire what is due, reading the
 * clock at every look or, where w's looks come quickly, at every 8th
 * (timer.c, docs/decisions/timer-checks.md). None armed: one load. */
void weft__timer_check(struct weft__worker *w);
static inline void weft__timer_look(struct weft__worker *w)
{
	if (atomic_load_explicit(&weft__timer_deadline, memory_order_relaxed) == INT64_MAX)
		return;
	w->timer_looks++;
	if (w->timer_skip)
		w->timer_skip--;
	else
		weft__timer_check(w);
}
/* w's next look reads the clock: a worker about to sleep, a host loop's
 * call (a timer due now is work, which a skipped look would miss). */
static inline void weft__timer_look_now(struct weft__worker *w) { w->timer_skip = 0; }
/* No later than the earliest armed deadline (one load; it may be early,
 * which only ends an idle worker's sleep early), INT64_MAX when none. */
int64_t weft__timer_next(void);
/* The earliest armed deadline itself (the virtual clock's move, the host
 * loop's weft_poll_next), INT64_MAX when none. */
int64_t weft__timer_earliest(void);
/* Room in every worker's heap and the shared one for n fibers' deadlines:
 * 0 or -ENOMEM. A spawn makes room for every record there is
 * (weft__fiber_nrecords, fibtab.c) before its fiber can park; the check
 * when there is room is one load. */
int weft__timer_reserve(size_t n);

void weft__timer_reset(void);

#endif
