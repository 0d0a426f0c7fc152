/* SPDX-License-Identifier: MIT */
/* A backtrace of another thread as it runs: not here. The stall detector
 * reports a stalled fiber without one on bare metal (the images carry no
 * symbols to name its frames by either, shim_symbolize). */
#include <errno.h>

#include "shim.h"

int shim_thread_backtrace(shim_thread_t t, uintptr_t lo, uintptr_t hi, uintptr_t *pcs, size_t max,
			  int64_t deadline)
{
	(void)t;
	(void)lo;
	(void)hi;
	(void)pcs;
	(void)max;
	(void)deadline;
	return -ENOSYS;
}
