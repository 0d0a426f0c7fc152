/* SPDX-License-Identifier: MIT */
/* The frame arch_switch saves on x86_64, as offsets from the saved stack
 * pointer: switch.S pushes in this order (the resume address first, pushed
 * by the call), frame.c builds a first frame with these names, backtrace.c
 * reads the frame pointer and the resume address from them. Included by
 * assembly: #defines only. */
#ifndef WEFT_ARCH_FRAME_H
#define WEFT_ARCH_FRAME_H

#define FRAME_RSVD 0 /* 8 bytes, not read: keeps the resume 16-byte aligned */
#define FRAME_R15 8
#define FRAME_R14 16
#define FRAME_R13 24
#define FRAME_R12 32
#define FRAME_RBX 40
#define FRAME_RBP 48
#define FRAME_PC 56
#define FRAME_SIZE 64

#endif
