/* SPDX-License-Identifier: MIT */
/* A program with names of its own that weft's internals also use (lwIP's
 * sys_now and mem_init, a shim_ and an arch_ function): linked against
 * libweft.a it must link and run, since only weft_* leaves the library.
 * Its library is the version of its header (weft_version). */
#include <stdint.h>
#include <stdio.h>

#include "weft.h"

static int own_calls;

uint32_t sys_now(void) { return (uint32_t)++own_calls; }
void mem_init(void) { own_calls++; }
int64_t shim_now(void) { return -1; }
void arch_switch(void) { own_calls++; }

static void *child(void *arg) { return (char *)arg + 1; }

int main(void)
{
	if (weft_version() != WEFT_VERSION ||
	    WEFT_VERSION !=
		    100 * (100 * WEFT_VERSION_MAJOR + WEFT_VERSION_MINOR) + WEFT_VERSION_PATCH)
		return 6;
	if (weft_init(NULL))
		return 1;
	weft_fiber_t f;
	void *res = NULL;
	char x[2];
	if (weft_fiber_spawn(&f, NULL, child, x) || weft_fiber_join(f, -1, &res, NULL) ||
	    res != x + 1)
		return 2;
	/* weft's clock is its own, not this program's shim_now. */
	if (weft_now() <= 0)
		return 3;
	if (weft_run() || weft_shutdown())
		return 4;
	mem_init();
	if (sys_now() != 2)
		return 5;
	puts("own_lwip: ok");
	return 0;
}
