/* SPDX-License-Identifier: MIT */
/*
 * void arch_switch(void **save_sp, void *new_sp);
 * void arch_fiber_start(void);       (first frame only, see frame.c)
 *
 * RISC-V psABI: ra, sp, s0-s11 and, with the F/D extensions, fs0-fs11 are
 * callee-saved. Vector registers are caller-saved, so a cooperative switch
 * never saves them. 208 bytes (16-aligned):
 *   0: ra  8..96: s0-s11  104..192: fs0-fs11
 * We resume with jr t1, not ret: jalr through ra or t0 is a return hint to the
 * return-address stack, and a return the stack did not see called mispredicts.
 */
	.text
	.globl	arch_switch
	.type	arch_switch, @function
	.p2align 2
arch_switch:
	.cfi_startproc
	addi	sp, sp, -208
	.cfi_def_cfa_offset 208
	sd	ra, 0(sp)
	.cfi_rel_offset ra, 0
	sd	s0, 8(sp)
	.cfi_rel_offset s0, 8
	sd	s1, 16(sp)
	.cfi_rel_offset s1, 16
	sd	s2, 24(sp)
	.cfi_rel_offset s2, 24
	sd	s3, 32(sp)
	.cfi_rel_offset s3, 32
	sd	s4, 40(sp)
	.cfi_rel_offset s4, 40
	sd	s5, 48(sp)
	.cfi_rel_offset s5, 48
	sd	s6, 56(sp)
	.cfi_rel_offset s6, 56
	sd	s7, 64(sp)
	.cfi_rel_offset s7, 64
	sd	s8, 72(sp)
	.cfi_rel_offset s8, 72
	sd	s9, 80(sp)
	.cfi_rel_offset s9, 80
	sd	s10, 88(sp)
	.cfi_rel_offset s10, 88
	sd	s11, 96(sp)
	.cfi_rel_offset s11, 96
#ifdef __riscv_flen
	fsd	fs0, 104(sp)
	.cfi_rel_offset fs0, 104
	fsd	fs1, 112(sp)
	.cfi_rel_offset fs1, 112
	fsd	fs2, 120(sp)
	.cfi_rel_offset fs2, 120
	fsd	fs3, 128(sp)
	.cfi_rel_offset fs3, 128
	fsd	fs4, 136(sp)
	.cfi_rel_offset fs4, 136
	fsd	fs5, 144(sp)
	.cfi_rel_offset fs5, 144
	fsd	fs6, 152(sp)
	.cfi_rel_offset fs6, 152
	fsd	fs7, 160(sp)
	.cfi_rel_offset fs7, 160
	fsd	fs8, 168(sp)
	.cfi_rel_offset fs8, 168
	fsd	fs9, 176(sp)
	.cfi_rel_offset fs9, 176
	fsd	fs10, 184(sp)
	.cfi_rel_offset fs10, 184
	fsd	fs11, 192(sp)
	.cfi_rel_offset fs11, 192
#endif
	sd	sp, 0(a0)

	/* The other context's frame has the same layout, so the CFI above
	 * now describes it: an unwinder stopped here walks the incoming
	 * context's stack (its resume address is in t1 until ra gets it). */
	mv	sp, a1
	ld	t1, 0(sp)
	.cfi_register ra, t1
	ld	s0, 8(sp)
	ld	s1, 16(sp)
	ld	s2, 24(sp)
	ld	s3, 32(sp)
	ld	s4, 40(sp)
	ld	s5, 48(sp)
	ld	s6, 56(sp)
	ld	s7, 64(sp)
	ld	s8, 72(sp)
	ld	s9, 80(sp)
	ld	s10, 88(sp)
	ld	s11, 96(sp)
#ifdef __riscv_flen
	fld	fs0, 104(sp)
	fld	fs1, 112(sp)
	fld	fs2, 120(sp)
	fld	fs3, 128(sp)
	fld	fs4, 136(sp)
	fld	fs5, 144(sp)
	fld	fs6, 152(sp)
	fld	fs7, 160(sp)
	fld	fs8, 168(sp)
	fld	fs9, 176(sp)
	fld	fs10, 184(sp)
	fld	fs11, 192(sp)
#endif
	mv	ra, t1
	.cfi_restore ra
	.cfi_restore s0
	.cfi_restore s1
	.cfi_restore s2
	.cfi_restore s3
	.cfi_restore s4
	.cfi_restore s5
	.cfi_restore s6
	.cfi_restore s7
	.cfi_restore s8
	.cfi_restore s9
	.cfi_restore s10
	.cfi_restore s11
#ifdef __riscv_flen
	.cfi_restore fs0
	.cfi_restore fs1
	.cfi_restore fs2
	.cfi_restore fs3
	.cfi_restore fs4
	.cfi_restore fs5
	.cfi_restore fs6
	.cfi_restore fs7
	.cfi_restore fs8
	.cfi_restore fs9
	.cfi_restore fs10
	.cfi_restore fs11
#endif
	addi	sp, sp, 208
	.cfi_def_cfa_offset 0
	jr	t1
	.cfi_endproc
	.size	arch_switch, .-arch_switch

/* The first code a new context runs: frame.c left entry in s1, its argument
 * in s2. Unwinders stop here. */
	.globl	arch_fiber_start
	.type	arch_fiber_start, @function
	.p2align 2
arch_fiber_start:
	.cfi_startproc
	.cfi_undefined ra
	/* A fresh context resumes at arch_fiber_entry, just past this nop: an
	 * unwinder looks a caller up at its return address minus one, which
	 * then falls here, in this function and its FDE (return address
	 * undefined: the walk ends), not at the end of arch_switch. */
	nop
	.globl	arch_fiber_entry
arch_fiber_entry:
	li	s0, 0
	mv	a0, s2
	jalr	s1
	unimp
	.cfi_endproc
	.size	arch_fiber_start, .-arch_fiber_start

	.section .note.GNU-stack,"",@progbits
