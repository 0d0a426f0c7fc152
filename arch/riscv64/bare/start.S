/* SPDX-License-Identifier: MIT */
/*
 * void _start(unsigned long hartid, void *dtb);   entered by OpenSBI (or U-Boot)
 * void arch_hart_entry(unsigned long hartid, void *opaque);   entered by SBI HSM
 *
 * The first instructions of an S-mode payload. picolibc's crt0 touches mstatus
 * and so cannot run in S-mode; this one sets up only what C needs: gp, a boot
 * stack, the FPU enabled (sstatus.FS), the vector unit off (sstatus.VS: see
 * vector_off in arch_bare_cpu.h), interrupts off, bss cleared. The image
 * is loaded in RAM where it runs, so .data needs no copy. Then C takes over in
 * shim_boot (kernel-shim/bare/boot.c), which never returns.
 *
 * Its first instruction reads the time counter into arch_boot_entry (in
 * .data: the bss clear below leaves it), the firmware's hand-off on the
 * guest clock, for WEFT_BOOT_TIME's report (boot.c); its next ones point
 * stvec at arch_early_trap (trap.S), so that a trap before the shim's own
 * handler is installed is reported, not a hang, and keep sstatus as the
 * firmware left it in arch_boot_sstatus, for the boot line (early.c).
 *
 * One hart boots: the first to swap boot_lottery. Firmware may send more
 * than one hart here (an SBI without HSM does by design, and QEMU's OpenSBI
 * v1.1 with -smp 2 did, in about 1 boot of 50: a second hart cleared the
 * bss and ran shim_boot again under the first). Another hart touches
 * nothing: it stops itself through HSM's hart_stop, so that the boot hart
 * starts it the ordinary way (kernel-shim/bare/hart.c waits for it), and
 * with no HSM it waits in wfi forever.
 */
	.section .text.init.enter, "ax", @progbits
	.globl	_start
	.type	_start, @function
_start:
	.cfi_startproc
	.cfi_undefined ra
	rdtime	t2
.option push
.option norelax
	la	t0, arch_early_trap
.option pop
	csrw	stvec, t0
	csrr	t3, sstatus
	csrw	sie, zero
	la	t0, boot_lottery
	li	t1, 1
	amoswap.w.aq t1, t1, (t0)
	bnez	t1, 4f
.option push
.option norelax
	la	gp, __global_pointer$
.option pop
	li	t0, 2			/* SIE */
	csrc	sstatus, t0
	li	t0, 1 << 13		/* FS = Initial: the FPU is usable */
	csrs	sstatus, t0
	li	t0, 3 << 9		/* VS = Off */
	csrc	sstatus, t0
	fscsr	zero
	la	sp, boot_stack_top
	mv	tp, zero
	la	t0, arch_boot_entry
	sd	t2, 0(t0)
	la	t0, arch_boot_sstatus
	sd	t3, 0(t0)

	la	t0, __bss_start
	la	t1, __bss_end
1:	bgeu	t0, t1, 2f
	sd	zero, 0(t0)
	addi	t0, t0, 8
	j	1b
2:
	/* a0 = hartid, a1 = device tree, as OpenSBI passed them. */
	call	shim_boot
3:	wfi
	j	3b
	/* Not the boot hart: SBI HSM hart_stop (EID "HSM", FID 1); it returns
	 * only on failure. */
4:	li	a7, 0x48534D
	li	a6, 1
	ecall
	j	3b
	.cfi_endproc
	.size	_start, .-_start

/*
 * A secondary hart, started by sbi_hart_start (kernel-shim/bare/hart.c)
 * with translation off and interrupts off: opaque's first word is the top
 * of the stack it boots on. The same set-up as _start (the early trap
 * vector first) but the bss, the time stamp and the firmware's sstatus,
 * then shim_hart_boot(hartid, opaque), which never returns.
 */
	.text
	.globl	arch_hart_entry
	.hidden	arch_hart_entry
	.type	arch_hart_entry, @function
	.p2align 2
arch_hart_entry:
	.cfi_startproc
	.cfi_undefined ra
.option push
.option norelax
	la	gp, __global_pointer$
.option pop
	la	t0, arch_early_trap
	csrw	stvec, t0
	csrw	sie, zero
	li	t0, 2			/* SIE */
	csrc	sstatus, t0
	li	t0, 1 << 13		/* FS = Initial */
	csrs	sstatus, t0
	li	t0, 3 << 9		/* VS = Off */
	csrc	sstatus, t0
	fscsr	zero
	ld	sp, 0(a1)
	mv	tp, zero
	call	shim_hart_boot
1:	wfi
	j	1b
	.cfi_endproc
	.size	arch_hart_entry, .-arch_hart_entry

	.section .data.arch_boot_entry, "aw", @progbits
	.p2align 3
	.globl	arch_boot_entry
	.hidden	arch_boot_entry
	.type	arch_boot_entry, @object
arch_boot_entry:
	.dword	0
	.size	arch_boot_entry, 8

	.section .data.arch_boot_sstatus, "aw", @progbits
	.p2align 3
	.globl	arch_boot_sstatus
	.hidden	arch_boot_sstatus
	.type	arch_boot_sstatus, @object
arch_boot_sstatus:
	.dword	0
	.size	arch_boot_sstatus, 8

	/* Nonzero once a hart has entered _start: in .data, which the bss
	 * clear leaves. */
	.section .data.boot_lottery, "aw", @progbits
	.p2align 2
	.type	boot_lottery, @object
boot_lottery:
	.word	0
	.size	boot_lottery, 4

	.section .bss.boot_stack, "aw", @nobits
	.p2align 4
boot_stack:
	.space	16384
boot_stack_top:

	.section .note.GNU-stack,"",@progbits
