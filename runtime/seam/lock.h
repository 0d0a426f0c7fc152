/* SPDX-License-Identifier: MIT */
/* A spinlock for the runtime's short critical sections (queues, wait lists).
 * Held across a switch only by a fiber parking on a wait list, until the
 * next context releases it (weft__park_locked); it yields the CPU if the holder was
 * preempted, so a descheduled holder cannot make others burn a time slice. */
#ifndef WEFT_LOCK_H
#define WEFT_LOCK_H

#include <stdatomic.h>

#include "arch.h"
#include "shim.h"
#include "sim_shim.h" /* the simulator's yield in libweft-sim.a */

typedef struct {
	_Atomic int held;
} weft__lock_t;

#define WEFT__LOCK_INIT \
	{               \
		0       \
	}

static inline void weft__lock(weft__lock_t *l)
{
	for (unsigned spins = 0;; spins++) {
		if (!atomic_load_explicit(&l->held, memory_order_relaxed) &&
		    !atomic_exchange_explicit(&l->held, 1, memory_order_acquire))
			return;
		if (spins < 64)
			arch_relax();
		else
			shim_thread_yield();
	}
}

static inline void weft__unlock(weft__lock_t *l)
{
	atomic_store_explicit(&l->held, 0, memory_order_release);
}

#endif
