/* SPDX-License-Identifier: MIT */
/* A simulation scenario (scenario.h, docs/decisions/simulation.md): select
 * fan-in. PRODUCERS fibers each send ITEMS values on a channel of their
 * own, by weft_select with a send case and a short deadline (retried when
 * it passes), sleeping now and then; CONSUMERS fibers take them with
 * weft_select over every producer's channel and a deadline, dropping a
 * channel from their cases once it is closed (-EPIPE). Checks that every
 * value arrives exactly once, each consumer sees one producer's values in
 * the order sent, and nothing arrives after a close; prints how many
 * selects ended at their deadline (a schedule's count). select.c's own
 * generator is seeded from the simulation's seed (SIM_SELECT_SEED), so a
 * seed replays its choices too. */
#include <errno.h>

#include "scenario.h"

#define PRODUCERS 3
#define CONSUMERS 2
#define ITEMS 40

static weft_chan_t *chans[PRODUCERS];
static _Atomic int seen[PRODUCERS][ITEMS];
static _Atomic int send_timeouts, recv_timeouts;

static void *producer(void *arg)
{
	int p = (int)(intptr_t)arg;
	scenario_place((uint64_t)p);
	for (int i = 0; i < ITEMS; i++) {
		int v = p * ITEMS + i;
		weft_select_case_t c = {.op = WEFT_SELECT_SEND, .chan = chans[p], .elem = &v};
		int r;
		while ((r = weft_select(&c, 1, weft_deadline_in(20000))) == -ETIMEDOUT)
			atomic_fetch_add(&send_timeouts, 1);
		CHECK(r == 0 && c.result == 0, "producer %d: select %d, result %d", p, r, c.result);
		/* Gaps long enough for the consumers' deadlines to pass. */
		if ((i + p) % 7 == 0)
			CHECK(weft_sleep_until(weft_deadline_in(100000 * (p + 1))) == 0, "sleep");
	}
	CHECK(weft_chan_close(chans[p]) == 0, "close %d", p);
	return NULL;
}

static void *consumer(void *arg)
{
	int k = (int)(intptr_t)arg;
	scenario_place((uint64_t)(100 + k));
	int vals[PRODUCERS];
	int last[PRODUCERS];
	weft_select_case_t cases[PRODUCERS];
	for (int p = 0; p < PRODUCERS; p++) {
		last[p] = -1;
		cases[p] = (weft_select_case_t){
			.op = WEFT_SELECT_RECV, .chan = chans[p], .elem = &vals[p]};
	}
	intptr_t got = 0;
	for (int open = PRODUCERS; open > 0;) {
		int r = weft_select(cases, PRODUCERS, weft_deadline_in(50000));
		if (r == -ETIMEDOUT) {
			atomic_fetch_add(&recv_timeouts, 1);
			continue;
		}
		CHECK(r >= 0 && r < PRODUCERS, "consumer %d: select %d", k, r);
		if (cases[r].result == -EPIPE) {
			cases[r].op = WEFT_SELECT_NONE;
			open--;
			continue;
		}
		CHECK(cases[r].result == 0, "consumer %d: case %d result %d", k, r,
		      cases[r].result);
		int v = vals[r];
		CHECK(v / ITEMS == r, "consumer %d: %d from producer %d", k, v, r);
		CHECK(v % ITEMS > last[r], "consumer %d: %d after %d", k, v % ITEMS, last[r]);
		last[r] = v % ITEMS;
		CHECK(atomic_fetch_add(&seen[r][v % ITEMS], 1) == 0, "value %d twice", v);
		got++;
	}
	return (void *)got;
}

int main(int argc, char **argv)
{
	scenario_init("sim_select", argc, argv);
	for (int p = 0; p < PRODUCERS; p++)
		CHECK(weft_chan_create(&chans[p], sizeof(int), (size_t)p) == 0, "chan %d", p);
	weft_fiber_t fs[PRODUCERS + CONSUMERS];
	for (int k = 0; k < CONSUMERS; k++)
		CHECK(weft_fiber_spawn(&fs[k], NULL, consumer, (void *)(intptr_t)k) == 0, "spawn");
	for (intptr_t p = 0; p < PRODUCERS; p++)
		CHECK(weft_fiber_spawn(&fs[CONSUMERS + p], NULL, producer, (void *)p) == 0,
		      "spawn %d", (int)p);
	intptr_t got = 0;
	for (int f = 0; f < PRODUCERS + CONSUMERS; f++) {
		void *r;
		int status;
		CHECK(weft_fiber_join(fs[f], -1, &r, &status) == 0 && status == 0, "join %d", f);
		got += (intptr_t)r;
	}
	for (int p = 0; p < PRODUCERS; p++)
		for (int i = 0; i < ITEMS; i++)
			CHECK(atomic_load(&seen[p][i]) == 1, "value %d seen %d times",
			      p * ITEMS + i, atomic_load(&seen[p][i]));
	CHECK(got == PRODUCERS * ITEMS, "%" PRIdPTR " values taken", got);
	for (int p = 0; p < PRODUCERS; p++)
		CHECK(weft_chan_destroy(chans[p]) == 0, "destroy %d", p);
	printf("sim_select: %d producers, %d consumers, %" PRIdPTR " values, %d send and %d "
	       "receive deadlines passed\n",
	       PRODUCERS, CONSUMERS, got, atomic_load(&send_timeouts), atomic_load(&recv_timeouts));
	return scenario_end();
}
