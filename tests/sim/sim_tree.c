/* SPDX-License-Identifier: MIT */
/* A simulation scenario (scenario.h, docs/decisions/simulation.md): spawn
 * trees. TREES roots, each a binary tree of depth DEPTH: every inner fiber
 * spawns its two children (yielding between them when its label says so)
 * and joins both; a leaf adds its label to a sum. Checks each tree's
 * count of fibers and the sum of the leaves' labels. With "racy" after the
 * seed, the two leftmost leaves of the first tree also add one each to a
 * counter without a lock, one of them yielding between its read and its
 * write: a lost update the schedule may or may not produce, which
 * mk/sim.sh must then report with the seed that replays it. */
#include "scenario.h"

#define TREES 2
#define DEPTH 6

static _Atomic uint64_t leaf_sum;
static bool racy;
static int racy_count; /* the racy mode's unlocked counter */

static void *node(void *arg)
{
	/* The tree's number above bit 32, the fiber's heap index below
	 * (the root 1, the children of i 2i and 2i+1). */
	uint64_t label = (uint64_t)(uintptr_t)arg;
	uint64_t i = label & 0xffffffffu;
	scenario_place(label);
	if (i >> DEPTH) { /* a leaf: 2^DEPTH .. 2^(DEPTH+1)-1 */
		atomic_fetch_add(&leaf_sum, i);
		uint64_t first = (uint64_t)1 << DEPTH; /* tree 0's leftmost leaf */
		if (racy && (label == first || label == first + 1)) {
			if (label != first)
				CHECK(weft_fiber_yield() == 0, "leaf yield");
			int v = racy_count;
			if (label == first)
				CHECK(weft_fiber_yield() == 0, "leaf yield");
			racy_count = v + 1;
		}
		return (void *)(uintptr_t)1;
	}
	weft_fiber_t kids[2];
	for (int k = 0; k < 2; k++) {
		uint64_t kid = (label - i) | (i * 2 + (uint64_t)k);
		CHECK(weft_fiber_spawn(&kids[k], NULL, node, (void *)(uintptr_t)kid) == 0,
		      "spawn %" PRIu64, kid);
		if (k == 0 && i % 3 == 0)
			CHECK(weft_fiber_yield() == 0, "yield in %" PRIu64, label);
	}
	uintptr_t n = 1;
	for (int k = 0; k < 2; k++) {
		void *r;
		int status;
		CHECK(weft_fiber_join(kids[k], -1, &r, &status) == 0 && status == 0,
		      "join a child of %" PRIu64, label);
		n += (uintptr_t)r;
	}
	return (void *)n;
}

int main(int argc, char **argv)
{
	const char *mode = scenario_init("sim_tree", argc, argv);
	racy = strcmp(mode, "racy") == 0;
	weft_fiber_t roots[TREES];
	for (int t = 0; t < TREES; t++) {
		uint64_t root = (uint64_t)t << 32 | 1;
		CHECK(weft_fiber_spawn(&roots[t], NULL, node, (void *)(uintptr_t)root) == 0,
		      "spawn root %d", t);
	}
	uintptr_t fibers = 0;
	for (int t = 0; t < TREES; t++) {
		void *r;
		CHECK(weft_fiber_join(roots[t], -1, &r, NULL) == 0, "join root %d", t);
		CHECK((uintptr_t)r == ((uintptr_t)2 << DEPTH) - 1, "tree %d: %" PRIuPTR " fibers",
		      t, (uintptr_t)r);
		fibers += (uintptr_t)r;
	}
	uint64_t lo = (uint64_t)1 << DEPTH, hi = ((uint64_t)2 << DEPTH) - 1;
	uint64_t want = TREES * (lo + hi) * (hi - lo + 1) / 2;
	CHECK(atomic_load(&leaf_sum) == want, "leaf sum %" PRIu64 ", want %" PRIu64,
	      atomic_load(&leaf_sum), want);
	if (racy)
		CHECK(racy_count == 2, "racy counter %d, want 2 (a lost update)", racy_count);
	printf("sim_tree: %d trees of depth %d, %" PRIuPTR " fibers, leaf sum %" PRIu64 "%s\n",
	       TREES, DEPTH, fibers, want, racy ? ", racy counter 2" : "");
	return scenario_end();
}
