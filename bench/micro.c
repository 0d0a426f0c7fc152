/* SPDX-License-Identifier: MIT */
/* weft's side of the scheduler rows of `make bench` (mk/bench.sh): each row
 * does what its peer in bench/peers/ does (Boost.Context, Boost.Fiber, Go),
 * and prints "bench: NAME VALUE UNIT" lines for the harness.
 *
 * Usage: micro ROW [ARGS]      no ROW: every row at a tiny size
 *   switch N        N ping-pongs through arch_switch, the default switch (the
 *                   FP control state is the worker's): ns per one-way switch
 *   switchfp N      the same with each side keeping its own FP control state,
 *                   as two WEFT_ATTR_FPENV fibers do (runtime/switch.c)
 *   spawn N W       N fibers spawned, run and joined in batches of 1,000 by
 *                   one fiber: ns per fiber
 *   spawnwg N W     the same, the fibers detached and waited for on one
 *                   wait group, as Go's spawn row does: ns per fiber
 *   spawn1 N W      N fibers spawned and joined one at a time (serial: the
 *                   spawner joins each before the next): ns per fiber. Not
 *                   in "all" (no anchor in make bench; docs/benchmarks.md)
 *   chan N W        N round trips over two unbuffered channels between two
 *                   fibers: ns per round trip
 *   chant N W       the same, each send and receive with a deadline an hour
 *                   ahead (every park arms and disarms a timer)
 *   yield F Y W     F fibers x Y yields each: ns per yield
 *   yieldt F Y W    the same while a timer is armed (one more fiber sleeps
 *                   for an hour): ns per yield
 *   ring R H W      a token passed around a ring of R fibers over unbuffered
 *                   channels, H hops (whole laps of R): ns per hop
 *   tree D W        a binary tree of fibers of depth D (2^(D+1) - 1 fibers),
 *                   each spawning its two children and joining them: ns per
 *                   fiber
 *   fib N D Y W     N detached fibers x (fib(D) + Y yields): wall ms, peak
 *                   RSS MB, and with W >= 2 runs per worker
 *   idle N W        N fibers parked on one future: RSS bytes per fiber
 * W is the number of workers: 1 if omitted (fib: 2; idle: the runtime's
 * default). RSS is read from /proc/self/status (Linux; 0 elsewhere). */
#ifdef __linux__
#define _GNU_SOURCE
#endif
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch.h"
#include "shim.h"
#include "weft.h"

#define BATCH 1000

static void die(const char *what, int err)
{
	fprintf(stderr, "micro: %s: %d\n", what, err);
	exit(1);
}

static void start(unsigned workers)
{
	weft_config_t c = {.workers = workers};
	int err = weft_init(&c);
	if (err)
		die("weft_init", err);
}

static void stop(void)
{
	weft_run();
	int err = weft_shutdown();
	if (err)
		die("weft_shutdown", err);
}

/* Run fn(arg) in a fiber and wait for it from this plain thread. */
static void in_fiber(weft_fn fn, void *arg)
{
	weft_fiber_t f;
	int err = weft_fiber_spawn(&f, NULL, fn, arg);
	if (!err)
		err = weft_fiber_join(f, -1, NULL, NULL);
	if (err)
		die("root fiber", err);
}

/* VmRSS or VmHWM in bytes, 0 where there is no /proc. */
static long proc_kb(const char *key)
{
	long kb = 0;
#ifdef __linux__
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	size_t n = strlen(key);
	while (f && fgets(line, sizeof line, f))
		if (strncmp(line, key, n) == 0 && line[n] == ':')
			kb = atol(line + n + 1);
	if (f)
		fclose(f);
#else
	(void)key;
#endif
	return kb * 1024;
}

/* ---- switch: the raw context switch ------------------------------------ */

static void *main_sp, *co_sp;
static arch_fpenv_t main_fp, co_fp;

static void co_body(void *arg)
{
	(void)arg;
	for (;;)
		arch_switch(&co_sp, main_sp);
}

