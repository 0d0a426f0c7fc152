/* SPDX-License-Identifier: MIT */
/* A simulation scenario (scenario.h, docs/decisions/simulation.md): fibers
 * that find no stack at their first run wait on the starved list
 * (starve.c) and must all run when stacks come back. SPAWNERS fibers each
 * spawn KIDS children, which yield YIELDS times and end, and join them,
 * while the shim gives at most ROOM stacks more than weft_init took
 * (tests/allocwrap.c's wt_alloc_stack_room): most first runs are refused
 * and starve. Checks that every child ran to its end and was joined with
 * its result.
 *
 * It takes every fault of WEFT_SIM_FAULTS off the network (stack=, alloc=,
 * cancel=, intr=): a spawn refused with -ENOMEM (no stack, no memory) is
 * tried again after a yield, as are a join and a yield that return
 * -ECANCELED (a cancellation or an interrupt); the counts of each are
 * printed, and depend on the seed and the rates. */
#include <errno.h>

#include "../allocwrap.h"
#include "scenario.h"

/* tests/allocwrap.c's, which NAME.plain (linked with libweft.a, which
 * refuses the seed first) has not. */
void wt_alloc_stack_room(long n) __attribute__((weak));
/* starve.c's count of refused first runs (libweft-sim.a shows internals). */
extern _Atomic uint64_t weft__starves __attribute__((weak));

#define SPAWNERS 4
#define KIDS 40
#define YIELDS 3
#define ROOM 6
#define TRIES 100000

static _Atomic unsigned ran[SPAWNERS];
static _Atomic uint64_t refused, cancelled;

/* r, from a call that the faults may interrupt: 0, or -ECANCELED counted. */
static void took(int r, const char *what, uint64_t label)
{
	if (r == -ECANCELED)
		atomic_fetch_add(&cancelled, 1);
	else
		CHECK(r == 0, "%s in 0x%" PRIx64 ": %s", what, label, strerror(-r));
}

static void *kid(void *arg)
{
	uint64_t label = (uint64_t)(uintptr_t)arg;
	scenario_place(label);
	for (int i = 0; i < YIELDS; i++)
		took(weft_fiber_yield(), "a child's yield", label);
	atomic_fetch_add(&ran[label >> 16], 1);
	return (void *)(uintptr_t)(label + 1);
}

/* A spawn, tried again while it is refused for want of a stack or memory. */
static void spawn(weft_fiber_t *f, void *(*fn)(void *), uint64_t label)
{
	for (int t = 0; t < TRIES; t++) {
		int r = weft_fiber_spawn(f, NULL, fn, (void *)(uintptr_t)label);
		if (r == 0)
			return;
		CHECK(r == -ENOMEM, "spawn 0x%" PRIx64 ": %s", label, strerror(-r));
		atomic_fetch_add(&refused, 1);
		took(weft_fiber_yield(), "a spawner's yield", label);
	}
	scenario_fail("spawn 0x%" PRIx64 ": refused %d times", label, TRIES);
}

/* A join, tried again while a fault interrupts it; the result checked. */
static void join(weft_fiber_t f, uint64_t label)
{
	for (int t = 0; t < TRIES; t++) {
		void *r;
		int e = weft_fiber_join(f, -1, &r, NULL);
		took(e, "a join", label);
		if (e == 0) {
			CHECK((uint64_t)(uintptr_t)r == label + 1,
			      "0x%" PRIx64 " returned 0x%" PRIx64, label, (uint64_t)(uintptr_t)r);
			return;
		}
	}
	scenario_fail("join 0x%" PRIx64 ": interrupted %d times", label, TRIES);
}

static void *spawner(void *arg)
{
	uint64_t s = (uint64_t)(uintptr_t)arg;
	weft_fiber_t kids[KIDS];
	for (uint64_t k = 0; k < KIDS; k++)
		spawn(&kids[k], kid, s << 16 | k);
	for (uint64_t k = 0; k < KIDS; k++)
		join(kids[k], s << 16 | k);
	return (void *)(uintptr_t)(s + 1);
}

int main(int argc, char **argv)
{
	scenario_faults = "stack,alloc,cancel,intr";
	scenario_init("sim_starve", argc, argv);
	if (wt_alloc_stack_room)
		wt_alloc_stack_room(ROOM);
	weft_fiber_t sp[SPAWNERS];
	for (uint64_t s = 0; s < SPAWNERS; s++)
		spawn(&sp[s], spawner, s);
	for (uint64_t s = 0; s < SPAWNERS; s++)
		join(sp[s], s);
	for (int s = 0; s < SPAWNERS; s++)
		CHECK(atomic_load(&ran[s]) == KIDS, "spawner %d: %u of %d children ran", s,
		      atomic_load(&ran[s]), KIDS);
	if (wt_alloc_stack_room)
		wt_alloc_stack_room(-1);
	printf("sim_starve: %d fibers, each ran; %" PRIu64 " first runs starved, %" PRIu64
	       " spawns refused, %" PRIu64 " calls cancelled\n",
	       SPAWNERS * (KIDS + 1), &weft__starves ? atomic_load(&weft__starves) : 0,
	       atomic_load(&refused), atomic_load(&cancelled));
	return scenario_end();
}
