/* SPDX-License-Identifier: MIT */
/* The helper threads (offload.c). */
#ifndef WEFT_OFFLOAD_H
#define WEFT_OFFLOAD_H

/* weft_shutdown: stop them. */
void weft__offload_stop(void);

#endif
