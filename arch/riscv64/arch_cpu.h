/* SPDX-License-Identifier: MIT */
/* riscv64 inline helpers for spin loops and cheap timestamps. */
#ifndef WEFT_ARCH_CPU_H
#define WEFT_ARCH_CPU_H

#include <stdint.h>

/* Zihintpause's pause is a fence hint that older cores execute as a no-op;
 * spelled as its encoding so any assembler takes it. */
static inline void arch_relax(void) { __asm__ volatile(".4byte 0x0100000f" ::: "memory"); }

static inline uint64_t arch_cycles(void)
{
	uint64_t v;
	__asm__ volatile("rdtime %0" : "=r"(v));
	return v;
}

#endif