static void co_body_fp(void *arg)
{
	(void)arg;
	for (;;) {
		arch_fpenv_save(&co_fp);
		arch_fpenv_load(&main_fp);
		arch_switch(&co_sp, main_sp);
	}
}

static void row_switch_fp(long n)
{
	struct shim_stack st;
	if (shim_stack_alloc(64 * 1024, &st) != 0)
		die("shim_stack_alloc", -1);
	co_sp = arch_frame_init((char *)st.base + st.size, co_body_fp, NULL);
	arch_fpenv_save(&co_fp);
	int64_t t0 = shim_now();
	for (long i = 0; i < n; i++) {
		arch_fpenv_save(&main_fp);
		arch_fpenv_load(&co_fp);
		arch_switch(&main_sp, co_sp);
	}
	int64_t t1 = shim_now();
	shim_stack_free(&st);
	printf("bench: switchfp %.3f ns\n", (double)(t1 - t0) / (2.0 * (double)n));
}

static void row_switch(long n)
{
	struct shim_stack st;
	if (shim_stack_alloc(64 * 1024, &st) != 0)
		die("shim_stack_alloc", -1);
	co_sp = arch_frame_init((char *)st.base + st.size, co_body, NULL);
	int64_t t0 = shim_now();
	for (long i = 0; i < n; i++)
		arch_switch(&main_sp, co_sp);
	int64_t t1 = shim_now();
	shim_stack_free(&st);
	printf("bench: switch %.3f ns\n", (double)(t1 - t0) / (2.0 * (double)n));
}

/* ---- spawn: spawn + run + join ----------------------------------------- */

static long spawn_n, spawn_batch = BATCH;
static _Atomic long spawn_sink;
static double spawn_ns;

static void *nop(void *arg)
{
	atomic_fetch_add_explicit(&spawn_sink, 1, memory_order_relaxed);
	return arg;
}

static void *spawner(void *arg)
{
	(void)arg;
	static weft_fiber_t f[BATCH];
	int64_t t0 = weft_now();
	for (long done = 0; done < spawn_n; done += spawn_batch) {
		long b = spawn_n - done < spawn_batch ? spawn_n - done : spawn_batch;
		for (long i = 0; i < b; i++) {
			int err = weft_fiber_spawn(&f[i], NULL, nop, NULL);
			if (err)
				die("spawn", err);
		}
		for (long i = 0; i < b; i++)
			weft_fiber_join(f[i], -1, NULL, NULL);
	}
	spawn_ns = (double)(weft_now() - t0) / (double)spawn_n;
	return NULL;
}

static void row_spawn(long n, unsigned workers)
{
	start(workers);
	spawn_n = n;
	in_fiber(spawner, NULL);
	stop();
	printf("bench: %s %.3f ns\n", spawn_batch == 1 ? "spawn1" : "spawn", spawn_ns);
}

/* ---- spawnwg: the spawn row shaped as Go's ---------------------------------
 * The same batches, the fibers detached and waited for on one wait group
 * (weft_waitgroup), as Go's row does with sync.WaitGroup: no handle is
 * joined, so this is spawn and run without the per-fiber join. */

static weft_waitgroup_t *spawn_wg;

static void *nop_done(void *arg)
{
	atomic_fetch_add_explicit(&spawn_sink, 1, memory_order_relaxed);
	weft_waitgroup_done(spawn_wg);
	return arg;
}

static void *spawner_wg(void *arg)
{
	(void)arg;
	int64_t t0 = weft_now();
	for (long done = 0; done < spawn_n; done += BATCH) {
		long b = spawn_n - done < BATCH ? spawn_n - done : BATCH;
		weft_waitgroup_add(spawn_wg, b);
		for (long i = 0; i < b; i++) {
			int err = weft_fiber_spawn(NULL, NULL, nop_done, NULL);
			if (err)
				die("spawn", err);
		}
		weft_waitgroup_wait(spawn_wg, -1);
	}
	spawn_ns = (double)(weft_now() - t0) / (double)spawn_n;
	return NULL;
}

