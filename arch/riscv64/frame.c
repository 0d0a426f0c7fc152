/* SPDX-License-Identifier: MIT */
/* The first frame of a new context on riscv64: what arch_switch loads. */
#include "arch.h"

void arch_fiber_entry(void); /* in arch_fiber_start, switch.S */

void *arch_frame_init(void *top, void (*entry)(void *), void *arg)
{
	uint64_t *sp = (uint64_t *)((uintptr_t)top & ~(uintptr_t)15) - 26;

	for (int i = 0; i < 26; i++)
		sp[i] = 0;
	sp[0] = (uint64_t)arch_fiber_entry; /* ra */
	sp[2] = (uint64_t)entry;            /* s1 */
	sp[3] = (uint64_t)arg;              /* s2 */
	return sp;
}
