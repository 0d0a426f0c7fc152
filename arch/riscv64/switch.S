/* SPDX-License-Identifier: MIT */
/*
 * void arch_switch(void **save_sp, void *new_sp);
 * void arch_fiber_start(void);       (first frame only, see frame.c)
 *
 * RISC-V psABI: ra, sp, s0-s11 and, with the F/D extensions, fs0-fs11 are
 * callee-saved. Vector registers are caller-saved, so a cooperative switch
 * never saves them. FRAME_SIZE (208) bytes, 16-aligned, named in frame.h:
 *   0: ra  8..96: s0-s11  104..192: fs0-fs11
 * We resume with jr t1, not ret: jalr through ra or t0 is a return hint to the
 * return-address stack, and a return the stack did not see called mispredicts.
 */
#include "frame.h"

	.text
	.globl	arch_switch
	.hidden	arch_switch
	.type	arch_switch, @function
	.p2align 2
arch_switch:
	.cfi_startproc
	addi	sp, sp, -FRAME_SIZE
	.cfi_def_cfa_offset FRAME_SIZE
	sd	ra, FRAME_RA(sp)
	.cfi_rel_offset ra, FRAME_RA
	sd	s0, FRAME_S0(sp)
	.cfi_rel_offset s0, FRAME_S0
	sd	s1, FRAME_S1(sp)
	.cfi_rel_offset s1, FRAME_S1
	sd	s2, FRAME_S2(sp)
	.cfi_rel_offset s2, FRAME_S2
	sd	s3, FRAME_S3(sp)
	.cfi_rel_offset s3, FRAME_S3
	sd	s4, FRAME_S4(sp)
	.cfi_rel_offset s4, FRAME_S4
	sd	s5, FRAME_S5(sp)
	.cfi_rel_offset s5, FRAME_S5
	sd	s6, FRAME_S6(sp)
	.cfi_rel_offset s6, FRAME_S6
	sd	s7, FRAME_S7(sp)
	.cfi_rel_offset s7, FRAME_S7
	sd	s8, FRAME_S8(sp)
	.cfi_rel_offset s8, FRAME_S8
	sd	s9, FRAME_S9(sp)
	.cfi_rel_offset s9, FRAME_S9
	sd	s10, FRAME_S10(sp)
	.cfi_rel_offset s10, FRAME_S10
	sd	s11, FRAME_S11(sp)
	.cfi_rel_offset s11, FRAME_S11
#ifdef __riscv_flen
	fsd	fs0, FRAME_FS0(sp)
	.cfi_rel_offset fs0, FRAME_FS0
	fsd	fs1, FRAME_FS1(sp)
	.cfi_rel_offset fs1, FRAME_FS1
	fsd	fs2, FRAME_FS2(sp)
	.cfi_rel_offset fs2, FRAME_FS2
	fsd	fs3, FRAME_FS3(sp)
	.cfi_rel_offset fs3, FRAME_FS3
	fsd	fs4, FRAME_FS4(sp)
	.cfi_rel_offset fs4, FRAME_FS4
	fsd	fs5, FRAME_FS5(sp)
	.cfi_rel_offset fs5, FRAME_FS5
	fsd	fs6, FRAME_FS6(sp)
	.cfi_rel_offset fs6, FRAME_FS6
	fsd	fs7, FRAME_FS7(sp)
	.cfi_rel_offset fs7, FRAME_FS7
	fsd	fs8, FRAME_FS8(sp)
	.cfi_rel_offset fs8, FRAME_FS8
	fsd	fs9, FRAME_FS9(sp)
	.cfi_rel_offset fs9, FRAME_FS9
	fsd	fs10, FRAME_FS10(sp)
	.cfi_rel_offset fs10, FRAME_FS10
	fsd	fs11, FRAME_FS11(sp)
	.cfi_rel_offset fs11, FRAME_FS11
#endif
	sd	sp, 0(a0)

	/* The other context's frame has the same layout, so the CFI above
	 * now describes it: an unwinder stopped here walks the incoming
	 * context's stack (its resume address is in t1 until ra gets it). */
	mv	sp, a1
	ld	t1, 0(sp)
	.cfi_register ra, t1
	ld	s0, FRAME_S0(sp)
	ld	s1, FRAME_S1(sp)
	ld	s2, FRAME_S2(sp)
	ld	s3, FRAME_S3(sp)
	ld	s4, FRAME_S4(sp)
	ld	s5, FRAME_S5(sp)
	ld	s6, FRAME_S6(sp)
	ld	s7, FRAME_S7(sp)
	ld	s8, FRAME_S8(sp)
	ld	s9, FRAME_S9(sp)
	ld	s10, FRAME_S10(sp)
	ld	s11, FRAME_S11(sp)
#ifdef __riscv_flen
	fld	fs0, FRAME_FS0(sp)
	fld	fs1, FRAME_FS1(sp)
	fld	fs2, FRAME_FS2(sp)
	fld	fs3, FRAME_FS3(sp)
	fld	fs4, FRAME_FS4(sp)
	fld	fs5, FRAME_FS5(sp)
	fld	fs6, FRAME_FS6(sp)
	fld	fs7, FRAME_FS7(sp)
	fld	fs8, FRAME_FS8(sp)
	fld	fs9, FRAME_FS9(sp)
	fld	fs10, FRAME_FS10(sp)
	fld	fs11, FRAME_FS11(sp)
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
	addi	sp, sp, FRAME_SIZE
	.cfi_def_cfa_offset 0
	jr	t1
	.cfi_endproc
	.size	arch_switch, .-arch_switch

/* The first code a new context runs: frame.c left entry in s1, its argument
 * in s2. Unwinders stop here. */
	.globl	arch_fiber_start
	.hidden	arch_fiber_start
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
	.hidden	arch_fiber_entry
arch_fiber_entry:
	li	s0, 0
	mv	a0, s2
	jalr	s1
	unimp
	.cfi_endproc
	.size	arch_fiber_start, .-arch_fiber_start

	.section .note.GNU-stack,"",@progbits