static void row_spawn_wg(long n, unsigned workers)
{
	start(workers);
	int err = weft_waitgroup_create(&spawn_wg);
	if (err)
		die("weft_waitgroup_create", err);
	spawn_n = n;
	in_fiber(spawner_wg, NULL);
	weft_waitgroup_destroy(spawn_wg);
	stop();
	printf("bench: spawnwg %.3f ns\n", spawn_ns);
}

/* ---- chan: unbuffered round trip --------------------------------------- */

static weft_chan_t *ping, *pong;
static double chan_ns;

static void *ponger(void *arg)
{
	long v;
	(void)arg;
	while (weft_chan_recv(ping, &v, -1) == 0)
		if (weft_chan_send(pong, &v, -1) != 0)
			break;
	return NULL;
}

/* chant: the same with every send and receive given a deadline an hour
 * ahead, so that every park arms and disarms a timer (the clock read for
 * the deadline is part of the figure). */
#define CHANT_DEADLINE() (weft_now() + 3600000000000LL)

static void *ponger_timed(void *arg)
{
	long v;
	(void)arg;
	while (weft_chan_recv(ping, &v, CHANT_DEADLINE()) == 0)
		if (weft_chan_send(pong, &v, CHANT_DEADLINE()) != 0)
			break;
	return NULL;
}

static void *pinger_timed(void *arg)
{
	long n = *(long *)arg;
	int64_t t0 = weft_now();
	for (long i = 0; i < n; i++) {
		long v = i;
		if (weft_chan_send(ping, &v, CHANT_DEADLINE()) ||
		    weft_chan_recv(pong, &v, CHANT_DEADLINE()) || v != i)
			die("round trip", -1);
	}
	chan_ns = (double)(weft_now() - t0) / (double)n;
	return NULL;
}

static void *pinger(void *arg)
{
	long n = *(long *)arg;
	int64_t t0 = weft_now();
	for (long i = 0; i < n; i++) {
		long v = i;
		if (weft_chan_send(ping, &v, -1) || weft_chan_recv(pong, &v, -1) || v != i)
			die("round trip", -1);
	}
	chan_ns = (double)(weft_now() - t0) / (double)n;
	return NULL;
}

static void row_chan(long n, unsigned workers, int timed)
{
	start(workers);
	if (weft_chan_create(&ping, sizeof(long), 0) || weft_chan_create(&pong, sizeof(long), 0))
		die("weft_chan_create", -1);
	weft_fiber_t a, b;
	weft_fiber_spawn(&b, NULL, timed ? ponger_timed : ponger, NULL);
	weft_fiber_spawn(&a, NULL, timed ? pinger_timed : pinger, &n);
	weft_fiber_join(a, -1, NULL, NULL);
	weft_chan_close(ping);
	weft_fiber_join(b, -1, NULL, NULL);
	stop();
	weft_chan_destroy(ping);
	weft_chan_destroy(pong);
	printf("bench: %s %.3f ns\n", timed ? "chant" : "chan", chan_ns);
}

/* ---- yield: many fibers yielding ------------------------------------- */

static long yields;
static double yield_ns;

static void *yielder(void *arg)
{
	(void)arg;
	for (long i = 0; i < yields; i++)
		weft_fiber_yield();
	return NULL;
}

/* yieldt: one more fiber asleep for an hour, so that a timer is armed
 * all along, as in a program with a timeout pending somewhere. */
static void *sleeper_hour(void *arg)
{
	(void)arg;
	weft_sleep_until(weft_deadline_in(3600000000000));
	return NULL;
}

static int yield_timer;

