/* SPDX-License-Identifier: MIT */
/* The first frame of a new context on aarch64: what arch_switch loads; the
 * frame described for debuggers (arch.h). */
#include "arch.h"
#include "frame.h"

void arch_fiber_entry(void); /* in arch_fiber_start, switch.S */

const struct arch_frame_layout arch_frame_layout __attribute__((used, retain)) = {
	.size = FRAME_SIZE,
	.pc = {"pc", FRAME_X30},
	.sp = "sp",
	.nregs = 12,
	.regs = {{"x19", FRAME_X19},
		 {"x20", FRAME_X20},
		 {"x21", FRAME_X21},
		 {"x22", FRAME_X22},
		 {"x23", FRAME_X23},
		 {"x24", FRAME_X24},
		 {"x25", FRAME_X25},
		 {"x26", FRAME_X26},
		 {"x27", FRAME_X27},
		 {"x28", FRAME_X28},
		 {"x29", FRAME_X29},
		 {"x30", FRAME_X30}},
};

void *arch_frame_init(void *top, void (*entry)(void *), void *arg)
{
	uint64_t *sp = (uint64_t *)(((uintptr_t)top & ~(uintptr_t)15) - FRAME_SIZE);

	for (int i = 0; i < FRAME_SIZE / 8; i++)
		sp[i] = 0;
	sp[FRAME_X19 / 8] = (uint64_t)entry;
	sp[FRAME_X20 / 8] = (uint64_t)arg;
	sp[FRAME_X30 / 8] = (uint64_t)arch_fiber_entry;
	return sp;
}
