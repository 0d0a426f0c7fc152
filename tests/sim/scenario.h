/* SPDX-License-Identifier: MIT */
/* What the simulation scenarios (tests/sim/sim_*.c but sim_ring, which came
 * first) share: the seed from the first argument when it is a number
 * (decimal, or hexadecimal after 0x), else from $WEFT_SIM_SEED; 2 to 4 workers drawn from it (unless
 * $WEFT_WORKERS says), weft_init, a check that prints what went wrong and
 * aborts, and a placement sum (which worker ran what: it depends on the
 * schedule, so two runs of one seed print the same and two seeds rarely
 * do). Each scenario prints its lines after "NAME: " and exits 0 when
 * every check held; a check that fails aborts; weft_init refusing is exit
 * 2. mk/sim.sh runs them over many seeds, tests/sim/determinism.sh checks
 * that a seed replays. Without a seed a scenario runs on threads, as with
 * libweft.a (NAME.plain). */
#ifndef WEFT_TESTS_SIM_SCENARIO_H
#define WEFT_TESTS_SIM_SCENARIO_H

#include <inttypes.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weft.h"

static const char *scenario_name = "sim";
static uint64_t scenario_seed; /* 0: none known here (weft_init may still read one) */
static _Atomic uint64_t scenario_placement;

/* Print "NAME: what went wrong" and abort: a failed check. */
static void scenario_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void scenario_fail(const char *fmt, ...)
{
	va_list ap;
	printf("%s: FAILED: ", scenario_name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	abort();
}

#define CHECK(cond, ...)                            \
	do {                                        \
		if (!(cond))                        \
			scenario_fail(__VA_ARGS__); \
	} while (0)

/* FNV-1a of one value, for the placement. */
static uint64_t scenario_hash(uint64_t v)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (int i = 0; i < 8; i++) {
		h ^= (v >> (8 * i)) & 0xff;
		h *= 0x100000001b3ull;
	}
	return h;
}

/* Record that the work named tag ran on this worker (a sum: the order in
 * which fibers record does not matter, only where each ran). */
static void scenario_place(uint64_t tag)
{
	uint64_t w = (uint64_t)(weft_worker_index() + 1) & 0xff;
	atomic_fetch_add(&scenario_placement, scenario_hash(tag << 8 | w));
}

/* The seed in s (decimal, or hexadecimal after 0x), 0 when s is not one. */
static uint64_t scenario_parse_seed(const char *s)
{
	char *end;
	uint64_t v = s && *s && *s != '-' ? strtoull(s, &end, 0) : 0;
	return v && !*end ? v : 0;
}

/* The faults this scenario's checks take (keys of $WEFT_SIM_FAULTS, e.g.
 * "stack,alloc,cancel,intr"): a scenario opts in by setting it before
 * scenario_init (none by default: a refused stack fails a spawn with
 * -ENOMEM, a cancellation a yield with -ECANCELED). Another fault at a
 * rate above 0 is refused, exit 2, rather than failing a check it broke;
 * a malformed list or an unknown key is left to weft_init to refuse. */
static const char *scenario_faults = "";

static void scenario_check_faults(void)
{
	const char *s = getenv("WEFT_SIM_FAULTS");
	for (const char *p = s ? s : ""; *p;) {
		size_t len = strcspn(p, ",");
		const char *eq = memchr(p, '=', len);
		size_t klen = eq ? (size_t)(eq - p) : len;
		bool zero = eq && strspn(eq + 1, "0") == len - klen - 1;
		bool takes = false, known = false;
		for (const char *q = scenario_faults; *q;) {
			size_t qlen = strcspn(q, ",");
			takes |= qlen == klen && memcmp(p, q, klen) == 0;
			q += qlen + (q[qlen] != 0);
		}
		for (const char *q = "alloc,stack,cancel,intr,drop,dup,delay,part"; *q;) {
			size_t qlen = strcspn(q, ",");
			known |= qlen == klen && memcmp(p, q, klen) == 0;
			q += qlen + (q[qlen] != 0);
		}
		if (known && !zero && !takes) {
			printf("%s: WEFT_SIM_FAULTS: %.*s: not a fault this scenario's checks take "
			       "(it takes: %s)\n",
			       scenario_name, (int)len, p,
			       *scenario_faults ? scenario_faults : "none");
			fflush(stdout);
			exit(2);
		}
		p += len + (p[len] != 0);
	}
}

