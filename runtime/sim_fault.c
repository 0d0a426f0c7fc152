/* SPDX-License-Identifier: MIT */
/* The simulator's faults off the network (docs/decisions/simulation.md,
 * "Slice 4, as built"), in libweft-sim.a only, as sim.c. weft_init parses
 * WEFT_SIM_FAULTS (runtime.c) and starts them here once it has set up the
 * runtime; each fault is off unless its rate is set, and draws from a
 * stream of its own, split from the seed, so that turning one on shifts
 * neither the schedule's draws (sim.c's generator) nor another fault's.
 *
 * - alloc=N, stack=N: tests/allocwrap.c, which a scenario links with
 *   --wrap for malloc and the rest and for shim_stack_alloc, asks fail()
 *   below at each allocation (wt_alloc_fail_hook); N of 1000 fail. A
 *   refused fiber stack starves the fiber's first run (starve.c).
 * - cancel=N, intr=N: at each find_work point (a worker between fibers,
 *   holding no lock), N of 1000 pick a live fiber of the program's, by its
 *   place among them in the fiber table's order, and send it
 *   weft_fiber_cancel or weft_fiber_interrupt.
 * - drop=N, dup=N, delay=N: the simulated wire (net/sim_wire.c, through
 *   seam/sim_fault.h), one draw each per frame on lwIP's loopback queues;
 *   a delay's length is drawn from the delay stream too.
 * - part=N: one draw per frame between two simulated hosts (sim_wire.c);
 *   when it fires, a pair of hosts and how long it stays cut are drawn
 *   from the part stream too.
 *
 * What fired is counted and printed when the run ends:
 *
 *     weft sim: faults alloc 3/5120 stack 7/64 cancel 0/0 intr 0/0
 *
 * (fired/drawn), with " drop F/D dup F/D delay F/D" after it when drop,
 * dup or delay is set, and " part F/D cut C" (C: frames a partition cut)
 * when part is. */
#include <stdio.h>

#include "internal.h"

/* tests/allocwrap.c's, when the program is linked with it; else NULL. */
void wt_alloc_fail_hook(bool (*fail)(int stack)) __attribute__((weak));

static struct weft__sim_faults rates;
static bool on, busy;
static uint64_t net_seed;
static uint64_t stream[SIM_FAULT_KINDS];
static uint64_t drawn[SIM_FAULT_KINDS], fired[SIM_FAULT_KINDS], noted[SIM_FAULT_KINDS];

/* splitmix64 over one fault's stream. */
static uint64_t next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Whether fault k fires now: a draw from its stream, when its rate is set
 * (a rate of 0 draws nothing). */
static bool fire(enum weft__sim_fault k)
{
	if (!on || !rates.rate[k])
		return false;
	drawn[k]++;
	if (next(&stream[k]) % SIM_FAULT_RATE_MAX >= rates.rate[k])
		return false;
	fired[k]++;
	return true;
}

bool weft__sim_fault_fire(enum weft__sim_fault k) { return fire(k); }

uint64_t weft__sim_fault_value(enum weft__sim_fault k, uint64_t n) { return next(&stream[k]) % n; }

void weft__sim_fault_note(enum weft__sim_fault k) { noted[k]++; }

unsigned weft__sim_fault_rate(enum weft__sim_fault k) { return on ? rates.rate[k] : 0; }

uint64_t weft__sim_net_seed(void) { return on ? net_seed : 0; }

static bool fail(int stack) { return fire(stack ? SIM_FAULT_STACK : SIM_FAULT_ALLOC); }

int weft__sim_fault_start(uint64_t seed, const struct weft__sim_faults *f)
{
	rates = *f;
	for (int k = 0; k < SIM_FAULT_KINDS; k++) {
		/* The stream's start: the seed, told apart by the fault's
		 * number and mixed once, so that it is none of the schedule's
		 * states (seed + i * the golden ratio) nor another fault's. */
		uint64_t s = seed ^ (0xd1b54a32d192ed03ull * (uint64_t)(k + 1));
		stream[k] = next(&s);
		drawn[k] = fired[k] = noted[k] = 0;
	}
	on = busy = false;
	/* lwIP's generator (ISNs, ephemeral ports): from the seed, apart
	 * from every stream above; never 0. */
	uint64_t s = seed ^ 0x6c77697073656564ull;
	net_seed = next(&s) | 1;
	bool mem = rates.rate[SIM_FAULT_ALLOC] || rates.rate[SIM_FAULT_STACK];
	if (mem && !wt_alloc_fail_hook)
		return -EINVAL;
	if (wt_alloc_fail_hook)
		wt_alloc_fail_hook(mem ? fail : NULL);
	return 0;
}

