/* SPDX-License-Identifier: MIT */
/* The stall detector (stall.c). */
#ifndef WEFT_STALL_H
#define WEFT_STALL_H

#include <stdint.h>

#include "weft.h"

/* A monitor thread that samples each worker's running fiber, switch count
 * and look-around stamp, and reports a fiber that has held its worker for
 * threshold_ns of the worker thread's CPU time without a suspension point
 * (once per stall), to fn (NULL: the console). weft_init starts it once the
 * workers run (not with the host loop: no worker thread to sample);
 * weft_shutdown stops it before they stop. 0 or -errno. */
int weft__stall_start(int64_t threshold_ns, weft_dump_fn fn, void *ctx);
void weft__stall_stop(void);
/* Stalls reported on worker i since weft_init (weft_worker_stats). */
uint64_t weft__stall_count(unsigned i);

#endif
