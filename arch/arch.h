/* SPDX-License-Identifier: MIT */
/* The arch contract: what the runtime needs from a CPU. One implementation per
 * arch/<cpu>/ directory; the build puts arch/<cpu>/ on the include path, so
 * <arch_cpu.h> is the CPU's own inline helpers. */
#ifndef WEFT_ARCH_H
#define WEFT_ARCH_H

#include <stddef.h>
#include <stdint.h>

#include <arch_cpu.h> /* arch_relax(), arch_cycles(), arch_fence_after_rmw() */

/*
 * Save the callee-saved state of the running context on its own stack, store
 * that stack pointer in *save_sp, then load new_sp and resume the context saved
 * there (by an earlier arch_switch, or built by arch_frame_init). Returns when
 * some later arch_switch resumes the saved context. Saves exactly what the C ABI
 * makes callee-saved, nothing more. Implemented in arch/<cpu>/switch.S.
 */
void arch_switch(void **save_sp, void *new_sp);

/*
 * Lay out the first frame of a new context on a stack whose highest usable
 * address is top (exclusive), so that arch_switch(..., returned_sp) calls
 * entry(arg) on that stack. entry must never return: the frame has no caller,
 * and a return traps. Implemented in arch/<cpu>/frame.c.
 */
void *arch_frame_init(void *top, void (*entry)(void *), void *arg);

/*
 * The frame arch_switch saves, described for debuggers: tools/gdb/weft-gdb.py
 * reads this object from the program rather than spelling the offsets again.
 * size: the frame's bytes (the stack pointer once it is popped is the saved
 * sp + size); pc: the register the resume address goes to and its offset;
 * sp: the stack pointer's name; regs: the callee-saved registers an
 * unwinder needs, by the debugger's names, with their offsets from the saved
 * sp. Defined in arch/<cpu>/frame.c from frame.h's names; kept in every
 * image, even one linked with --gc-sections.
 */
struct arch_frame_slot {
	const char *reg;
	uint32_t offset;
};
struct arch_frame_layout {
	uint32_t size;
	struct arch_frame_slot pc;
	const char *sp;
	uint32_t nregs;
	struct arch_frame_slot regs[16];
};
extern const struct arch_frame_layout arch_frame_layout;

/*
 * Walk the frame-pointer chain of a context that arch_switch saved at sp, on
 * a stack [lo, hi): write up to max return addresses into pcs, the resume
 * address first, and return how many. Reads nothing outside [lo, hi); stops
 * at a frame pointer that is outside it, misaligned or not above the last
 * one, and at a zero return address (a first frame). Only code built with
 * frame pointers is followed; beyond a frame without one the chain ends, or
 * gives addresses that mean nothing. A best-effort read of a stack that is
 * not running: if its context resumes meanwhile the addresses are garbage,
 * never a fault. Implemented in arch/<cpu>/backtrace.c.
 */
size_t arch_backtrace(const void *sp, uintptr_t lo, uintptr_t hi, uintptr_t *pcs, size_t max);

/*
 * The same walk for a context caught running (a signal's interrupted
 * registers): pc and the frame pointer fp as they were, the chain followed
 * only through [lo, hi). pcs[0] is pc; the caller of a function stopped
 * before it set up its frame (or built without one) may be missing, and
 * nothing beyond pc is written when fp is not in [lo, hi). Reads nothing
 * outside [lo, hi) and takes no lock: async-signal-safe. Implemented in
 * arch/<cpu>/backtrace.c.
 */
size_t arch_backtrace_at(uintptr_t pc, uintptr_t fp, uintptr_t lo, uintptr_t hi, uintptr_t *pcs,
			 size_t max);

/*
 * 1 if the calling thread runs with a hardware shadow stack (x86 CET SHSTK,
 * arm64 GCS), which arch_switch does not switch: the first return after a
 * switch would fault. 0 otherwise, or where the CPU has none. Leaves errno
 * alone. Implemented in arch/<cpu>/shstk.c.
 */
int arch_shadow_stack_on(void);

#endif
