/* SPDX-License-Identifier: MIT */
/* The count of fibers alive (live.c), which weft_run waits on. */
#ifndef WEFT_LIVE_H
#define WEFT_LIVE_H

#include <stdint.h>

struct weft__worker;

/* weft__rt.live without a locked instruction per fiber (live.c): a
 * spawn on a worker takes from the worker's credit, taken from live
 * LIVE_BATCH at a time; an exit gives to the credit of the worker it ends
 * on; a worker out of work gives all of its credit back. live is never
 * below the fibers alive, and reaches 0 when the last one has ended and
 * every worker has looked for work since. w NULL: a plain thread's spawn. */
void weft__live_inc(struct weft__worker *w);
void weft__live_dec(struct weft__worker *w);
void weft__live_flush(struct weft__worker *w);
/* Fibers alive now (a snapshot, credits taken off). */
int64_t weft__live_count(void);
/* Wait until live is 0 or the deadline: 0, -ETIMEDOUT, -ECANCELED. */
int weft__live_wait(int64_t deadline);

#endif
