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
 * To preempt a thread, shim__trap copies the frame onto the thread's own stack
 * and returns with sepc = arch_preempt_resume, sp = a0 = that copy, interrupts
 * off. There the thread saves its FP registers, switches away like any
 * cooperative thread, and on its return restores everything and srets to the
 * interrupted instruction.
 */
#define FRAME 288
#define REG(n) (n * 8)

.macro SAVE_GPRS
	sd	x1, REG(1)(sp)
	sd	x3, REG(3)(sp)
	sd	x4, REG(4)(sp)
	sd	x5, REG(5)(sp)
	sd	x6, REG(6)(sp)
	sd	x7, REG(7)(sp)
	sd	x8, REG(8)(sp)
	sd	x9, REG(9)(sp)
	sd	x10, REG(10)(sp)
	sd	x11, REG(11)(sp)
	sd	x12, REG(12)(sp)
	sd	x13, REG(13)(sp)
	sd	x14, REG(14)(sp)
	sd	x15, REG(15)(sp)
	sd	x16, REG(16)(sp)
	sd	x17, REG(17)(sp)
	sd	x18, REG(18)(sp)
	sd	x19, REG(19)(sp)
	sd	x20, REG(20)(sp)
	sd	x21, REG(21)(sp)
	sd	x22, REG(22)(sp)
	sd	x23, REG(23)(sp)
	sd	x24, REG(24)(sp)
	sd	x25, REG(25)(sp)
	sd	x26, REG(26)(sp)
	sd	x27, REG(27)(sp)
	sd	x28, REG(28)(sp)
	sd	x29, REG(29)(sp)
	sd	x30, REG(30)(sp)
	sd	x31, REG(31)(sp)
.endm

/* Restore sepc, sstatus and every register from the frame at sp, sp last. */
.macro RESTORE_AND_SRET
	ld	t0, REG(32)(sp)
	csrw	sepc, t0
	ld	t0, REG(33)(sp)
	csrw	sstatus, t0
	ld	x1, REG(1)(sp)
	ld	x3, REG(3)(sp)
	ld	x4, REG(4)(sp)
	ld	x5, REG(5)(sp)
	ld	x6, REG(6)(sp)
	ld	x7, REG(7)(sp)
	ld	x8, REG(8)(sp)
	ld	x9, REG(9)(sp)
	ld	x10, REG(10)(sp)
	ld	x11, REG(11)(sp)
	ld	x12, REG(12)(sp)
	ld	x13, REG(13)(sp)
	ld	x14, REG(14)(sp)
	ld	x15, REG(15)(sp)
	ld	x16, REG(16)(sp)
	ld	x17, REG(17)(sp)
	ld	x18, REG(18)(sp)
	ld	x19, REG(19)(sp)
	ld	x20, REG(20)(sp)
	ld	x21, REG(21)(sp)
	ld	x22, REG(22)(sp)
	ld	x23, REG(23)(sp)
	ld	x24, REG(24)(sp)
	ld	x25, REG(25)(sp)
	ld	x26, REG(26)(sp)
	ld	x27, REG(27)(sp)
	ld	x28, REG(28)(sp)
	ld	x29, REG(29)(sp)
	ld	x30, REG(30)(sp)
	ld	x31, REG(31)(sp)
	ld	sp, REG(2)(sp)
	sret
.endm

	.text
	.globl	arch_trap_entry
	.type	arch_trap_entry, @function
	.p2align 4
arch_trap_entry:
	csrrw	sp, sscratch, sp
	beqz	sp, 1f
	addi	sp, sp, -FRAME
	SAVE_GPRS
	addi	t0, sp, FRAME		/* the trap stack's top */
	j	2f
1:	csrr	sp, sscratch		/* nested: below the handler's sp */
	addi	sp, sp, -FRAME
	SAVE_GPRS
	li	t0, 0
2:	sd	t0, REG(0)(sp)
	csrr	t0, sscratch
	sd	t0, REG(2)(sp)
	csrw	sscratch, zero
	csrr	t0, sepc
	sd	t0, REG(32)(sp)
	csrr	t0, sstatus
	sd	t0, REG(33)(sp)
	csrr	t0, scause
	sd	t0, REG(34)(sp)
	csrr	t0, stval
	sd	t0, REG(35)(sp)
	mv	a0, sp
	call	shim__trap
	ld	t0, REG(0)(sp)
	csrw	sscratch, t0
	RESTORE_AND_SRET
	.size	arch_trap_entry, .-arch_trap_entry

#define FPFRAME 272
	.globl	arch_preempt_resume
	.type	arch_preempt_resume, @function
	.p2align 2
arch_preempt_resume:
	addi	sp, sp, -FPFRAME
#ifdef __riscv_flen
	fsd	f0, 0(sp)
	fsd	f1, 8(sp)
	fsd	f2, 16(sp)
	fsd	f3, 24(sp)
	fsd	f4, 32(sp)
	fsd	f5, 40(sp)
	fsd	f6, 48(sp)
	fsd	f7, 56(sp)
	fsd	f8, 64(sp)
	fsd	f9, 72(sp)
	fsd	f10, 80(sp)
	fsd	f11, 88(sp)
	fsd	f12, 96(sp)
	fsd	f13, 104(sp)
	fsd	f14, 112(sp)
	fsd	f15, 120(sp)
	fsd	f16, 128(sp)
	fsd	f17, 136(sp)
	fsd	f18, 144(sp)
	fsd	f19, 152(sp)
	fsd	f20, 160(sp)
	fsd	f21, 168(sp)
	fsd	f22, 176(sp)
	fsd	f23, 184(sp)
	fsd	f24, 192(sp)
	fsd	f25, 200(sp)
	fsd	f26, 208(sp)
	fsd	f27, 216(sp)
	fsd	f28, 224(sp)
	fsd	f29, 232(sp)
	fsd	f30, 240(sp)
	fsd	f31, 248(sp)
	frcsr	t0
	sd	t0, 256(sp)
#endif
	call	shim__preempted
#ifdef __riscv_flen
	ld	t0, 256(sp)
	fscsr	t0
	fld	f0, 0(sp)
	fld	f1, 8(sp)
	fld	f2, 16(sp)
	fld	f3, 24(sp)
	fld	f4, 32(sp)
	fld	f5, 40(sp)
	fld	f6, 48(sp)
	fld	f7, 56(sp)
	fld	f8, 64(sp)
	fld	f9, 72(sp)
	fld	f10, 80(sp)
	fld	f11, 88(sp)
	fld	f12, 96(sp)
	fld	f13, 104(sp)
	fld	f14, 112(sp)
	fld	f15, 120(sp)
	fld	f16, 128(sp)
	fld	f17, 136(sp)
	fld	f18, 144(sp)
	fld	f19, 152(sp)
	fld	f20, 160(sp)
	fld	f21, 168(sp)
	fld	f22, 176(sp)
	fld	f23, 184(sp)
	fld	f24, 192(sp)
	fld	f25, 200(sp)
	fld	f26, 208(sp)
	fld	f27, 216(sp)
	fld	f28, 224(sp)
	fld	f29, 232(sp)
	fld	f30, 240(sp)
	fld	f31, 248(sp)
#endif
	addi	sp, sp, FPFRAME
	/* Interrupts stay off until sret: the frame's sstatus has SPIE set. */
	RESTORE_AND_SRET
	.size	arch_preempt_resume, .-arch_preempt_resume

	.section .note.GNU-stack,"",@progbits
