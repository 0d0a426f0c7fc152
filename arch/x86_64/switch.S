/* SPDX-License-Identifier: MIT */
/*
 * void arch_switch(void **save_sp, void *new_sp);
 * void arch_fiber_start(void);       (first frame only, see frame.c)
 *
 * System V x86_64: rbx rbp r12-r15 and rsp are callee-saved. The control
 * bits of MXCSR and the x87 control word are callee-saved too, but they
 * belong to the worker thread, not to the fiber: the switch leaves them
 * alone, as on aarch64 and riscv64, and a fiber spawned with WEFT_ATTR_FPENV
 * has its own saved and restored around the switch (runtime/switch.c). The
 * return address is
 * already on the stack (pushed by the call). We push the rest, swap rsp, pop
 * the other context's registers and resume it with pop + indirect jmp: a ret
 * whose target was not pushed by the matching call is mispredicted every time.
 * The jmp is notrack: it lands on a return address, which has no endbr64, and
 * IBT must not check it. Each entry point starts with endbr64, and the
 * property note below marks this file IBT-compatible (not SHSTK: the switch
 * does not move the shadow stack; weft_init refuses to run with one on).
 *
 * The frame, from the saved rsp upwards, is frame.h's: the push order
 * below lays it out (the resume address highest, then rbp, rbx, r12-r15,
 * and 8 reserved bytes that keep rsp 16-byte aligned at the resume), and
 * the assembler checks that the two agree.
 */
#include "frame.h"

#if FRAME_PC != FRAME_SIZE - 8 || FRAME_RBP != FRAME_PC - 8 || FRAME_RBX != FRAME_RBP - 8 || \
	FRAME_R12 != FRAME_RBX - 8 || FRAME_R13 != FRAME_R12 - 8 || FRAME_R14 != FRAME_R13 - 8 || \
	FRAME_R15 != FRAME_R14 - 8 || FRAME_RSVD != FRAME_R15 - 8 || FRAME_RSVD != 0
#error "frame.h does not match switch.S's push order"
#endif
	.text
	.globl	arch_switch
	.hidden	arch_switch
	.type	arch_switch, @function
	.p2align 4
arch_switch:
	.cfi_startproc
	endbr64
	pushq	%rbp
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset rbp, 0
	pushq	%rbx
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset rbx, 0
	pushq	%r12
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset r12, 0
	pushq	%r13
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset r13, 0
	pushq	%r14
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset r14, 0
	pushq	%r15
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset r15, 0
	subq	$8, %rsp
	.cfi_adjust_cfa_offset 8
	movq	%rsp, (%rdi)

	/* The other context's frame has the same layout, so the CFI above
	 * now describes it: an unwinder stopped here walks the incoming
	 * context's stack. */
	movq	%rsi, %rsp
	addq	$8, %rsp
	.cfi_adjust_cfa_offset -8
	popq	%r15
	.cfi_adjust_cfa_offset -8
	.cfi_restore r15
	popq	%r14
	.cfi_adjust_cfa_offset -8
	.cfi_restore r14
	popq	%r13
	.cfi_adjust_cfa_offset -8
	.cfi_restore r13
	popq	%r12
	.cfi_adjust_cfa_offset -8
	.cfi_restore r12
	popq	%rbx
	.cfi_adjust_cfa_offset -8
	.cfi_restore rbx
	popq	%rbp
	.cfi_adjust_cfa_offset -8
	.cfi_restore rbp
	popq	%rcx
	.cfi_adjust_cfa_offset -8
	.cfi_register rip, rcx
	notrack jmpq	*%rcx
	.cfi_endproc
	.size	arch_switch, .-arch_switch

/*
 * The first code a new context runs: frame.c left entry in r12 and its
 * argument in r13, and rsp 16-byte aligned. Unwinders stop here.
 */
	.globl	arch_fiber_start
	.hidden	arch_fiber_start
	.type	arch_fiber_start, @function
	.p2align 4
arch_fiber_start:
	.cfi_startproc
	.cfi_undefined rip
	/* A fresh context resumes at arch_fiber_entry, just past this nop: an
	 * unwinder looks a caller up at its return address minus one, which
	 * then falls here, in this function and its FDE (return address
	 * undefined: the walk ends), not at the end of arch_switch. */
	nop
	.globl	arch_fiber_entry
	.hidden	arch_fiber_entry
arch_fiber_entry:
	endbr64
	movq	%r13, %rdi
	callq	*%r12
	ud2
	.cfi_endproc
	.size	arch_fiber_start, .-arch_fiber_start

	.section .note.GNU-stack,"",@progbits

/* GNU_PROPERTY_X86_FEATURE_1_AND = IBT: without this note the linker marks
 * any program that links this file as not IBT-compatible. */
	.section .note.gnu.property,"a"
	.p2align 3
	.long	4		/* name size */
	.long	16		/* descriptor size */
	.long	5		/* NT_GNU_PROPERTY_TYPE_0 */
	.asciz	"GNU"
	.long	0xc0000002	/* GNU_PROPERTY_X86_FEATURE_1_AND */
	.long	4		/* data size */
	.long	1		/* GNU_PROPERTY_X86_FEATURE_1_IBT */
	.p2align 3
