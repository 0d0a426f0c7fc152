/* SPDX-License-Identifier: MIT */
/* weft inside a host's own event loop. The host owns its thread and its
 * poll() loop; weft is started with WEFT_CFG_HOST_LOOP (no worker threads)
 * and runs one iteration, weft_poll(0), each time round. weft_poll_next()
 * gives the host its poll timeout: 0 when fibers are ready, the next fiber
 * deadline, or -1 (nothing scheduled).
 *
 * The host's event source: on Linux, a pipe that a producer thread writes
 * numbers into, one per line, then closes; on bare metal (no descriptors,
 * no poll()) the host makes a number every 10 ms itself and waits in
 * weft_poll(its own next deadline) instead of poll(). Either way the host
 * hands each number to a "summer" fiber over a channel, a "ticker" fiber
 * prints a line every 25 ms on weft's timers, and when the source is done
 * the host closes the channel and cancels the ticker, runs weft until no
 * fiber is left, and shuts down. */
#ifdef __linux__
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>

#ifdef __linux__
#include <poll.h>
#include <pthread.h>
#include <unistd.h>
#endif

#include "weft.h"

#define MS 1000000LL
#define COUNT 20

static weft_chan_t *nums;
static weft_fiber_t tick_fiber;

static void *summer(void *arg)
{
	(void)arg;
	long v, sum = 0, n = 0;
	int r;
	while ((r = weft_chan_recv(nums, &v, -1)) == 0) {
		sum += v;
		n++;
	}
	printf("summer: %ld numbers, sum %ld (%s)\n", n, sum, r == -EPIPE ? "closed" : "error");
	return (void *)(intptr_t)(r == -EPIPE && n == COUNT ? 0 : 1);
}

static void *ticker(void *arg)
{
	(void)arg;
	int64_t start = weft_now();
	for (int i = 1;; i++) {
		if (weft_sleep_until(start + i * 25 * MS) == -ECANCELED)
			break;
		printf("tick %d\n", i);
	}
	printf("ticker: cancelled\n");
	return NULL;
}

/* Give the host's number to the summer. The channel has room for every
 * number, so a try-once send (deadline 0: the host never blocks in weft)
 * always succeeds. */
static int hand_over(long v)
{
	int r = weft_chan_send(nums, &v, 0);
	if (r != 0)
		fprintf(stderr, "embed_poll: send: %s\n", strerror(-r));
	return r;
}

/* The source is done: the summer ends once it has drained the channel, and
 * the ticker is told to stop. */
static void source_done(void)
{
	weft_chan_close(nums);
	weft_fiber_cancel(tick_fiber);
}

static int fibers_left(void)
{
	weft_stats_t s;
	return weft_stats(&s) == 0 && s.fibers > 0;
}

#ifdef __linux__
static void *producer(void *arg)
{
	int fd = (int)(intptr_t)arg;
	for (long i = 1; i <= COUNT; i++) {
		char line[16];
		int n = snprintf(line, sizeof line, "%ld\n", i);
		if (write(fd, line, (size_t)n) != n)
			break;
		usleep(10000);
	}
	close(fd);
	return NULL;
}

/* The poll() timeout, in ms, for weft's next deadline. */
static int timeout_ms(void)
{
	int64_t next = weft_poll_next();
	if (next < 0)
		return -1;
	int64_t left = next - weft_now();
	if (left <= 0)
		return 0;
	return (int)((left + MS - 1) / MS);
}

static int host_loop(void)
{
	int p[2];
	pthread_t t;
	if (pipe(p) != 0 || pthread_create(&t, NULL, producer, (void *)(intptr_t)p[1]) != 0)
		return 1;
	char buf[256];
	long cur = 0;
	int open = 1, err = 0;
	while (open || fibers_left()) {
		struct pollfd pfd = {.fd = open ? p[0] : -1, .events = POLLIN};
		if (poll(&pfd, 1, timeout_ms()) < 0 && errno != EINTR)
			return 1;
		if (pfd.revents & (POLLIN | POLLHUP)) {
			ssize_t n = read(p[0], buf, sizeof buf);
			for (ssize_t i = 0; i < n; i++) {
				if (buf[i] >= '0' && buf[i] <= '9') {
					cur = cur * 10 + (buf[i] - '0');
				} else if (buf[i] == '\n') {
					err |= hand_over(cur);
					cur = 0;
				}
			}
			if (n <= 0) { /* the producer is done */
				open = 0;
				source_done();
			}
		}
		if (weft_poll(0) < 0)
			return 1;
	}
	pthread_join(t, NULL);
	close(p[0]);
	return err;
}
#else
static int host_loop(void)
{
	int64_t next = weft_now() + 10 * MS;
	long made = 0;
	int err = 0;
	while (made < COUNT || fibers_left()) {
		if (made < COUNT && weft_now() >= next) {
			err |= hand_over(++made);
			next += 10 * MS;
			if (made == COUNT)
				source_done();
		}
		/* No poll() here: the host's wait is weft_poll itself, up to
		 * the host's own next event (or forever once it has none). */
		if (weft_poll(made < COUNT ? next : -1) < 0)
			return 1;
	}
	return err;
}
#endif

int main(void)
{
	weft_config_t cfg = {.flags = WEFT_CFG_HOST_LOOP};
	if (weft_init(&cfg) != 0 || weft_chan_create(&nums, sizeof(long), COUNT) != 0)
		return 1;
	weft_fiber_t sum_fiber;
	weft_attr_t sa = {.name = "summer"}, ta = {.name = "ticker"};
	if (weft_fiber_spawn(&sum_fiber, &sa, summer, NULL) != 0 ||
	    weft_fiber_spawn(&tick_fiber, &ta, ticker, NULL) != 0)
		return 1;
	int err = host_loop();
	/* Both have finished: join without waiting (deadline 0). */
	void *r = (void *)1;
	if (weft_fiber_join(sum_fiber, 0, &r, NULL) != 0 || r != NULL)
		err = 1;
	if (weft_fiber_join(tick_fiber, 0, NULL, NULL) != 0)
		err = 1;
	weft_chan_destroy(nums);
	if (weft_shutdown() != 0)
		err = 1;
	printf("embed_poll: %s\n", err ? "FAILED" : "ok");
	return err;
}
