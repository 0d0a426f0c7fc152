/* SPDX-License-Identifier: MIT */
/* The environment and arguments on bare metal: the kernel command line
 * (-append, or U-Boot's bootargs) split into its NAME=value words, which
 * boot.c hands to picolibc's environ, and its other words, which it hands
 * to main as argv[1..]; and shim_getenv reading the environment. */
#define _DEFAULT_SOURCE /* strtok_r */
#include <stdlib.h>
#include <string.h>

#include "fdt.h"
#include "shim.h"

const char *shim_getenv(const char *name) { return getenv(name); }

void shim_bootargs_split(char *line, struct bootwords *out)
{
	int after_dashes = 0;
	out->nenv = out->nargs = 0;
	char *save, *w = strtok_r(line, " \t", &save);
	for (; w; w = strtok_r(NULL, " \t", &save)) {
		char *eq = strchr(w, '=');
		if (!after_dashes && strcmp(w, "--") == 0) {
			after_dashes = 1;
			out->nargs = 0;
		} else if (!after_dashes && eq && eq != w) {
			if (out->nenv < BOOTARGS_MAX) {
				*eq = 0;
				out->env[out->nenv++] = (struct bootarg){w, eq + 1};
			}
		} else if (out->nargs < BOOTARGS_MAX) {
			out->args[out->nargs++] = w;
		}
	}
}