void weft__sim_fault_arm(void) { on = true; }

/* The program's live fibers (no service of the runtime's, none finished),
 * in the fiber table's order: slot by slot, which depends only on the
 * schedule. */
struct live {
	weft_fiber_t ids[256];
	unsigned n;
};

static void collect(struct weft__fiber *f, void *ctx)
{
	struct live *l = ctx;
	if ((f->flags & (FF_SERVICE | FF_THREAD)) || l->n == 256 ||
	    atomic_load(&f->done.state) != FS_PENDING)
		return;
	l->ids[l->n++] = (weft_fiber_t)atomic_load(&f->handle);
}

static void strike(enum weft__sim_fault k)
{
	if (!fire(k))
		return;
	struct live l = {.n = 0};
	weft__fibers_each(collect, &l);
	if (!l.n)
		return;
	weft_fiber_t id = l.ids[next(&stream[k]) % l.n];
	if (k == SIM_FAULT_CANCEL)
		(void)weft_fiber_cancel(id);
	else
		(void)weft_fiber_interrupt(id);
}

void weft__sim_fault_point(enum weft__sim_kind kind)
{
	/* Only where a worker holds no lock of the runtime's (cancel takes
	 * the fiber table's), and not from within a strike's own points. */
	if (!on || busy || kind != SIM_FIND_WORK)
		return;
	busy = true;
	strike(SIM_FAULT_CANCEL);
	strike(SIM_FAULT_INTR);
	busy = false;
}

void weft__sim_fault_words(char *buf, size_t size)
{
	size_t at = 0;
	buf[0] = 0;
	for (int k = 0; k < SIM_FAULT_KINDS && at < size; k++) {
		if (!rates.rate[k])
			continue;
		int n = snprintf(buf + at, size - at, "%s%s=%u", at ? "," : "", SIM_FAULT_NAME(k),
				 (unsigned)rates.rate[k]);
		if (n < 0)
			break;
		at += (size_t)n;
	}
}

void weft__sim_fault_stop(void)
{
	if (!on)
		return;
	on = false;
	if (wt_alloc_fail_hook)
		wt_alloc_fail_hook(NULL);
	bool any = false;
	for (int k = 0; k < SIM_FAULT_KINDS; k++)
		any |= rates.rate[k] != 0;
	if (!any)
		return;
	char line[256];
	int n = snprintf(line, sizeof line,
			 "weft sim: faults alloc %llu/%llu stack %llu/%llu cancel %llu/%llu intr "
			 "%llu/%llu\n",
			 (unsigned long long)fired[0], (unsigned long long)drawn[0],
			 (unsigned long long)fired[1], (unsigned long long)drawn[1],
			 (unsigned long long)fired[2], (unsigned long long)drawn[2],
			 (unsigned long long)fired[3], (unsigned long long)drawn[3]);
	if (n > 0 && (rates.rate[SIM_FAULT_DROP] || rates.rate[SIM_FAULT_DUP] ||
		      rates.rate[SIM_FAULT_DELAY]))
		n = snprintf(line + n - 1, sizeof line - (size_t)(n - 1),
			     " drop %llu/%llu dup %llu/%llu delay %llu/%llu\n",
			     (unsigned long long)fired[4], (unsigned long long)drawn[4],
			     (unsigned long long)fired[5], (unsigned long long)drawn[5],
			     (unsigned long long)fired[6], (unsigned long long)drawn[6]) +
		    n - 1;
	if (n > 0 && rates.rate[SIM_FAULT_PART])
		n = snprintf(line + n - 1, sizeof line - (size_t)(n - 1),
			     " part %llu/%llu cut %llu\n", (unsigned long long)fired[7],
			     (unsigned long long)drawn[7], (unsigned long long)noted[7]) +
		    n - 1;
	if (n > 0)
		shim_console_write(line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}
