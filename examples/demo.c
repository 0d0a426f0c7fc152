/* SPDX-License-Identifier: MIT */
/* The demo `make run` boots on qemu-virt (it runs on Linux too): four fibers
 * count primes in their own ranges, sleeping between chunks, while a ticker
 * fiber prints the uptime; a channel carries each result back to main. */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "weft.h"

#define COUNTERS 4
#define RANGE 20000
#define CHUNK 5000

struct result {
	int who;
	long primes;
};

static weft_chan_t *results;
static weft_future_t *all_done;
static int64_t t0; /* main's start */

static double ms(void) { return (double)(weft_now() - t0) / 1e6; }

static int is_prime(long n)
{
	if (n < 2)
		return 0;
	for (long d = 2; d * d <= n; d++)
		if (n % d == 0)
			return 0;
	return 1;
}

static void *count_primes(void *arg)
{
	int who = (int)(intptr_t)arg;
	long lo = (long)who * RANGE, primes = 0;
	for (long start = lo; start < lo + RANGE; start += CHUNK) {
		for (long n = start; n < start + CHUNK; n++)
			primes += is_prime(n);
		printf("[%6.1f ms] %s on worker %d: %ld primes below %ld\n", ms(),
		       weft_fiber_name(), weft_worker_index(), primes, start + CHUNK);
		weft_sleep_until(weft_deadline_in(40 * 1000000)); /* 40 ms */
	}
	struct result r = {who, primes};
	weft_chan_send(results, &r, -1);
	return NULL;
}

static void *ticker(void *arg)
{
	(void)arg;
	int64_t start = weft_now();
	while (weft_future_await(all_done, weft_deadline_in(50 * 1000000), NULL) == -ETIMEDOUT)
		printf("[%6.1f ms] ticker: %" PRId64 " ms since it started\n", ms(),
		       (weft_now() - start) / 1000000);
	return NULL;
}

int main(void)
{
	t0 = weft_now();
	int err = weft_init(NULL);
	if (err) {
		fprintf(stderr, "demo: weft_init: %s\n", strerror(-err));
		return 1;
	}
	printf("weft demo: %d fibers on %u worker(s)\n", COUNTERS + 1, weft_workers());
	weft_chan_create(&results, sizeof(struct result), COUNTERS);
	weft_future_create(&all_done);
	weft_fiber_spawn(NULL, &(weft_attr_t){.name = "ticker"}, ticker, NULL);
	char names[COUNTERS][16];
	for (int i = 0; i < COUNTERS; i++) {
		snprintf(names[i], sizeof names[i], "counter-%d", i);
		weft_fiber_spawn(NULL, &(weft_attr_t){.name = names[i]}, count_primes,
				 (void *)(intptr_t)i);
	}
	long total = 0;
	for (int i = 0; i < COUNTERS; i++) {
		struct result r;
		weft_chan_recv(results, &r, -1);
		printf("counter-%d: %ld primes in [%ld, %ld)\n", r.who, r.primes,
		       (long)r.who * RANGE, (long)(r.who + 1) * RANGE);
		total += r.primes;
	}
	weft_future_resolve(all_done, NULL);
	weft_run();
	printf("%ld primes below %d (expected 7837)\n", total, COUNTERS * RANGE);
	weft_future_release(all_done);
	weft_chan_destroy(results);
	weft_shutdown();
	return total == 7837 ? 0 : 1;
}