static void *yield_root(void *arg)
{
	long nf = *(long *)arg;
	weft_fiber_t *f = malloc((size_t)nf * sizeof *f);
	if (!f)
		die("malloc", -1);
	weft_fiber_t sleeper = 0;
	if (yield_timer && weft_fiber_spawn(&sleeper, NULL, sleeper_hour, NULL))
		die("spawn", -1);
	int64_t t0 = weft_now();
	for (long i = 0; i < nf; i++)
		if (weft_fiber_spawn(&f[i], NULL, yielder, NULL))
			die("spawn", -1);
	for (long i = 0; i < nf; i++)
		weft_fiber_join(f[i], -1, NULL, NULL);
	yield_ns = (double)(weft_now() - t0) / (double)(nf * yields);
	if (sleeper) {
		weft_fiber_cancel(sleeper);
		weft_fiber_join(sleeper, -1, NULL, NULL);
	}
	free(f);
	return NULL;
}

static void row_yield(long nf, long ny, unsigned workers, int timer)
{
	start(workers);
	yields = ny;
	yield_timer = timer;
	in_fiber(yield_root, &nf);
	stop();
	printf("bench: %s %.3f ns\n", timer ? "yieldt" : "yield", yield_ns);
}

/* ---- ring: a token around a ring of fibers ----------------------------- */

/* Fiber i receives on ring_ch[i] and sends to ring_ch[i + 1] (mod R); the
 * timing fiber is member 0. When ring_ch[1] is closed, each member closes
 * the channel after its own and ends. */
static weft_chan_t **ring_ch;
static long ring_r;

static void *ring_member(void *arg)
{
	long i = (long)(intptr_t)arg, v;
	weft_chan_t *in = ring_ch[i], *out = ring_ch[(i + 1) % ring_r];
	while (weft_chan_recv(in, &v, -1) == 0) {
		v++;
		if (weft_chan_send(out, &v, -1))
			die("ring send", -1);
	}
	weft_chan_close(out);
	return NULL;
}

struct ring_run {
	long laps;
	double ns;
};

static void *ring_root(void *arg)
{
	struct ring_run *run = arg;
	weft_fiber_t *f = malloc((size_t)ring_r * sizeof *f);
	if (!f)
		die("malloc", -1);
	for (long i = 1; i < ring_r; i++)
		if (weft_fiber_spawn(&f[i], NULL, ring_member, (void *)(intptr_t)i))
			die("spawn", -1);
	int64_t t0 = weft_now();
	for (long lap = 0; lap < run->laps; lap++) {
		long v = 0;
		if (weft_chan_send(ring_ch[1], &v, -1) || weft_chan_recv(ring_ch[0], &v, -1) ||
		    v != ring_r - 1)
			die("ring lap", -1);
	}
	run->ns = (double)(weft_now() - t0) / (double)(run->laps * ring_r);
	weft_chan_close(ring_ch[1]);
	for (long i = 1; i < ring_r; i++)
		weft_fiber_join(f[i], -1, NULL, NULL);
	free(f);
	return NULL;
}

static void row_ring(long r, long hops, unsigned workers)
{
	if (r < 2)
		die("ring: R below 2", -1);
	struct ring_run run = {.laps = hops / r > 0 ? hops / r : 1};
	start(workers);
	ring_r = r;
	ring_ch = calloc((size_t)r, sizeof *ring_ch);
	if (!ring_ch)
		die("calloc", -1);
	for (long i = 0; i < r; i++)
		if (weft_chan_create(&ring_ch[i], sizeof(long), 0))
			die("weft_chan_create", -1);
	in_fiber(ring_root, &run);
	stop();
	for (long i = 0; i < r; i++)
		weft_chan_destroy(ring_ch[i]);
	free(ring_ch);
	printf("bench: ring %.3f ns hops=%ld\n", run.ns, run.laps * r);
}

/* ---- tree: each fiber spawns two children and joins them ---------------- */

