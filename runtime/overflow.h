/* SPDX-License-Identifier: MIT */
/* Stack overflow reports (overflow.c). */
#ifndef WEFT_OVERFLOW_H
#define WEFT_OVERFLOW_H

#include <stddef.h>
#include <stdint.h>

/* The fault handler's question (shim_fault_init): whether addr lies in the
 * running fiber's guard, and if so its report in buf (its length; 0: not
 * an overflow). */
size_t weft__name_fault(uintptr_t addr, char *buf, size_t cap);

#endif
