/* SPDX-License-Identifier: MIT */
/* The environment on bare metal: the kernel command line (-append, or
 * U-Boot's bootargs) split into its NAME=value words, which boot.c hands to
 * picolibc's environ, and shim_getenv reading it. */
#define _DEFAULT_SOURCE /* strtok_r */
#include <stdlib.h>
#include <string.h>

#include "fdt.h"
#include "shim.h"

const char *shim_getenv(const char *name) { return getenv(name); }

int bootargs_split(char *line, struct bootarg *out, int max)
{
	int n = 0;
	char *save, *w = strtok_r(line, " \t", &save);
	for (; w && n < max; w = strtok_r(NULL, " \t", &save)) {
		char *eq = strchr(w, '=');
		if (eq && eq != w) {
			*eq = 0;
			out[n++] = (struct bootarg){w, eq + 1};
		}
	}
	return n;
}
