/* SPDX-License-Identifier: MIT */
/* A parked context's call chain on x86_64, for weft_dump. switch.S saved rbp
 * at sp+48 and the resume address at sp+56; each frame built with a frame
 * pointer keeps the caller's rbp at [rbp] and its return address at [rbp+8]. */
#include "arch.h"

#define SAVED_FP 48
#define SAVED_PC 56
#define REC_FP 0
#define REC_PC 8

#include "fpwalk.h"
