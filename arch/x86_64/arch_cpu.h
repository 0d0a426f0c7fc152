/* SPDX-License-Identifier: MIT */
/* x86_64 inline helpers for spin loops and cheap timestamps. */
#ifndef WEFT_ARCH_CPU_H
#define WEFT_ARCH_CPU_H

#include <stdint.h>

/* Guard below each fiber stack by default: one page. gcc's
 * -fstack-clash-protection (board/toolchain) probes every 4 KiB of a large
 * frame as it allocates it, so no frame of code built with it jumps a page. */
#define ARCH_STACK_GUARD (4 * 1024)

static inline void arch_relax(void) { __asm__ volatile("pause" ::: "memory"); }

/* A full fence after a read-modify-write (Linux's smp_mb__after_atomic):
 * x86's locked instructions already are one, so only the compiler's. */
static inline void arch_fence_after_rmw(void) { __asm__ volatile("" ::: "memory"); }

static inline uint64_t arch_cycles(void)
{
	uint32_t lo, hi;
	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}

/* The floating-point control state a fiber with WEFT_ATTR_FPENV keeps as
 * its own (runtime/switch.c): MXCSR and the x87 control word. */
typedef struct {
	uint32_t mxcsr;
	uint16_t x87cw;
} arch_fpenv_t;

static inline void arch_fpenv_save(arch_fpenv_t *e)
{
	__asm__ volatile("stmxcsr %0\n\tfnstcw %1" : "=m"(e->mxcsr), "=m"(e->x87cw));
}

static inline void arch_fpenv_load(const arch_fpenv_t *e)
{
	__asm__ volatile("ldmxcsr %0\n\tfldcw %1" : : "m"(e->mxcsr), "m"(e->x87cw));
}

#endif
