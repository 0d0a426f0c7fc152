/* SPDX-License-Identifier: MIT */
/* Is the Guarded Control Stack (arm64's shadow stack) on for this thread?
 * Linux 6.13+ reports it through prctl(PR_GET_SHADOW_STACK_STATUS); older
 * kernels fail the call: off. */
#include <errno.h>
#include <sys/prctl.h>

#include "arch.h"

#define GET_SHADOW_STACK_STATUS 74 /* PR_GET_SHADOW_STACK_STATUS */
#define SHADOW_STACK_ENABLE (1UL << 0)

int arch_shadow_stack_on(void)
{
	int saved = errno;
	unsigned long status = 0;
	int r = prctl(GET_SHADOW_STACK_STATUS, &status, 0, 0, 0);
	errno = saved;
	return r == 0 && (status & SHADOW_STACK_ENABLE);
}
