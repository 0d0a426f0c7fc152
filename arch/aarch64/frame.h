/* SPDX-License-Identifier: MIT */
/* The frame arch_switch saves on aarch64, as offsets from the saved stack
 * pointer: switch.S stores and loads by these names, frame.c builds a first
 * frame with them, backtrace.c reads the frame pointer and the resume
 * address from them. Included by assembly: #defines only. */
#ifndef WEFT_ARCH_FRAME_H
#define WEFT_ARCH_FRAME_H

#define FRAME_X19 0
#define FRAME_X20 8
#define FRAME_X21 16
#define FRAME_X22 24
#define FRAME_X23 32
#define FRAME_X24 40
#define FRAME_X25 48
#define FRAME_X26 56
#define FRAME_X27 64
#define FRAME_X28 72
#define FRAME_X29 80
#define FRAME_X30 88
#define FRAME_D8 96
#define FRAME_D9 104
#define FRAME_D10 112
#define FRAME_D11 120
#define FRAME_D12 128
#define FRAME_D13 136
#define FRAME_D14 144
#define FRAME_D15 152
#define FRAME_SIZE 160

#endif
