/* SPDX-License-Identifier: MIT */
/* A first firmware: one fiber greets each word of the command line that is
 * not NAME=value; GREETING=... on the command line changes the greeting. */
#include <stdio.h>
#include <stdlib.h>

#include "weft.h"

static void *greet(void *arg)
{
	const char *greeting = getenv("GREETING");
	printf("%s, %s (fiber %llu)\n", greeting ? greeting : "hello", (const char *)arg,
	       (unsigned long long)weft_fiber_self());
	return NULL;
}

int main(int argc, char **argv)
{
	int err = weft_init(NULL);
	if (err) {
		fprintf(stderr, "weft_init: %d\n", err);
		return 1;
	}
	printf("%s: %d argument(s)\n", argv[0], argc - 1);
	weft_fiber_t fibers[16];
	int n = argc - 1 < 16 ? argc - 1 : 16;
	for (int i = 0; i < n; i++)
		weft_fiber_spawn(&fibers[i], NULL, greet, argv[i + 1]);
	for (int i = 0; i < n; i++)
		weft_fiber_join(fibers[i], -1, NULL, NULL);
	weft_shutdown();
	return 0;
}
