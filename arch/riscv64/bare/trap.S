/* SPDX-License-Identifier: MIT */
/*
 * void arch_trap_entry(void);      stvec points here (direct mode)
 * void arch_preempt_resume(void);  where a preempted thread continues
 *
 * Every trap (interrupt or exception) is taken in S-mode on the hart's own
 * trap stack, whose top sscratch holds: the interrupted sp may be the very
 * guard page that faulted, so nothing may be pushed on it. The frame is a
 * struct trap_frame (arch_bare_cpu.h). While C runs, sscratch is 0: a trap
 * taken inside the handler (the page fault of a stack page the handler
 * touches first, which demand paging maps and returns from) finds 0 there
 * and puts its frame below the handler's own sp, leaving the handler's
 * frames whole. Its x0 slot holds what sscratch is on the way out: the
 * trap stack's top, or 0 for a nested trap.
 *
 * To preempt a thread, shim_trap copies the frame onto the thread's own stack
 * and returns with sepc = arch_preempt_resume, sp = a0 = that copy, interrupts
 * off. There the thread saves its FP registers, switches away like any
 * cooperative thread, and on its return restores everything and srets to the
 * interrupted instruction.
 */
#include "trap_frame.h"

.macro SAVE_GPRS
	sd	x1, TRAP_X(1)(sp)
	sd	x3, TRAP_X(3)(sp)
	sd	x4, TRAP_X(4)(sp)
	sd	x5, TRAP_X(5)(sp)
	sd	x6, TRAP_X(6)(sp)
	sd	x7, TRAP_X(7)(sp)
	sd	x8, TRAP_X(8)(sp)
	sd	x9, TRAP_X(9)(sp)
	sd	x10, TRAP_X(10)(sp)
	sd	x11, TRAP_X(11)(sp)
	sd	x12, TRAP_X(12)(sp)
	sd	x13, TRAP_X(13)(sp)
	sd	x14, TRAP_X(14)(sp)
	sd	x15, TRAP_X(15)(sp)
	sd	x16, TRAP_X(16)(sp)
	sd	x17, TRAP_X(17)(sp)
	sd	x18, TRAP_X(18)(sp)
	sd	x19, TRAP_X(19)(sp)
	sd	x20, TRAP_X(20)(sp)
	sd	x21, TRAP_X(21)(sp)
	sd	x22, TRAP_X(22)(sp)
	sd	x23, TRAP_X(23)(sp)
	sd	x24, TRAP_X(24)(sp)
	sd	x25, TRAP_X(25)(sp)
	sd	x26, TRAP_X(26)(sp)
	sd	x27, TRAP_X(27)(sp)
	sd	x28, TRAP_X(28)(sp)
	sd	x29, TRAP_X(29)(sp)
	sd	x30, TRAP_X(30)(sp)
	sd	x31, TRAP_X(31)(sp)
.endm

/* Restore sepc, sstatus and every register from the frame at sp, sp last. */
.macro RESTORE_AND_SRET
	ld	t0, TRAP_SEPC(sp)
	csrw	sepc, t0
	ld	t0, TRAP_SSTATUS(sp)
	csrw	sstatus, t0
	ld	x1, TRAP_X(1)(sp)
	ld	x3, TRAP_X(3)(sp)
	ld	x4, TRAP_X(4)(sp)
	ld	x5, TRAP_X(5)(sp)
	ld	x6, TRAP_X(6)(sp)
	ld	x7, TRAP_X(7)(sp)
	ld	x8, TRAP_X(8)(sp)
	ld	x9, TRAP_X(9)(sp)
	ld	x10, TRAP_X(10)(sp)
	ld	x11, TRAP_X(11)(sp)
	ld	x12, TRAP_X(12)(sp)
	ld	x13, TRAP_X(13)(sp)
	ld	x14, TRAP_X(14)(sp)
	ld	x15, TRAP_X(15)(sp)
	ld	x16, TRAP_X(16)(sp)
	ld	x17, TRAP_X(17)(sp)
	ld	x18, TRAP_X(18)(sp)
	ld	x19, TRAP_X(19)(sp)
	ld	x20, TRAP_X(20)(sp)
	ld	x21, TRAP_X(21)(sp)
	ld	x22, TRAP_X(22)(sp)
	ld	x23, TRAP_X(23)(sp)
	ld	x24, TRAP_X(24)(sp)
	ld	x25, TRAP_X(25)(sp)
	ld	x26, TRAP_X(26)(sp)
	ld	x27, TRAP_X(27)(sp)
	ld	x28, TRAP_X(28)(sp)
	ld	x29, TRAP_X(29)(sp)
	ld	x30, TRAP_X(30)(sp)
	ld	x31, TRAP_X(31)(sp)
	ld	sp, TRAP_X(2)(sp)
	sret
