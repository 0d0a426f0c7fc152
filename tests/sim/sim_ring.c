/* SPDX-License-Identifier: MIT */
/* A simulation scenario (docs/decisions/simulation.md): a token ring of
 * RING fibers passing a token ROUNDS times round, then a binary spawn tree
 * of depth DEPTH, each joined. Linked with libweft-sim.a and run with
 * WEFT_SIM_SEED=N (or the seed as its argument), it runs on one thread
 * from that seed and ends with the simulator's line (seed, steps, digest);
 * it prints, besides what it checked, a hash of which worker ran each hop,
 * which depends on the schedule. Exit 0 when every check held, 1 when one
 * failed, 2 when weft_init refused (libweft.a refuses a seed: the same
 * source is linked with it as sim_ring.plain). With "deadlock" after the
 * seed (or alone, the seed in $WEFT_SIM_SEED), a fiber also waits on a
 * channel nobody sends to: the simulator must find every actor waiting,
 * print its line and abort (without a seed, that run would never end). tests/sim/determinism.sh runs it. */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weft.h"

#define RING 8
#define ROUNDS 50
#define DEPTH 6

static weft_chan_t *links[RING];
static _Atomic int bad;
/* FNV-1a of (hop, worker) over the ring's hops: the placement. */
static uint64_t placement = 0xcbf29ce484222325ull;

static void mix(uint64_t v)
{
	for (int i = 0; i < 8; i++) {
		placement ^= (v >> (8 * i)) & 0xff;
		placement *= 0x100000001b3ull;
	}
}

static void *member(void *arg)
{
	int i = (int)(intptr_t)arg;
	for (int r = 0; r < ROUNDS; r++) {
		long token = 0;
		if ((i || r) && weft_chan_recv(links[i], &token, -1) != 0)
			bad++;
		long want = (long)r * RING + i;
		if (token != want) {
			fprintf(stderr, "sim_ring: member %d got token %ld, not %ld\n", i, token,
				want);
			bad++;
		}
		mix((uint64_t)token << 8 | (uint64_t)(weft_worker_index() & 0xff));
		token++;
		if (weft_chan_send(links[(i + 1) % RING], &token, -1) != 0)
			bad++;
	}
	return NULL;
}

static void *waits_forever(void *arg)
{
	long v;
	weft_chan_recv(arg, &v, -1);
	return NULL;
}

static void *tree(void *arg)
{
	int depth = (int)(intptr_t)arg;
	if (depth == 0) {
		weft_fiber_yield();
		return (void *)(intptr_t)1;
	}
	weft_fiber_t kids[2];
	intptr_t n = 1;
	for (int k = 0; k < 2; k++)
		if (weft_fiber_spawn(&kids[k], NULL, tree, (void *)(intptr_t)(depth - 1)) != 0)
			return (void *)(intptr_t)-1000000;
	for (int k = 0; k < 2; k++) {
		void *r;
		if (weft_fiber_join(kids[k], -1, &r, NULL) != 0)
			return (void *)(intptr_t)-1000000;
		n += (intptr_t)r;
	}
	return (void *)n;
}

int main(int argc, char **argv)
{
	weft_config_t cfg = {0};
	if (argc > 1 && strcmp(argv[1], "deadlock") != 0)
		cfg.sim_seed = strtoull(argv[1], NULL, 0);
	int e = weft_init(&cfg);
	if (e) {
		printf("sim_ring: weft_init: %s: %s\n", strerror(-e), weft_init_error());
		return 2;
	}
	for (int i = 0; i < RING; i++)
		if (weft_chan_create(&links[i], sizeof(long), 1) != 0)
			return 1;
	for (int i = 0; i < RING; i++)
		if (weft_fiber_spawn(NULL, NULL, member, (void *)(intptr_t)i) != 0)
			return 1;
	weft_chan_t *never = NULL;
	/* "deadlock" after the seed, or alone when $WEFT_SIM_SEED has it
	 * (mk/sim.sh's SIM_ARGS). */
	bool deadlock = (argc > 2 && strcmp(argv[2], "deadlock") == 0) ||
			(argc == 2 && strcmp(argv[1], "deadlock") == 0);
	if (deadlock && (weft_chan_create(&never, sizeof(long), 1) != 0 ||
			 weft_fiber_spawn(NULL, NULL, waits_forever, never) != 0))
		return 1;
	weft_fiber_t root;
	if (weft_fiber_spawn(&root, NULL, tree, (void *)(intptr_t)DEPTH) != 0)
		return 1;
	void *r;
	if (weft_fiber_join(root, -1, &r, NULL) != 0)
		return 1;
	if (weft_run() != 0)
		return 1;
	for (int i = 0; i < RING; i++)
		weft_chan_destroy(links[i]);
	intptr_t want = ((intptr_t)1 << (DEPTH + 1)) - 1;
	printf("ring: %d fibers, %d hops%s\n", RING, RING * ROUNDS, bad ? ", FAILED" : "");
	printf("ring: placement 0x%016" PRIx64 "\n", placement);
	printf("tree: depth %d, %" PRIdPTR " fibers (want %" PRIdPTR ")\n", DEPTH, (intptr_t)r,
	       want);
	fflush(stdout);
	if (weft_shutdown() != 0)
		return 1;
	return bad || (intptr_t)r != want;
}
