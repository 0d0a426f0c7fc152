/* SPDX-License-Identifier: MIT */
/* The first frame of a new context on riscv64: what arch_switch loads; the
 * frame described for debuggers (arch.h). */
#include "arch.h"
#include "frame.h"

void arch_fiber_entry(void); /* in arch_fiber_start, switch.S */

const struct arch_frame_layout arch_frame_layout __attribute__((used, retain)) = {
	.size = FRAME_SIZE,
	.pc = {"pc", FRAME_RA},
	.sp = "sp",
	.nregs = 13,
	.regs = {{"ra", FRAME_RA},
		 {"s0", FRAME_S0},
		 {"s1", FRAME_S1},
		 {"s2", FRAME_S2},
		 {"s3", FRAME_S3},
		 {"s4", FRAME_S4},
		 {"s5", FRAME_S5},
		 {"s6", FRAME_S6},
		 {"s7", FRAME_S7},
		 {"s8", FRAME_S8},
		 {"s9", FRAME_S9},
		 {"s10", FRAME_S10},
		 {"s11", FRAME_S11}},
};

void *arch_frame_init(void *top, void (*entry)(void *), void *arg)
{
	uint64_t *sp = (uint64_t *)(((uintptr_t)top & ~(uintptr_t)15) - FRAME_SIZE);

	for (int i = 0; i < FRAME_SIZE / 8; i++)
		sp[i] = 0;
	sp[FRAME_RA / 8] = (uint64_t)arch_fiber_entry;
	sp[FRAME_S1 / 8] = (uint64_t)entry;
	sp[FRAME_S2 / 8] = (uint64_t)arg;
	return sp;
}