/* make sim's swarm (mk/sim.sh SWARM=1 sets $WEFT_SIM_SWARM=1), when
 * $WEFT_SIM_FAULTS is unset: this run's faults drawn from its seed, each
 * fault the scenario takes on or off and at one of a few rates, so that
 * seeds try different mixes. Printed first ("NAME: swarm
 * WEFT_SIM_FAULTS=..."), so that a run that fails a check before the
 * simulator's line still names them: the replay line spells them out. */
static char scenario_swarm_faults[96];

static const char *scenario_swarm(uint64_t seed)
{
	static const unsigned rates[] = {1, 5, 20, 100, 300};
	uint64_t z = seed;
	size_t at = 0, size = sizeof scenario_swarm_faults;
	scenario_swarm_faults[0] = 0;
	for (const char *q = scenario_faults; *q && at < size;) {
		size_t qlen = strcspn(q, ",");
		z = scenario_hash(z + 0x5eed);
		if (z & 1) {
			int n = snprintf(scenario_swarm_faults + at, size - at, "%s%.*s=%u",
					 at ? "," : "", (int)qlen, q, rates[(z >> 8) % 5]);
			at += n > 0 ? (size_t)n : 0;
		}
		q += qlen + (q[qlen] != 0);
	}
	printf("%s: swarm WEFT_SIM_FAULTS=%s\n", scenario_name, scenario_swarm_faults);
	return scenario_swarm_faults;
}

/* Start the runtime for scenario NAME: argv[1], when it is a number, is the
 * seed (else $WEFT_SIM_SEED, which weft_init reads); the argument after
 * it is the scenario's mode, returned ("" for none). Exits 2 when
 * weft_init refuses. */
static const char *scenario_init(const char *name, int argc, char **argv)
{
	scenario_name = name;
	scenario_check_faults();
	weft_config_t cfg = {0};
	int next = 1;
	if (argc > 1 && (cfg.sim_seed = scenario_parse_seed(argv[1])) != 0)
		next = 2;
	scenario_seed = cfg.sim_seed ? cfg.sim_seed : scenario_parse_seed(getenv("WEFT_SIM_SEED"));
	const char *swarm = getenv("WEFT_SIM_SWARM"), *faults = getenv("WEFT_SIM_FAULTS");
	if (scenario_seed && *scenario_faults && swarm && strcmp(swarm, "1") == 0 &&
	    !(faults && *faults))
		cfg.sim_faults = scenario_swarm(scenario_seed);
	const char *w = getenv("WEFT_WORKERS");
	if (scenario_seed && !(w && *w))
		cfg.workers = 2 + (unsigned)(scenario_seed % 3);
	int e = weft_init(&cfg);
	if (e) {
		printf("%s: weft_init: %s: %s\n", name, strerror(-e), weft_init_error());
		fflush(stdout);
		exit(2);
	}
	return argc > next ? argv[next] : "";
}

/* The last line of the scenario's own, then the runtime goes (and, in a
 * simulation, the simulator prints its line). Returns main's status. */
static int scenario_end(void)
{
	printf("%s: workers %u, placement 0x%016" PRIx64 "\n", scenario_name, weft_workers(),
	       atomic_load(&scenario_placement));
	fflush(stdout);
	if (weft_run() != 0 || weft_shutdown() != 0)
		scenario_fail("weft_run or weft_shutdown");
	return 0;
}

#endif
