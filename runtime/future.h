/* SPDX-License-Identifier: MIT */
/* Futures (future.c): the core a fiber's result is (struct weft__fiber's
 * done) and what the runtime's own files call on it. */
#ifndef WEFT_FUTURE_H
#define WEFT_FUTURE_H

#include <stdatomic.h>
#include <stdint.h>

#include "lock.h"

struct weft__waiter;

struct weft__future {
	weft__lock_t lock;
	_Atomic int state; /* FS_* */
	void *value;       /* resolved: the value; rejected: the error (intptr_t) */
	struct weft__waiter *waiters;
};
enum { FS_PENDING = 0, FS_RESOLVED = 1, FS_REJECTED = 2 };

void weft__future_init(struct weft__future *f);
int weft__future_settle(struct weft__future *f, int state, void *value, int error);
int weft__future_wait(struct weft__future *f, int64_t deadline, void **value);
/* The same, naming what it waits on for weft_dump ("future", "join"). */
int weft__future_wait_why(struct weft__future *f, int64_t deadline, void **value, const char *why);
/* A settled future's outcome: 0 and *value (value may be NULL), or its
 * rejection error. */
int weft__future_outcome(struct weft__future *f, void **value);

#endif
