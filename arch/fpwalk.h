/* SPDX-License-Identifier: MIT */
/* The frame-pointer walk every arch/<cpu>/backtrace.c shares; it defines the
 * saved frame's offsets (SAVED_FP, SAVED_PC from the saved sp) and the frame
 * record's (REC_FP, REC_PC from a frame pointer) before including this.
 *
 * The stack belongs to a context that is switched out and may resume on
 * another thread at any moment (arch_backtrace), or to the thread a signal
 * interrupted (arch_backtrace_at, in the handler), so the sanitizers are
 * told not to watch these reads: they are bounded to [lo, hi) and their
 * values are checked. */
#ifndef WEFT_ARCH_FPWALK_H
#define WEFT_ARCH_FPWALK_H

#include <stdint.h>

static inline int in_stack(uintptr_t a, uintptr_t lo, uintptr_t hi)
{
	return a >= lo && a <= hi - sizeof(uintptr_t) && (a & (sizeof(uintptr_t) - 1)) == 0;
}

__attribute__((no_sanitize("address", "thread", "undefined"), noinline)) static uintptr_t
peek(uintptr_t a)
{
	return *(volatile const uintptr_t *)a;
}

/* The chain from a frame pointer on, after the first return address pc. */
static size_t walk(uintptr_t pc, uintptr_t fp, uintptr_t last, uintptr_t lo, uintptr_t hi,
		   uintptr_t *pcs, size_t max)
{
	size_t n = 0;
	while (pc && n < max) {
		pcs[n++] = pc;
		if (fp <= last || !in_stack(fp + REC_FP, lo, hi) || !in_stack(fp + REC_PC, lo, hi))
			break;
		pc = peek(fp + REC_PC);
		last = fp;
		fp = peek(fp + REC_FP);
	}
	return n;
}

size_t arch_backtrace(const void *sp, uintptr_t lo, uintptr_t hi, uintptr_t *pcs, size_t max)
{
	uintptr_t s = (uintptr_t)sp;
	if (max == 0 || !in_stack(s + SAVED_FP, lo, hi) || !in_stack(s + SAVED_PC, lo, hi))
		return 0;
	return walk(peek(s + SAVED_PC), peek(s + SAVED_FP), s, lo, hi, pcs, max);
}

size_t arch_backtrace_at(uintptr_t pc, uintptr_t fp, uintptr_t lo, uintptr_t hi, uintptr_t *pcs,
			 size_t max)
{
	return walk(pc, fp, lo ? lo - 1 : 0, lo, hi, pcs, max);
}

#endif
