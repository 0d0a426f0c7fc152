/* SPDX-License-Identifier: MIT */
/* riscv64 inline helpers for spin loops and cheap timestamps. */
#ifndef WEFT_ARCH_CPU_H
#define WEFT_ARCH_CPU_H

#include <stdint.h>

/* Guard below each fiber stack by default: 64 KiB of addresses (no memory).
 * gcc 12 for riscv64 emits no stack-clash probes at all, so the guard itself
 * must be wider than a frame: any frame under 64 KiB that writes below a full
 * stack lands in the guard, never in the stack below it. */
#define ARCH_STACK_GUARD (64 * 1024)

/* Zihintpause's pause is a fence hint that older cores execute as a no-op;
 * spelled as its encoding so any assembler takes it. */
static inline void arch_relax(void) { __asm__ volatile(".4byte 0x0100000f" ::: "memory"); }

/* A full fence after a read-modify-write (Linux's smp_mb__after_atomic):
 * an acquire-release RMW here does not order a later load against its
 * store, so a real one. */
static inline void arch_fence_after_rmw(void) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }

static inline uint64_t arch_cycles(void)
{
	uint64_t v;
	__asm__ volatile("rdtime %0" : "=r"(v));
	return v;
}

/* The floating-point control state a fiber with WEFT_ATTR_FPENV keeps as
 * its own (runtime/switch.c): the dynamic rounding mode, frm. */
typedef struct {
	uint64_t frm;
} arch_fpenv_t;

static inline void arch_fpenv_save(arch_fpenv_t *e) { __asm__ volatile("frrm %0" : "=r"(e->frm)); }

static inline void arch_fpenv_load(const arch_fpenv_t *e)
{
	__asm__ volatile("fsrm %0" : : "r"(e->frm));
}

#endif
