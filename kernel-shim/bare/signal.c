/* SPDX-License-Identifier: MIT */
/* Signals on bare metal: there are none (a device's interrupt reaches the
 * program through its driver's I/O source), so every call says so. */
#include <errno.h>

#include "shim.h"

int shim_signal_block(uint64_t set) { return set ? -ENOTSUP : -EINVAL; }

int shim_signal_open(uint64_t set) { return set ? -ENOTSUP : -EINVAL; }

int shim_signal_take(int src)
{
	(void)src;
	return -ENOTSUP;
}

void shim_signal_close(int src) { (void)src; }
