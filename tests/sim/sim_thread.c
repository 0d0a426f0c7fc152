/* SPDX-License-Identifier: MIT */
/* A simulation scenario (scenario.h, docs/decisions/simulation.md): a plain
 * thread waits with deadlines beside fibers. The calling thread (an actor
 * of its own, parking on its stand-in fiber: park.c's thread_park) sleeps
 * ROUNDS times for 1-3 ms of virtual time while every worker may be idle,
 * and receives from a channel with a deadline that a fiber sends on after
 * its own sleep. Its deadlines are timers on the virtual clock, which only
 * idle workers move: a worker must hear of each (timer.c's kick), or every
 * actor waits and the simulator reports a deadlock. Checks each sleep's
 * length, each value received, and the timeouts of a channel nobody sends
 * on.
 *
 * Mode "foreign" (Linux): a thread made by pthread_create, which the
 * simulation did not start, sends on the channel the main thread waits
 * on; under a seed the simulator must refuse it (abort, saying so) rather
 * than let it run beside the schedule (tests/sim/determinism.sh). */
#include <errno.h>
#include <string.h>
#ifdef __linux__
#include <pthread.h>
#endif

#include "scenario.h"

#define ROUNDS 8

static weft_chan_t *ch;

static void *sender(void *arg)
{
	uint64_t i = (uint64_t)(uintptr_t)arg;
	scenario_place(i);
	CHECK(weft_sleep_until(weft_deadline_in((int64_t)(1 + i % 3) * 1000000)) == 0,
	      "sender %" PRIu64 " sleep", i);
	CHECK(weft_chan_send(ch, &i, -1) == 0, "send %" PRIu64, i);
	return NULL;
}

#ifdef __linux__
static void *foreign(void *arg)
{
	(void)arg;
	uint64_t v = 7;
	weft_chan_send(ch, &v, -1); /* refused: the run aborts here */
	return NULL;
}
#endif

int main(int argc, char **argv)
{
	const char *mode = scenario_init("sim_thread", argc, argv);
	CHECK(weft_chan_create(&ch, sizeof(uint64_t), 0) == 0, "channel");
	if (!strcmp(mode, "foreign")) {
#ifdef __linux__
		pthread_t t;
		CHECK(pthread_create(&t, NULL, foreign, NULL) == 0, "pthread_create");
		uint64_t v = 0;
		int r = weft_chan_recv(ch, &v, weft_deadline_in(1000000000));
		pthread_join(t, NULL);
		CHECK(0, "a foreign thread's send was not refused (recv: %d, value %" PRIu64 ")", r,
		      v);
#else
		CHECK(0, "mode foreign needs pthread_create (Linux)");
#endif
	}
	CHECK(!*mode, "no such mode \"%s\" (foreign)", mode);
	weft_chan_t *quiet;
	CHECK(weft_chan_create(&quiet, sizeof(uint64_t), 0) == 0, "quiet channel");
	for (uint64_t i = 0; i < ROUNDS; i++) {
		int64_t ns = (int64_t)(1 + (scenario_seed + i) % 3) * 1000000;
		int64_t from = weft_now();
		CHECK(weft_sleep_until(weft_deadline_in(ns)) == 0, "sleep %" PRIu64, i);
		CHECK(weft_now() - from >= ns, "slept %lld ns of %lld",
		      (long long)(weft_now() - from), (long long)ns);
		weft_fiber_t f;
		CHECK(weft_fiber_spawn(&f, NULL, sender, (void *)(uintptr_t)i) == 0,
		      "spawn %" PRIu64, i);
		uint64_t v = ~(uint64_t)0;
		CHECK(weft_chan_recv(ch, &v, weft_deadline_in(10000000)) == 0, "recv %" PRIu64, i);
		CHECK(v == i, "received %" PRIu64 ", want %" PRIu64, v, i);
		CHECK(weft_chan_recv(quiet, &v, weft_deadline_in(500000)) == -ETIMEDOUT,
		      "a channel nobody sends on");
		CHECK(weft_fiber_join(f, -1, NULL, NULL) == 0, "join %" PRIu64, i);
	}
	weft_chan_destroy(quiet);
	weft_chan_destroy(ch);
	return scenario_end();
}