/* Returns the number of fibers in its subtree, itself included. */
static void *tree_node(void *arg)
{
	long depth = (long)(intptr_t)arg;
	if (depth == 0)
		return (void *)(intptr_t)1;
	weft_fiber_t a, b;
	void *ra, *rb;
	if (weft_fiber_spawn(&a, NULL, tree_node, (void *)(intptr_t)(depth - 1)) ||
	    weft_fiber_spawn(&b, NULL, tree_node, (void *)(intptr_t)(depth - 1)))
		die("tree spawn", -1);
	if (weft_fiber_join(a, -1, &ra, NULL) || weft_fiber_join(b, -1, &rb, NULL))
		die("tree join", -1);
	return (void *)(1 + (intptr_t)ra + (intptr_t)rb);
}

struct tree_run {
	long depth;
	double ns;
};

static void *tree_root(void *arg)
{
	struct tree_run *run = arg;
	weft_fiber_t f;
	void *count;
	int64_t t0 = weft_now();
	if (weft_fiber_spawn(&f, NULL, tree_node, (void *)(intptr_t)run->depth) ||
	    weft_fiber_join(f, -1, &count, NULL))
		die("tree root", -1);
	int64_t t1 = weft_now();
	if ((intptr_t)count != ((intptr_t)2 << run->depth) - 1)
		die("tree: wrong count", -1);
	run->ns = (double)(t1 - t0) / (double)(intptr_t)count;
	return NULL;
}

static void row_tree(long depth, unsigned workers)
{
	if (depth < 0 || depth > 30)
		die("tree: D out of [0, 30]", -1);
	struct tree_run run = {.depth = depth};
	start(workers);
	in_fiber(tree_root, &run);
	stop();
	printf("bench: tree %.3f ns fibers=%ld\n", run.ns, (2L << depth) - 1);
}

/* ---- fib: compute and yield ------------------------------------------ */

struct slot {
	_Atomic uint64_t runs;
	char pad[64 - sizeof(uint64_t)];
};
static struct slot runs[16];
static int fib_depth;
static long fib_yields, fib_n;
static _Atomic long fib_sink;

