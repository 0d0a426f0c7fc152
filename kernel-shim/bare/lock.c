/* SPDX-License-Identifier: MIT */
/* The shim lock: one lock for all of the bare shim's own state (the thread
 * ring, the pages and page tables, the stack pools, the I/O sources, the
 * console input, the interrupt handlers), held with interrupts off on the
 * holding hart, so that nothing that takes it runs on that hart while it is
 * held (docs/decisions/bare-smp.md says why one lock).
 *
 * It belongs to a hart, not to a thread, and is recursive: a hart that
 * holds it may take it again (a demand fault inside a critical section, a
 * device handler called from the idle loop), and it is free again at the
 * outermost unlock. A thread switch happens with it held: the thread
 * switched to carries on with the depth it had when it switched out
 * (shim_big_depth, thread.c), and a new thread drops it (shim_big_drop). Another
 * hart spins for it with interrupts off; a hart that spins for 10 s says
 * so and ends the run: a deadlock is a report, never a hang. */
#include <stdatomic.h>

#include "arch.h"
#include "bare.h"

#define FREE -1
#define STUCK_S 10
#define EXIT_STUCK 135

static _Atomic int owner = FREE; /* the holding hart's index */
static unsigned depth;           /* its nesting, while held */
static void *taken_at;           /* where the holder took it: for the report */

static void acquire(int me)
{
	uint64_t start = 0;
	for (unsigned n = 1;; n++) {
		int want = FREE;
		if (atomic_compare_exchange_weak_explicit(&owner, &want, me, memory_order_acquire,
							  memory_order_relaxed))
			return;
		arch_relax();
		if (n % 4096)
			continue;
		uint64_t now = rdtime();
		if (!start) {
			start = now;
		} else if (now - start > (uint64_t)STUCK_S * BOARD_TIMEBASE_HZ) {
			shim_puts("weft: hart ");
			shim_put_dec((uint64_t)me);
			shim_puts(" waited 10 s for the shim lock, held by hart ");
			shim_put_dec((uint64_t)atomic_load(&owner));
			shim_puts(" (taken at ");
			shim_put_hex((uintptr_t)taken_at);
			shim_puts(")\n");
			board_exit(EXIT_STUCK);
		}
	}
}

int shim_big_lock(void)
{
	int on = irq_save();
	int me = (int)shim_hart_self()->index;
	if (atomic_load_explicit(&owner, memory_order_relaxed) == me) {
		depth++;
		return on;
	}
	acquire(me);
	depth = 1;
	taken_at = __builtin_return_address(0);
	return on;
}

void shim_big_unlock(int on)
{
	if (--depth == 0)
		atomic_store_explicit(&owner, FREE, memory_order_release);
	irq_restore(on);
}

int shim_big_held(void)
{
	return atomic_load_explicit(&owner, memory_order_relaxed) == (int)shim_hart_self()->index;
}

unsigned shim_big_depth(void) { return depth; }

void shim_big_depth_set(unsigned d) { depth = d; }

unsigned shim_big_drop(void)
{
	unsigned d = depth;
	depth = 0;
	atomic_store_explicit(&owner, FREE, memory_order_release);
	return d;
}

void shim_big_retake(unsigned d)
{
	acquire((int)shim_hart_self()->index);
	depth = d;
	taken_at = __builtin_return_address(0);
}
