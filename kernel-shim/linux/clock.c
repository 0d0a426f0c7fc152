/* SPDX-License-Identifier: MIT */
/* The monotonic clock (vDSO-backed clock_gettime). */
#define _GNU_SOURCE
#include <time.h>

#include "shim.h"

int64_t shim_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}
