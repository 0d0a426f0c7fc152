/* SPDX-License-Identifier: MIT */
/* A parked context's call chain on aarch64, for weft_dump. switch.S saved
 * x29 at sp+80 and x30 (the resume address) at sp+88; a frame record is
 * {previous x29, return address} at [x29]. */
#include "arch.h"

#define SAVED_FP 80
#define SAVED_PC 88
#define REC_FP 0
#define REC_PC 8

#include "fpwalk.h"
