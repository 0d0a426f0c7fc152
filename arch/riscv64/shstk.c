/* SPDX-License-Identifier: MIT */
/* Zicfiss shadow stacks are neither emitted by gcc 12 nor enabled by the
 * bare-metal shim: off. (Shared by the Linux and bare-metal builds.) */
#include "arch.h"

int arch_shadow_stack_on(void) { return 0; }
