/* SPDX-License-Identifier: MIT */
/*
 * void arch_switch(void **save_sp, void *new_sp);
 * void arch_fiber_start(void);       (first frame only, see frame.c)
 *
 * AAPCS64: x19-x28, the frame pointer x29, the link register x30, sp and the
 * low 64 bits of v8-v15 (d8-d15) are callee-saved. FRAME_SIZE (160) bytes, 16-aligned, named in frame.h:
 *   0: x19 x20  16: x21 x22  32: x23 x24  48: x25 x26  64: x27 x28
 *  80: x29 x30  96: d8 d9  112: d10 d11  128: d12 d13  144: d14 d15
 * We resume with ret, although the return-address predictor did not see the
 * call it returns from: an indirect br would be checked by BTI, and the return
 * address it lands on has no landing pad, so any BTI-guarded program would
 * fault at the first switch. Each entry point starts with a landing pad (bti
 * c, a hint: a no-op before ARMv8.5), and the property note below marks this
 * file BTI-compatible.
 */
#include "frame.h"

	.text
	.globl	arch_switch
	.hidden	arch_switch
	.type	arch_switch, %function
	.p2align 4
arch_switch:
	.cfi_startproc
	hint	#34		/* bti c */
	sub	sp, sp, #FRAME_SIZE
	.cfi_def_cfa_offset FRAME_SIZE
	stp	x19, x20, [sp, #FRAME_X19]
	.cfi_rel_offset x19, FRAME_X19
	.cfi_rel_offset x20, FRAME_X20
	stp	x21, x22, [sp, #FRAME_X21]
	.cfi_rel_offset x21, FRAME_X21
	.cfi_rel_offset x22, FRAME_X22
	stp	x23, x24, [sp, #FRAME_X23]
	.cfi_rel_offset x23, FRAME_X23
	.cfi_rel_offset x24, FRAME_X24
	stp	x25, x26, [sp, #FRAME_X25]
	.cfi_rel_offset x25, FRAME_X25
	.cfi_rel_offset x26, FRAME_X26
	stp	x27, x28, [sp, #FRAME_X27]
	.cfi_rel_offset x27, FRAME_X27
	.cfi_rel_offset x28, FRAME_X28
	stp	x29, x30, [sp, #FRAME_X29]
	.cfi_rel_offset x29, FRAME_X29
	.cfi_rel_offset x30, FRAME_X30
	stp	d8, d9, [sp, #FRAME_D8]
	.cfi_rel_offset d8, FRAME_D8
	.cfi_rel_offset d9, FRAME_D9
	stp	d10, d11, [sp, #FRAME_D10]
	.cfi_rel_offset d10, FRAME_D10
	.cfi_rel_offset d11, FRAME_D11
	stp	d12, d13, [sp, #FRAME_D12]
	.cfi_rel_offset d12, FRAME_D12
	.cfi_rel_offset d13, FRAME_D13
	stp	d14, d15, [sp, #FRAME_D14]
	.cfi_rel_offset d14, FRAME_D14
	.cfi_rel_offset d15, FRAME_D15
	mov	x9, sp
	str	x9, [x0]

	/* The other context's frame has the same layout, so the CFI above
	 * now describes it: an unwinder stopped here walks the incoming
	 * context's stack. */
	mov	sp, x1
	ldp	x19, x20, [sp, #FRAME_X19]
	ldp	x21, x22, [sp, #FRAME_X21]
	ldp	x23, x24, [sp, #FRAME_X23]
	ldp	x25, x26, [sp, #FRAME_X25]
	ldp	x27, x28, [sp, #FRAME_X27]
	ldp	x29, x30, [sp, #FRAME_X29]
	ldp	d8, d9, [sp, #FRAME_D8]
	ldp	d10, d11, [sp, #FRAME_D10]
	ldp	d12, d13, [sp, #FRAME_D12]
	ldp	d14, d15, [sp, #FRAME_D14]
	.cfi_restore x19
	.cfi_restore x20
	.cfi_restore x21
	.cfi_restore x22
	.cfi_restore x23
	.cfi_restore x24
	.cfi_restore x25
	.cfi_restore x26
	.cfi_restore x27
	.cfi_restore x28
	.cfi_restore x29
	.cfi_restore x30
	.cfi_restore d8
	.cfi_restore d9
	.cfi_restore d10
	.cfi_restore d11
	.cfi_restore d12
	.cfi_restore d13
	.cfi_restore d14
	.cfi_restore d15
	add	sp, sp, #FRAME_SIZE
	.cfi_def_cfa_offset 0
	ret
	.cfi_endproc
	.size	arch_switch, .-arch_switch

/* The first code a new context runs: frame.c left entry in x19, its argument
 * in x20. Unwinders stop here. */
	.globl	arch_fiber_start
	.hidden	arch_fiber_start
	.type	arch_fiber_start, %function
	.p2align 4
arch_fiber_start:
	.cfi_startproc
	.cfi_undefined x30
	/* A fresh context resumes at arch_fiber_entry, just past this nop: an
	 * unwinder looks a caller up at its return address minus one, which
	 * then falls here, in this function and its FDE (return address
	 * undefined: the walk ends), not at the end of arch_switch. */
	nop
	.globl	arch_fiber_entry
	.hidden	arch_fiber_entry
arch_fiber_entry:
	hint	#38		/* bti jc */
	mov	x29, #0
	mov	x0, x20
	blr	x19
	brk	#0
	.cfi_endproc
	.size	arch_fiber_start, .-arch_fiber_start

	.section .note.GNU-stack,"",%progbits

/* GNU_PROPERTY_AARCH64_FEATURE_1_AND = BTI: without this note the linker
 * marks any program that links this file as not BTI-compatible. */
	.section .note.gnu.property,"a"
	.p2align 3
	.long	4		/* name size */
	.long	16		/* descriptor size */
	.long	5		/* NT_GNU_PROPERTY_TYPE_0 */
	.asciz	"GNU"
	.long	0xc0000000	/* GNU_PROPERTY_AARCH64_FEATURE_1_AND */
	.long	4		/* data size */
	.long	1		/* GNU_PROPERTY_AARCH64_FEATURE_1_BTI */
	.p2align 3
