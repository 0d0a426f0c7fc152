/* SPDX-License-Identifier: MIT */
/*
 * void arch_switch(void **save_sp, void *new_sp);
 * void arch_fiber_start(void);       (first frame only, see frame.c)
 *
 * AAPCS64: x19-x28, the frame pointer x29, the link register x30, sp and the
 * low 64 bits of v8-v15 (d8-d15) are callee-saved. 160 bytes, 16-aligned:
 *   0: x19 x20  16: x21 x22  32: x23 x24  48: x25 x26  64: x27 x28
 *  80: x29 x30  96: d8 d9  112: d10 d11  128: d12 d13  144: d14 d15
 * We resume with br x30, an indirect branch, not ret: a ret whose target the
 * return-address predictor did not see called is mispredicted every time.
 */
	.text
	.globl	arch_switch
	.type	arch_switch, %function
	.p2align 4
arch_switch:
	.cfi_startproc
	sub	sp, sp, #160
	stp	x19, x20, [sp, #0]
	stp	x21, x22, [sp, #16]
	stp	x23, x24, [sp, #32]
	stp	x25, x26, [sp, #48]
	stp	x27, x28, [sp, #64]
	stp	x29, x30, [sp, #80]
	stp	d8, d9, [sp, #96]
	stp	d10, d11, [sp, #112]
	stp	d12, d13, [sp, #128]
	stp	d14, d15, [sp, #144]
	mov	x9, sp
	str	x9, [x0]

	mov	sp, x1
	ldp	x19, x20, [sp, #0]
	ldp	x21, x22, [sp, #16]
	ldp	x23, x24, [sp, #32]
	ldp	x25, x26, [sp, #48]
	ldp	x27, x28, [sp, #64]
	ldp	x29, x30, [sp, #80]
	ldp	d8, d9, [sp, #96]
	ldp	d10, d11, [sp, #112]
	ldp	d12, d13, [sp, #128]
	ldp	d14, d15, [sp, #144]
	add	sp, sp, #160
	br	x30
	.cfi_endproc
	.size	arch_switch, .-arch_switch

/* The first code a new context runs: frame.c left entry in x19, its argument
 * in x20. Unwinders stop here. */
	.globl	arch_fiber_start
	.type	arch_fiber_start, %function
	.p2align 4
arch_fiber_start:
	.cfi_startproc
	.cfi_undefined x30
	mov	x29, #0
	mov	x0, x20
	blr	x19
	brk	#0
	.cfi_endproc
	.size	arch_fiber_start, .-arch_fiber_start

	.section .note.GNU-stack,"",%progbits
