/* SPDX-License-Identifier: MIT */
/* A first weft program: a producer fiber feeds a channel, four workers square
 * what they receive, and main joins them all and prints the total. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "weft.h"

static weft_chan_t *jobs;

static void *producer(void *arg)
{
	long n = (long)(intptr_t)arg;
	for (long i = 1; i <= n; i++)
		weft_chan_send(jobs, &i, -1);
	weft_chan_close(jobs);
	return NULL;
}

static void *squarer(void *arg)
{
	long v, sum = 0, count = 0;
	(void)arg;
	while (weft_chan_recv(jobs, &v, -1) == 0) {
		sum += v * v;
		count++;
		weft_fiber_yield();
	}
	printf("fiber %llu (%s) on worker %d squared %ld numbers\n",
	       (unsigned long long)weft_fiber_self(), weft_fiber_name(), weft_worker_index(),
	       count);
	return (void *)(intptr_t)sum;
}

int main(void)
{
	int err = weft_init(NULL);
	if (err) {
		fprintf(stderr, "hello: weft_init: %s\n", strerror(-err));
		return 1;
	}
	weft_chan_create(&jobs, sizeof(long), 8);
	weft_fiber_t workers[4];
	char names[4][16];
	for (int i = 0; i < 4; i++) {
		snprintf(names[i], sizeof names[i], "squarer-%d", i);
		weft_attr_t attr = {.name = names[i]};
		weft_fiber_spawn(&workers[i], &attr, squarer, NULL);
	}
	weft_fiber_spawn(NULL, NULL, producer, (void *)(intptr_t)1000);
	long total = 0;
	for (int i = 0; i < 4; i++) {
		void *r;
		weft_fiber_join(workers[i], -1, &r, NULL);
		total += (long)(intptr_t)r;
	}
	weft_run();
	printf("sum of squares 1..1000 = %ld (expected %ld) on %u workers\n", total,
	       1000L * 1001 * 2001 / 6, weft_workers());
	weft_chan_destroy(jobs);
	weft_shutdown();
	return total == 1000L * 1001 * 2001 / 6 ? 0 : 1;
}
