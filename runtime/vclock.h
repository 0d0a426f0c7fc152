/* SPDX-License-Identifier: MIT */
/* The virtual clock (time.c). (Not time.h: runtime/ is on the include
 * path, and the C library has a <time.h>.) */
#ifndef WEFT_VCLOCK_H
#define WEFT_VCLOCK_H

#include <stdbool.h>
#include <stdint.h>

/* weft__now() is the runtime's clock: the shim's, or with the virtual clock
 * (WEFT_CFG_VIRTUAL_CLOCK) a counter that only moves when every worker is
 * idle, straight to the next deadline (sched.c, weft__sleep_idle). */
bool weft__vclock_on(void);
void weft__vclock_start(bool on);
/* Move the virtual clock forward to t (never back). */
void weft__vclock_set(int64_t t);

#endif
