/* SPDX-License-Identifier: MIT */
/* malloc's memory on Linux: the C library's heap grows on demand (brk,
 * mmap), so it has no fixed size to report. */
#include "shim.h"

size_t shim_heap_size(void) { return 0; }
