/* SPDX-License-Identifier: MIT */
/* A fiber with a 200 KiB local array on the default 64 KiB stack: built with
 * the flags the installed weft.pc and CMake target give (stack-clash probes),
 * its frame touches the guard page below the stack on the way down, and weft
 * reports the overflow against the fiber by name; built without them, the
 * frame jumps the guard and the process dies with no report (or writes into
 * memory below the guard). tests/link/install.sh builds it both ways. */
#include <stdio.h>
#include <string.h>

#include "weft.h"

static void *big(void *arg)
{
	volatile char buf[200 * 1024];
	/* Touch the far end first, as a memset of the whole array from its
	 * bottom does in real code. */
	buf[0] = (char)(unsigned long)arg;
	memset((char *)buf, 1, sizeof buf);
	return (void *)(unsigned long)buf[sizeof buf - 1];
}

int main(void)
{
	if (weft_init(NULL))
		return 1;
	weft_attr_t a = {.name = "big-frame"};
	weft_fiber_t f;
	if (weft_fiber_spawn(&f, &a, big, NULL))
		return 2;
	void *r = NULL;
	weft_fiber_join(f, -1, &r, NULL);
	printf("big_frame: no overflow (%p)\n", r);
	weft_run();
	weft_shutdown();
	return 0;
}
