/* SPDX-License-Identifier: MIT */
/* Is CET's shadow stack on for this thread? Linux 6.6+ reports it through
 * arch_prctl(ARCH_SHSTK_STATUS); older kernels fail the call: off. */
#define _GNU_SOURCE
#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "arch.h"

#define ARCH_SHSTK_STATUS 0x5005
#define ARCH_SHSTK_SHSTK (1ULL << 0)

int arch_shadow_stack_on(void)
{
	int saved = errno;
	unsigned long long features = 0;
	long r = syscall(SYS_arch_prctl, ARCH_SHSTK_STATUS, &features);
	errno = saved;
	return r == 0 && (features & ARCH_SHSTK_SHSTK);
}
