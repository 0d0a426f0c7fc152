/* SPDX-License-Identifier: MIT */
/* A parked context's call chain on riscv64, for weft_dump. switch.S saved
 * ra (the resume address) at sp+0 and s0, the frame pointer, at sp+8. With
 * a frame pointer, s0 is the frame's top (the caller's sp): a function that
 * calls others keeps its return address at [s0-8] and the caller's s0 at
 * [s0-16] (every frame on a parked chain calls another). */
#include "arch.h"

#define SAVED_FP 8
#define SAVED_PC 0
#define REC_FP (-16)
#define REC_PC (-8)

#include "fpwalk.h"