.endm

	.text
	.globl	arch_trap_entry
	.hidden	arch_trap_entry
	.type	arch_trap_entry, @function
	.p2align 4
arch_trap_entry:
	csrrw	sp, sscratch, sp
	beqz	sp, 1f
	addi	sp, sp, -TRAP_FRAME_SIZE
	SAVE_GPRS
	addi	t0, sp, TRAP_FRAME_SIZE		/* the trap stack's top */
	j	2f
1:	csrr	sp, sscratch		/* nested: below the handler's sp */
	addi	sp, sp, -TRAP_FRAME_SIZE
	SAVE_GPRS
	li	t0, 0
2:	sd	t0, TRAP_X(0)(sp)
	csrr	t0, sscratch
	sd	t0, TRAP_X(2)(sp)
	csrw	sscratch, zero
	csrr	t0, sepc
	sd	t0, TRAP_SEPC(sp)
	csrr	t0, sstatus
	sd	t0, TRAP_SSTATUS(sp)
	csrr	t0, scause
	sd	t0, TRAP_SCAUSE(sp)
	csrr	t0, stval
	sd	t0, TRAP_STVAL(sp)
	mv	a0, sp
	call	shim_trap
	ld	t0, TRAP_X(0)(sp)
	csrw	sscratch, t0
	RESTORE_AND_SRET
	.size	arch_trap_entry, .-arch_trap_entry

/*
 * void arch_early_trap(void): stvec from _start's first instructions (and
 * arch_hart_entry's) until the shim installs arch_trap_entry. Nothing is
 * set up yet: the interrupted sp and gp may be anything, and sscratch is
 * not yet the trap stack's. So it takes a stack of its own, saves a
 * struct trap_frame there, sets gp and calls shim_early_trap, which
 * reports the trap and ends the run: it never returns. One stack for
 * every hart: a second hart's early trap at the same moment would share
 * it (only the boot hart runs that early, bar a firmware's stray hart
 * that touches nothing).
 */
	.globl	arch_early_trap
	.hidden	arch_early_trap
	.type	arch_early_trap, @function
	.p2align 4
arch_early_trap:
	csrw	sscratch, sp
.option push
.option norelax
	la	sp, early_trap_stack_top
.option pop
	addi	sp, sp, -TRAP_FRAME_SIZE
	SAVE_GPRS
	sd	zero, TRAP_X(0)(sp)
	csrr	t0, sscratch
	sd	t0, TRAP_X(2)(sp)
	csrr	t0, sepc
	sd	t0, TRAP_SEPC(sp)
	csrr	t0, sstatus
	sd	t0, TRAP_SSTATUS(sp)
	csrr	t0, scause
	sd	t0, TRAP_SCAUSE(sp)
	csrr	t0, stval
	sd	t0, TRAP_STVAL(sp)
.option push
.option norelax
	la	gp, __global_pointer$
.option pop
	mv	a0, sp
	call	shim_early_trap
1:	wfi
	j	1b
	.size	arch_early_trap, .-arch_early_trap

	.globl	arch_preempt_resume
	.hidden	arch_preempt_resume
	.type	arch_preempt_resume, @function
	.p2align 2
