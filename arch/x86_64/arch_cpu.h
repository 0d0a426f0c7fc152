/* SPDX-License-Identifier: MIT */
/* x86_64 inline helpers for spin loops and cheap timestamps. */
#ifndef WEFT_ARCH_CPU_H
#define WEFT_ARCH_CPU_H

#include <stdint.h>

static inline void arch_relax(void) { __asm__ volatile("pause" ::: "memory"); }

static inline uint64_t arch_cycles(void)
{
	uint32_t lo, hi;
	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}

#endif
