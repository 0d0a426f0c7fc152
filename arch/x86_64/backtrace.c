/* SPDX-License-Identifier: MIT */
/* A parked context's call chain on x86_64, for weft_dump. switch.S saved rbp
 * and the resume address in its frame (frame.h); each frame built with a
 * frame pointer keeps the caller's rbp at [rbp] and its return address at
 * [rbp+8]. */
#include "arch.h"
#include "frame.h"

#define SAVED_FP FRAME_RBP
#define SAVED_PC FRAME_PC
#define REC_FP 0
#define REC_PC 8

#include "fpwalk.h"