arch_preempt_resume:
	addi	sp, sp, -FP_FRAME_SIZE
#ifdef __riscv_flen
	fsd	f0, FP_F(0)(sp)
	fsd	f1, FP_F(1)(sp)
	fsd	f2, FP_F(2)(sp)
	fsd	f3, FP_F(3)(sp)
	fsd	f4, FP_F(4)(sp)
	fsd	f5, FP_F(5)(sp)
	fsd	f6, FP_F(6)(sp)
	fsd	f7, FP_F(7)(sp)
	fsd	f8, FP_F(8)(sp)
	fsd	f9, FP_F(9)(sp)
	fsd	f10, FP_F(10)(sp)
	fsd	f11, FP_F(11)(sp)
	fsd	f12, FP_F(12)(sp)
	fsd	f13, FP_F(13)(sp)
	fsd	f14, FP_F(14)(sp)
	fsd	f15, FP_F(15)(sp)
	fsd	f16, FP_F(16)(sp)
	fsd	f17, FP_F(17)(sp)
	fsd	f18, FP_F(18)(sp)
	fsd	f19, FP_F(19)(sp)
	fsd	f20, FP_F(20)(sp)
	fsd	f21, FP_F(21)(sp)
	fsd	f22, FP_F(22)(sp)
	fsd	f23, FP_F(23)(sp)
	fsd	f24, FP_F(24)(sp)
	fsd	f25, FP_F(25)(sp)
	fsd	f26, FP_F(26)(sp)
	fsd	f27, FP_F(27)(sp)
	fsd	f28, FP_F(28)(sp)
	fsd	f29, FP_F(29)(sp)
	fsd	f30, FP_F(30)(sp)
	fsd	f31, FP_F(31)(sp)
	frcsr	t0
	sd	t0, FP_FCSR(sp)
#endif
	call	shim_preempted
#ifdef __riscv_flen
	ld	t0, FP_FCSR(sp)
	fscsr	t0
	fld	f0, FP_F(0)(sp)
	fld	f1, FP_F(1)(sp)
	fld	f2, FP_F(2)(sp)
	fld	f3, FP_F(3)(sp)
	fld	f4, FP_F(4)(sp)
	fld	f5, FP_F(5)(sp)
	fld	f6, FP_F(6)(sp)
	fld	f7, FP_F(7)(sp)
	fld	f8, FP_F(8)(sp)
	fld	f9, FP_F(9)(sp)
	fld	f10, FP_F(10)(sp)
	fld	f11, FP_F(11)(sp)
	fld	f12, FP_F(12)(sp)
	fld	f13, FP_F(13)(sp)
	fld	f14, FP_F(14)(sp)
	fld	f15, FP_F(15)(sp)
	fld	f16, FP_F(16)(sp)
	fld	f17, FP_F(17)(sp)
	fld	f18, FP_F(18)(sp)
	fld	f19, FP_F(19)(sp)
	fld	f20, FP_F(20)(sp)
	fld	f21, FP_F(21)(sp)
	fld	f22, FP_F(22)(sp)
	fld	f23, FP_F(23)(sp)
	fld	f24, FP_F(24)(sp)
	fld	f25, FP_F(25)(sp)
	fld	f26, FP_F(26)(sp)
	fld	f27, FP_F(27)(sp)
	fld	f28, FP_F(28)(sp)
	fld	f29, FP_F(29)(sp)
	fld	f30, FP_F(30)(sp)
	fld	f31, FP_F(31)(sp)
#endif
	addi	sp, sp, FP_FRAME_SIZE
	/* Interrupts stay off until sret: the frame's sstatus has SPIE set. */
	RESTORE_AND_SRET
	.size	arch_preempt_resume, .-arch_preempt_resume

	.section .bss.early_trap_stack, "aw", @nobits
	.p2align 4
early_trap_stack:
	.space	4096
early_trap_stack_top:

	.section .note.GNU-stack,"",@progbits
