/* SPDX-License-Identifier: MIT */
/* A simulation scenario (scenario.h, docs/decisions/simulation.md): no
 * yielder starves. SPINNERS fibers (more than workers) step through ROUNDS
 * rounds in lockstep: each does its round, then yields until every other
 * has done that round too, so each needs all the others to be run while
 * it yields. On worker 0, two latency-sensitive fibers (WEFT_ATTR_HIGH,
 * pinned) yield until a bulk fiber pinned there has run: the scheduler
 * must run it within 8 of theirs. Each wait is bounded (MAX_YIELDS
 * yields): a fiber left behind past it is a starved one, and fails. The
 * spinners start together, once all are spawned. The bound is meant for
 * the simulation, where no worker is ever preempted: on threads (no seed)
 * on a loaded machine, a worker's thread descheduled while it runs the
 * fiber the others wait for can take longer than that. */
#include <errno.h>

#include "scenario.h"

#define SPINNERS 6
#define ROUNDS 12
#define MAX_YIELDS 20000

static _Atomic int rounds_done[SPINNERS];
static _Atomic int bulk_ran;
static _Atomic int high_yields;
static weft_chan_t *gate; /* closed once every spinner is spawned */

static void *spinner(void *arg)
{
	int i = (int)(intptr_t)arg;
	char c;
	CHECK(weft_chan_recv(gate, &c, -1) == -EPIPE, "spinner %d: the gate", i);
	for (int r = 1; r <= ROUNDS; r++) {
		scenario_place((uint64_t)(i * ROUNDS + r));
		atomic_store(&rounds_done[i], r);
		for (int j = 0; j < SPINNERS; j++)
			for (int y = 0; atomic_load(&rounds_done[j]) < r; y++) {
				CHECK(y < MAX_YIELDS,
				      "spinner %d starved waiting for %d in round %d", i, j, r);
				CHECK(weft_fiber_yield() == 0, "yield");
			}
	}
	return NULL;
}

static void *high(void *arg)
{
	(void)arg;
	for (int y = 0; !atomic_load(&bulk_ran); y++) {
		CHECK(y < MAX_YIELDS, "the bulk fiber starved behind the high ones");
		atomic_fetch_add(&high_yields, 1);
		CHECK(weft_fiber_yield() == 0, "yield");
	}
	return NULL;
}

static void *bulk(void *arg)
{
	(void)arg;
	CHECK(weft_worker_index() == 0, "bulk on worker %d", weft_worker_index());
	atomic_store(&bulk_ran, 1);
	return NULL;
}

int main(int argc, char **argv)
{
	scenario_init("sim_yield", argc, argv);
	CHECK(weft_chan_create(&gate, 1, 0) == 0, "gate");
	weft_fiber_t fs[SPINNERS + 3];
	weft_attr_t hi = {.flags = WEFT_ATTR_HIGH | WEFT_ATTR_PIN};
	weft_attr_t pin = {.flags = WEFT_ATTR_PIN};
	CHECK(weft_fiber_spawn(&fs[0], &hi, high, NULL) == 0, "spawn high");
	CHECK(weft_fiber_spawn(&fs[1], &hi, high, NULL) == 0, "spawn high");
	for (int i = 0; i < SPINNERS; i++)
		CHECK(weft_fiber_spawn(&fs[2 + i], NULL, spinner, (void *)(intptr_t)i) == 0,
		      "spawn");
	CHECK(weft_fiber_spawn(&fs[SPINNERS + 2], &pin, bulk, NULL) == 0, "spawn bulk");
	CHECK(weft_chan_close(gate) == 0, "close the gate");
	for (int f = 0; f < SPINNERS + 3; f++)
		CHECK(weft_fiber_join(fs[f], -1, NULL, NULL) == 0, "join %d", f);
	CHECK(weft_chan_destroy(gate) == 0, "destroy the gate");
	printf("sim_yield: %d spinners, %d rounds in lockstep; the bulk fiber ran after %d high "
	       "yields\n",
	       SPINNERS, ROUNDS, atomic_load(&high_yields));
	return scenario_end();
}
