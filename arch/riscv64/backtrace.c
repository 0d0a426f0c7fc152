/* SPDX-License-Identifier: MIT */
/* A parked context's call chain on riscv64, for weft_dump. switch.S saved
 * ra (the resume address) and s0, the frame pointer, in its frame
 * (frame.h). With
 * a frame pointer, s0 is the frame's top (the caller's sp): a function that
 * calls others keeps its return address at [s0-8] and the caller's s0 at
 * [s0-16] (every frame on a parked chain calls another). */
#include "arch.h"
#include "frame.h"

#define SAVED_FP FRAME_S0
#define SAVED_PC FRAME_RA
#define REC_FP (-16)
#define REC_PC (-8)

#include "fpwalk.h"
