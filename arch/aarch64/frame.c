/* SPDX-License-Identifier: MIT */
/* The first frame of a new context on aarch64: what arch_switch loads. */
#include "arch.h"

void arch_fiber_entry(void); /* in arch_fiber_start, switch.S */

void *arch_frame_init(void *top, void (*entry)(void *), void *arg)
{
	uint64_t *sp = (uint64_t *)((uintptr_t)top & ~(uintptr_t)15) - 20;

	for (int i = 0; i < 20; i++)
		sp[i] = 0;
	sp[0] = (uint64_t)entry;            /* x19 */
	sp[1] = (uint64_t)arg;              /* x20 */
	sp[11] = (uint64_t)arch_fiber_entry; /* x30 */
	return sp;
}
