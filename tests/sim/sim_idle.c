/* SPDX-License-Identifier: MIT */
/* A simulation scenario (scenario.h, docs/decisions/simulation.md): idle
 * hand-offs. CHAIN fibers, fiber f pinned to worker f % workers, pass a
 * token round ROUNDS times: each waits for it on its own channel with a
 * deadline (waiting again when the deadline passes first), sleeps a gap of
 * 1 to 5 ms with weft_sleep_until, and sends it to the next fiber, which
 * runs on another worker. While one fiber sleeps, every worker is idle: the
 * virtual clock moves to the next deadline, and each hand-off wakes a
 * worker that has gone to sleep. Checks the token's order, that each sleep
 * ends no earlier than its deadline, and that the run took at least the
 * sum of the gaps in virtual time; prints how many waits ended at their
 * deadline (a schedule's count). */
#include <errno.h>

#include "scenario.h"

#define CHAIN 5
#define ROUNDS 8
#define WAIT_NS 3000000 /* a waiting fiber's deadline: shorter than most rounds */
#define MAX_WAITS 10000 /* timed-out waits a fiber may have: a bound, not a goal */

static weft_chan_t *chans[CHAIN];
static _Atomic int timeouts;

static int64_t gap_ns(long token) { return (token % 5 + 1) * 1000000; }

static void *link_main(void *arg)
{
	int f = (int)(intptr_t)arg;
	CHECK(weft_fiber_pin(f % (int)weft_workers()) == 0, "pin %d", f);
	int waits = 0;
	for (int r = 0; r < ROUNDS; r++) {
		long token = 0;
		if (f || r) {
			int e;
			while ((e = weft_chan_recv(chans[f], &token, weft_deadline_in(WAIT_NS))) ==
			       -ETIMEDOUT) {
				atomic_fetch_add(&timeouts, 1);
				CHECK(++waits < MAX_WAITS, "fiber %d: %d waits", f, waits);
			}
			CHECK(e == 0, "fiber %d: recv %d", f, e);
		}
		CHECK(token == (long)r * CHAIN + f, "fiber %d got %ld, not %ld", f, token,
		      (long)r * CHAIN + f);
		CHECK(weft_worker_index() == f % (int)weft_workers(), "fiber %d on worker %d", f,
		      weft_worker_index());
		scenario_place((uint64_t)token);
		int64_t d = weft_deadline_in(gap_ns(token));
		CHECK(weft_sleep_until(d) == 0, "sleep");
		CHECK(weft_now() >= d, "fiber %d woke %lld ns early", f,
		      (long long)(d - weft_now()));
		token++;
		if (token < (long)ROUNDS * CHAIN)
			CHECK(weft_chan_send(chans[(f + 1) % CHAIN], &token, -1) == 0, "send");
	}
	return NULL;
}

int main(int argc, char **argv)
{
	scenario_init("sim_idle", argc, argv);
	int64_t start = weft_now();
	for (int f = 0; f < CHAIN; f++)
		CHECK(weft_chan_create(&chans[f], sizeof(long), 0) == 0, "chan %d", f);
	weft_fiber_t fs[CHAIN];
	for (int f = 0; f < CHAIN; f++)
		CHECK(weft_fiber_spawn(&fs[f], NULL, link_main, (void *)(intptr_t)f) == 0, "spawn");
	for (int f = 0; f < CHAIN; f++)
		CHECK(weft_fiber_join(fs[f], -1, NULL, NULL) == 0, "join %d", f);
	int64_t gaps = 0;
	for (long t = 0; t < (long)ROUNDS * CHAIN; t++)
		gaps += gap_ns(t);
	int64_t took = weft_now() - start;
	CHECK(took >= gaps, "took %lld ns, the gaps sum to %lld", (long long)took, (long long)gaps);
	for (int f = 0; f < CHAIN; f++)
		CHECK(weft_chan_destroy(chans[f]) == 0, "destroy %d", f);
	printf("sim_idle: %d fibers, %d hand-offs, %lld ms of gaps, %d waits ended at their "
	       "deadline\n",
	       CHAIN, ROUNDS * CHAIN - 1, (long long)(gaps / 1000000), atomic_load(&timeouts));
	return scenario_end();
}
