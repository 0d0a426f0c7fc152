/* SPDX-License-Identifier: MIT */
/* A parked context's call chain on aarch64, for weft_dump. switch.S saved
 * x29 and x30 (the resume address) in its frame (frame.h); a frame record
 * is {previous x29, return address} at [x29]. */
#include "arch.h"
#include "frame.h"

#define SAVED_FP FRAME_X29
#define SAVED_PC FRAME_X30
#define REC_FP 0
#define REC_PC 8

#include "fpwalk.h"
