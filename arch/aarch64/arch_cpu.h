/* SPDX-License-Identifier: MIT */
/* aarch64 inline helpers for spin loops and cheap timestamps. */
#ifndef WEFT_ARCH_CPU_H
#define WEFT_ARCH_CPU_H

#include <stdint.h>

/* Guard below each fiber stack by default: one page. The toolchain file sets
 * -fstack-clash-protection with --param stack-clash-protection-guard-size=12,
 * so gcc probes every 4 KiB of a large frame (its default, 16, probes only
 * every 64 KiB and a 12 KiB frame would jump a one-page guard). */
#define ARCH_STACK_GUARD (4 * 1024)

static inline void arch_relax(void) { __asm__ volatile("yield" ::: "memory"); }

/* A full fence after a read-modify-write (Linux's smp_mb__after_atomic):
 * an acquire-release RMW here does not order a later load against its
 * store, so a real one. */
static inline void arch_fence_after_rmw(void) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }

static inline uint64_t arch_cycles(void)
{
	uint64_t v;
	__asm__ volatile("mrs %0, cntvct_el0" : "=r"(v));
	return v;
}

/* The floating-point control state a fiber with WEFT_ATTR_FPENV keeps as
 * its own (runtime/switch.c): FPCR. */
typedef struct {
	uint64_t fpcr;
} arch_fpenv_t;

static inline void arch_fpenv_save(arch_fpenv_t *e)
{
	__asm__ volatile("mrs %0, fpcr" : "=r"(e->fpcr));
}

static inline void arch_fpenv_load(const arch_fpenv_t *e)
{
	__asm__ volatile("msr fpcr, %0" : : "r"(e->fpcr));
}

#endif
