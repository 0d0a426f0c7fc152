/* SPDX-License-Identifier: MIT */
/* The host loop (poll.c). */
#ifndef WEFT_HOST_H
#define WEFT_HOST_H

#include <stdint.h>

/* Run workers[0] on the calling plain thread: the fibers that are ready,
 * then, if none ran, wait up to deadline for some and run them. Returns the
 * number of fibers run, -EBUSY if another thread drives it. */
int weft__host_drive(int64_t deadline);

#endif
