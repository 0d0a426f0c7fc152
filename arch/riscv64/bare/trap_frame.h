/* SPDX-License-Identifier: MIT */
/* The frames trap.S saves, as byte offsets: the trap frame (every integer
 * register, then sepc, sstatus, scause, stval) that shim_trap receives as a
 * struct trap_frame, and the FP frame a preempted thread pushes below it.
 * trap.S stores and loads by these names; arch_bare_cpu.h asserts that
 * struct trap_frame has the same layout. Included by assembly: #defines only. */
#ifndef WEFT_ARCH_TRAP_FRAME_H
#define WEFT_ARCH_TRAP_FRAME_H

#define TRAP_X(n) ((n)*8) /* x0's slot is trap.S's own; x2 is the interrupted sp */
#define TRAP_SEPC 256
#define TRAP_SSTATUS 264
#define TRAP_SCAUSE 272
#define TRAP_STVAL 280
#define TRAP_FRAME_SIZE 288 /* 16-aligned */

#define FP_F(n) ((n)*8) /* f0..f31 */
#define FP_FCSR 256
#define FP_FRAME_SIZE 272 /* 16-aligned */

#endif
