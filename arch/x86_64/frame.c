/* SPDX-License-Identifier: MIT */
/* The first frame of a new context on x86_64: what arch_switch pops; the
 * frame described for debuggers (arch.h). */
#include "arch.h"
#include "frame.h"

void arch_fiber_entry(void); /* in arch_fiber_start, switch.S */

const struct arch_frame_layout arch_frame_layout __attribute__((used, retain)) = {
	.size = FRAME_SIZE,
	.pc = {"rip", FRAME_PC},
	.sp = "rsp",
	.nregs = 6,
	.regs = {{"r15", FRAME_R15},
		 {"r14", FRAME_R14},
		 {"r13", FRAME_R13},
		 {"r12", FRAME_R12},
		 {"rbx", FRAME_RBX},
		 {"rbp", FRAME_RBP}},
};

void *arch_frame_init(void *top, void (*entry)(void *), void *arg)
{
	/* After the resume address is popped rsp == top, 16-byte aligned, so
	 * arch_fiber_start's call gives entry the ABI's alignment. */
	uint64_t *sp = (uint64_t *)(((uintptr_t)top & ~(uintptr_t)15) - FRAME_SIZE);
	for (int i = 0; i < FRAME_SIZE / 8; i++)
		sp[i] = 0;
	sp[FRAME_R12 / 8] = (uint64_t)entry;
	sp[FRAME_R13 / 8] = (uint64_t)arg;
	sp[FRAME_PC / 8] = (uint64_t)arch_fiber_entry;
	return sp;
}
