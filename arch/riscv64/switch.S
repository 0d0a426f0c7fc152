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
	sd	ra, 0(sp)
	sd	s0, 8(sp)
	sd	s1, 16(sp)
	sd	s2, 24(sp)
	sd	s3, 32(sp)
	sd	s4, 40(sp)
	sd	s5, 48(sp)
	sd	s6, 56(sp)
	sd	s7, 64(sp)
	sd	s8, 72(sp)
	sd	s9, 80(sp)
	sd	s10, 88(sp)
	sd	s11, 96(sp)
#ifdef __riscv_flen
	fsd	fs0, 104(sp)
	fsd	fs1, 112(sp)
	fsd	fs2, 120(sp)
	fsd	fs3, 128(sp)
	fsd	fs4, 136(sp)
	fsd	fs5, 144(sp)
	fsd	fs6, 152(sp)
	fsd	fs7, 160(sp)
	fsd	fs8, 168(sp)
	fsd	fs9, 176(sp)
	fsd	fs10, 184(sp)
	fsd	fs11, 192(sp)
#endif
	sd	sp, 0(a0)

	mv	sp, a1
	ld	t1, 0(sp)
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
	addi	sp, sp, 208
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
	li	s0, 0
	mv	a0, s2
	jalr	s1
	unimp
	.cfi_endproc
	.size	arch_fiber_start, .-arch_fiber_start

	.section .note.GNU-stack,"",@progbits
