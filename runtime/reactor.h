/* SPDX-License-Identifier: MIT */
/* The reactor (reactor.c): waiting on I/O sources. */
#ifndef WEFT_REACTOR_H
#define WEFT_REACTOR_H

#include <stdbool.h>
#include <stdint.h>

struct weft__worker;

/* Somebody waits on a source: idle workers should poll. */
bool weft__io_pending(void);

/* Poll the shim once, up to deadline, and complete the waiters it reports.
 * idle: the calling idle worker (it can be interrupted by wake_worker), or
 * NULL for a poll that does not block. Returns false when there was nothing
 * to poll for or another worker holds the poll. */
bool weft__io_poll(int64_t deadline, struct weft__worker *idle);

/* A busy worker's look at the reactor, called every 64th look for work and
 * whenever its own queues are empty (weft__find_work): a poll that does not
 * block when fibers wait on I/O and nobody has polled for a while
 * (reactor.c), so readiness is seen under a CPU-bound load. One relaxed
 * load when nobody waits. */
void weft__io_tick(void);

void weft__io_reset(void);

#endif
