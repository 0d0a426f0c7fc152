/* SPDX-License-Identifier: MIT */
/* The frame arch_switch saves on riscv64, as offsets from the saved stack
 * pointer: switch.S stores and loads by these names, frame.c builds a first
 * frame with them, backtrace.c reads the frame pointer (s0) and the resume
 * address (ra) from them. Included by assembly: #defines only. */
#ifndef WEFT_ARCH_FRAME_H
#define WEFT_ARCH_FRAME_H

#define FRAME_RA 0
#define FRAME_S0 8
#define FRAME_S1 16
#define FRAME_S2 24
#define FRAME_S3 32
#define FRAME_S4 40
#define FRAME_S5 48
#define FRAME_S6 56
#define FRAME_S7 64
#define FRAME_S8 72
#define FRAME_S9 80
#define FRAME_S10 88
#define FRAME_S11 96
#define FRAME_FS0 104
#define FRAME_FS1 112
#define FRAME_FS2 120
#define FRAME_FS3 128
#define FRAME_FS4 136
#define FRAME_FS5 144
#define FRAME_FS6 152
#define FRAME_FS7 160
#define FRAME_FS8 168
#define FRAME_FS9 176
#define FRAME_FS10 184
#define FRAME_FS11 192
#define FRAME_SIZE 208 /* 16-aligned; fs0-fs11 only with F/D */

#endif
