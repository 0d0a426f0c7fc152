/* SPDX-License-Identifier: MIT */
/* Idle workers (idle.c): sleeping, waking them, and stopping them. */
#ifndef WEFT_IDLE_H
#define WEFT_IDLE_H

#include <stdbool.h>
#include <stdint.h>

struct weft__worker;

/* How often the idle monitor looks at busy workers' next-run slots
 * (idle.c): every WEFT__MONITOR_NS when it takes the role, twice as long
 * after each look that took nothing, up to WEFT__MONITOR_MAX_NS. A fiber a
 * hand-off left in the slot of a worker that goes on running something
 * else waits about two of the longest at most. */
#define WEFT__MONITOR_NS 100000
#define WEFT__MONITOR_MAX_NS 5000000

/* Wake one idle worker (a new timer, new work from outside). */
void weft__kick_idle(void);
/* Wake one idle worker if nobody is already looking for work (idle.c). */
void weft__wake_one(bool even_if_spinning);
/* The same, for a caller that has made the fence itself since it queued. */
void weft__wake_one_fenced(bool even_if_spinning);
/* Wake worker w if it sleeps (idle.c), after work for it alone was queued
 * (its pinned inbox): w->asleep is read after a fence. */
void weft__wake_if_asleep(struct weft__worker *w);
/* Workers on the idle list now (a snapshot). */
int weft__idle_count(void);

/* Sleep as an idle worker (w, the caller's) until woken, the earliest
 * timer or cap (-1: none); the host loop (poll.c) borrows it. Returns true
 * when a waker picked w, or when it saw work and did not sleep: w then
 * counts as spinning (weft__rt.nspinning) until it looks. */
bool weft__sleep_idle(struct weft__worker *w, int64_t cap);

/* Something is queued to run, by any worker: the global queue, any
 * worker's deque, next-run slot or pinned inbox. (An idle worker's last look
 * before it sleeps counts only what it may take: idle.c's queued_for.) */
bool weft__work_queued(void);

/* Ask every worker thread to return. */
void weft__workers_stop(void);

/* Wake every worker from any context (an interrupt handler, a signal
 * handler): no locks, only stores and the shim's wake calls. */
void weft__kick_all(void);

#endif
