/* SPDX-License-Identifier: MIT */
/* aarch64 inline helpers for spin loops and cheap timestamps. */
#ifndef WEFT_ARCH_CPU_H
#define WEFT_ARCH_CPU_H

#include <stdint.h>

static inline void arch_relax(void) { __asm__ volatile("yield" ::: "memory"); }

static inline uint64_t arch_cycles(void)
{
	uint64_t v;
	__asm__ volatile("mrs %0, cntvct_el0" : "=r"(v));
	return v;
}

#endif
