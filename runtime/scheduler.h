/* SPDX-License-Identifier: MIT */
/* The scheduler (sched.c): making fibers runnable, switching, and
 * finding work. (Not sched.h: runtime/ is on the include path, and the C
 * library has a <sched.h>.) */
#ifndef WEFT_SCHEDULER_H
#define WEFT_SCHEDULER_H

#include <stdbool.h>
#include <stdint.h>

#include "lock.h"

struct weft__fiber;
struct weft__worker;

/* Actions a context leaves for the next one to finish once it is off its
 * stack: a fiber is only made visible to other workers after its registers
 * are saved. */
enum {
	ACT_YIELD = 1,
	ACT_PARK,
	ACT_PARK_LOCKED, /* park, then release the worker's held lock */
	ACT_EXIT,
	ACT_MOVE /* to the worker it was just pinned to */
};

/* Make a fiber runnable: on the caller's worker if it is one, else on the
 * global queue, waking an idle worker if none is looking for work. */
void weft__ready(struct weft__fiber *f);
/* The same for a hand-off (a plain wake by a running fiber: a rendezvous, a
 * settle, an unlock, a message): f goes to the caller's next-run slot and
 * runs as soon as the caller blocks or yields; a fiber it displaces goes to
 * the deque. From a plain thread or the scheduler, weft__ready. */
void weft__ready_next(struct weft__fiber *f);

/* Switch the calling fiber out, leaving act for the next context. */
void weft__switch_out(struct weft__fiber *self, int act);

/* Park the calling fiber on a wait list whose lock it holds: the lock is
 * released by the next context, once the fiber's park word says PARKED
 * (park.c's weft__park_locked, docs/decisions/park-locked.md). */
void weft__switch_out_locked(struct weft__fiber *self, weft__lock_t *lock);

/* Runs on a context that has just been switched in. */
void weft__finish_switch(struct weft__worker *w);

/* Run f on w from its scheduler context (the worker loop, and the host
 * loop, poll.c): false when f found no stack for its first run (it waits
 * on the starved list). */
bool weft__run(struct weft__worker *w, struct weft__fiber *f);

/* Move w's yielded fibers to its deque. */
void weft__flush_yielded(struct weft__worker *w);

/* Look for runnable work without sleeping (used by yield, park). */
struct weft__fiber *weft__find_work(struct weft__worker *w);

/* Put the list head .. tail of n fibers of class c on the global queue. */
void weft__gq_push_list(int c, struct weft__fiber *head, struct weft__fiber *tail, int64_t n);

#endif