/* Plain double recursion: gcc's tail-recursion accumulator would halve the
 * calls, and Go's compiler does not do it, so it is off here. */
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("no-optimize-sibling-calls")))
#endif
__attribute__((noinline)) static long
fib(int n)
{
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

static void count_run(void)
{
	int w = weft_worker_index();
	if (w >= 0 && w < 16)
		atomic_fetch_add_explicit(&runs[w].runs, 1, memory_order_relaxed);
}

static void *fib_fiber(void *arg)
{
	(void)arg;
	count_run();
	atomic_fetch_add_explicit(&fib_sink, fib(fib_depth), memory_order_relaxed);
	for (long i = 0; i < fib_yields; i++) {
		weft_fiber_yield();
		count_run();
	}
	return NULL;
}

static void *fib_root(void *arg)
{
	(void)arg;
	for (long i = 0; i < fib_n; i++)
		if (weft_fiber_spawn(NULL, NULL, fib_fiber, NULL))
			die("spawn", -1);
	return NULL;
}

static void row_fib(long n, int depth, long ny, unsigned workers)
{
	start(workers);
	fib_n = n;
	fib_depth = depth;
	fib_yields = ny;
	int64_t t0 = weft_now();
	weft_fiber_spawn(NULL, NULL, fib_root, NULL);
	weft_run();
	int64_t t1 = weft_now();
	long hwm = proc_kb("VmHWM");
	if (atomic_load(&fib_sink) != n * fib(depth))
		die("fib: wrong sum", -1);
	unsigned nw = weft_workers() < 16 ? weft_workers() : 16;
	stop();
	printf("bench: fib_ms %.3f ms\n", (double)(t1 - t0) / 1e6);
	printf("bench: fib_rss %.3f MB\n", (double)hwm / 1048576.0);
	if (nw < 2)
		return;
	/* The least loaded worker's runs over an even share (1 = even). */
	uint64_t total = 0, least = UINT64_MAX;
	for (unsigned i = 0; i < nw; i++) {
		uint64_t r = atomic_load(&runs[i].runs);
		total += r;
		least = r < least ? r : least;
	}
	printf("bench: fib_even %.3f share least=%llu total=%llu workers=%u\n",
	       (double)least * nw / (double)total, (unsigned long long)least,
	       (unsigned long long)total, nw);
}

/* ---- idle: parked fibers ----------------------------------------------- */

static weft_future_t *gate;
static _Atomic long parked;

static void *idler(void *arg)
{
	(void)arg;
	atomic_fetch_add(&parked, 1);
	weft_future_await(gate, -1, NULL);
	return NULL;
}

static void *idle_root(void *arg)
{
	long n = *(long *)arg;
	for (long i = 0; i < n; i++)
		if (weft_fiber_spawn(NULL, NULL, idler, NULL))
			die("spawn", -1);
	return NULL;
}

static void row_idle(long n, unsigned workers)
{
	start(workers);
	if (weft_future_create(&gate))
		die("weft_future_create", -1);
	weft_sleep_until(weft_deadline_in(10000000));
	long rss0 = proc_kb("VmRSS");
	weft_fiber_spawn(NULL, NULL, idle_root, &n);
	while (atomic_load(&parked) < n)
		weft_sleep_until(weft_deadline_in(1000000));
	/* Each has counted itself; let the last ones finish parking. */
	weft_sleep_until(weft_deadline_in(20000000));
	long rss1 = proc_kb("VmRSS");
	weft_future_resolve(gate, NULL);
	stop();
	weft_future_release(gate);
	printf("bench: idle %.1f B\n", (double)(rss1 - rss0) / (double)n);
}

/* ---- main -------------------------------------------------------------- */

static long num(int argc, char **argv, int i, long def) { return argc > i ? atol(argv[i]) : def; }

int main(int argc, char **argv)
{
	const char *row = argc > 1 ? argv[1] : "all";
	int all = strcmp(row, "all") == 0;
	if (all || !strcmp(row, "switch"))
		row_switch(num(argc, argv, 2, 100000));
	if (all || !strcmp(row, "switchfp"))
		row_switch_fp(num(argc, argv, 2, 100000));
	if (all || !strcmp(row, "spawn"))
		row_spawn(num(argc, argv, 2, 10000), (unsigned)num(argc, argv, 3, 1));
	if (!strcmp(row, "spawn1")) {
		spawn_batch = 1;
		row_spawn(num(argc, argv, 2, 10000), (unsigned)num(argc, argv, 3, 1));
	}
	if (all || !strcmp(row, "spawnwg"))
		row_spawn_wg(num(argc, argv, 2, 10000), (unsigned)num(argc, argv, 3, 1));
	if (all || !strcmp(row, "chan"))
		row_chan(num(argc, argv, 2, 10000), (unsigned)num(argc, argv, 3, 1), 0);
	if (all || !strcmp(row, "chant"))
		row_chan(num(argc, argv, 2, 10000), (unsigned)num(argc, argv, 3, 1), 1);
	if (all || !strcmp(row, "yield"))
		row_yield(num(argc, argv, 2, 10), num(argc, argv, 3, 100),
			  (unsigned)num(argc, argv, 4, 1), 0);
	if (all || !strcmp(row, "yieldt"))
		row_yield(num(argc, argv, 2, 10), num(argc, argv, 3, 100),
			  (unsigned)num(argc, argv, 4, 1), 1);
	if (all || !strcmp(row, "ring"))
		row_ring(num(argc, argv, 2, 100), num(argc, argv, 3, 10000),
			 (unsigned)num(argc, argv, 4, 1));
	if (all || !strcmp(row, "tree"))
		row_tree(num(argc, argv, 2, 10), (unsigned)num(argc, argv, 3, 1));
	if (all || !strcmp(row, "fib"))
		row_fib(num(argc, argv, 2, 1000), (int)num(argc, argv, 3, 15),
			num(argc, argv, 4, 10), (unsigned)num(argc, argv, 5, 2));
	if (all || !strcmp(row, "idle"))
		row_idle(num(argc, argv, 2, 1000), (unsigned)num(argc, argv, 3, 0));
	fflush(stdout);
	return 0;
}
