/* SPDX-License-Identifier: MIT */
/* The first frame of a new context on x86_64: what arch_switch pops. */
#include "arch.h"

void arch_fiber_entry(void); /* in arch_fiber_start, switch.S */

void *arch_frame_init(void *top, void (*entry)(void *), void *arg)
{
	uint64_t *sp = (uint64_t *)((uintptr_t)top & ~(uintptr_t)15);

	/* After the resume address is popped rsp == top, 16-byte aligned, so
	 * arch_fiber_start's call gives entry the ABI's alignment. */
	*--sp = (uint64_t)arch_fiber_entry;
	*--sp = 0;                        /* rbp */
	*--sp = 0;                        /* rbx */
	*--sp = (uint64_t)entry;          /* r12 */
	*--sp = (uint64_t)arg;            /* r13 */
	*--sp = 0;                        /* r14 */
	*--sp = 0;                        /* r15 */
	*--sp = 0;                        /* reserved */
	return sp;
}
