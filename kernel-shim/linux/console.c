/* SPDX-License-Identifier: MIT */
/* Diagnostics to stderr. */
#define _GNU_SOURCE
#include <unistd.h>

#include "shim.h"

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
