/* SPDX-License-Identifier: MIT */
/* The runtime's private headers, one per mechanism, each beside its .c:
 * what a file of runtime/ (and a test of its internals) includes. The
 * processes' files (mailbox.c, pid.c, step.c, and hooks.c for a mailbox's
 * end) include process.h too. Nothing here is OS- or CPU-specific. */
#ifndef WEFT_INTERNAL_H
#define WEFT_INTERNAL_H

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch.h"
#include "shim.h"
#include "sim.h" /* the simulation build's points and shim calls (sim.c) */
#include "weft.h"

#include "lock.h"    /* seam/: the runtime's spinlock */
#include "san.h"     /* sanitizer builds */
#include "service.h" /* seam/: what net/ may call */

#include "rt.h"        /* weft__rt, the workers (rt.c) */
#include "fiber.h"     /* fibers and their records (fiber.c, fibtab.c) */
#include "switch.h"    /* context switches (switch.c) */
#include "scheduler.h" /* the scheduler (sched.c) */
#include "worker.h"    /* the worker loop (worker.c) */
#include "deque.h"     /* work-stealing deques (deque.c) */
#include "steal.h"     /* stealing (steal.c) */
#include "pin.h"       /* pinned fibers (pin.c) */
#include "starve.h"    /* fibers waiting for a stack (starve.c) */
#include "idle.h"      /* idle workers (idle.c) */
#include "live.h"      /* the count of live fibers (live.c) */
#include "park.h"      /* parking and the park word (park.c) */
#include "cancel.h"    /* cancellation (cancel.c) */
#include "waiter.h"    /* wait lists (waiter.c) */
#include "vclock.h"    /* the virtual clock (time.c) */
#include "timer.h"     /* timers (timer.c) */
#include "reactor.h"   /* I/O sources (reactor.c) */
#include "offload.h"   /* helper threads (offload.c) */
#include "future.h"    /* futures (future.c) */
#include "chan.h"      /* channels (chan.c) */
#include "stack.h"     /* stacks (stack.c) */
#include "overflow.h"  /* overflow reports (overflow.c) */
#include "hooks.h"     /* spawn and exit hooks (hooks.c, fls.c, generator.c, supervise.c) */
#include "host.h"      /* the host loop (poll.c) */
#include "dump.h"      /* weft_dump (dump.c) */
#include "stall.h"     /* the stall detector (stall.c) */

#endif
