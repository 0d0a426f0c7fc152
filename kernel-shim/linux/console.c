/* SPDX-License-Identifier: MIT */
/* Configuration from the environment; diagnostics to stderr. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <unistd.h>

#include "shim.h"

const char *shim_getenv(const char *name) { return getenv(name); }

void shim_console_write(const char *s, size_t n)
{
	while (n > 0) {
		ssize_t w = write(2, s, n);
		if (w <= 0)
			return;
		s += w;
		n -= (size_t)w;
	}
}
