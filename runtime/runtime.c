/* SPDX-License-Identifier: MIT */
/* Starting and stopping the runtime: configuration, worker threads, waiting
 * for every fiber to finish, and the graceful shutdown that cancels them. */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define DEFAULT_STACK (64 * 1024)
#define MIN_STACK (4 * 1024)
#define MAX_STACK ((size_t)1 << 30)
#define DEFAULT_STALL_MS 100
#define MAX_STALL_MS 3600000

int weft__parse_ulong(const char *s, unsigned long lo, unsigned long hi, unsigned long *out)
{
	char *end;
	unsigned long v = strtoul(s, &end, 10);
	if (*end || v < lo || v > hi || s[0] == '-')
		return -EINVAL;
	*out = v;
	return 0;
}

/* Why the last weft_init failed ("" after a success): weft_init_error. */
static char init_err[192];

/* Refuse weft_init with e, saying why: the text is kept for
 * weft_init_error and written on the console, one line, since the person
 * who set a variable or wrote the configuration reads it there (a program
 * that prints only the number would tell them nothing). */
static int refuse(int e, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(init_err, sizeof init_err, fmt, ap);
	va_end(ap);
	char line[sizeof init_err + 16];
	int n = snprintf(line, sizeof line, "weft_init: %s\n", init_err);
	if (n > 0)
		shim_console_write(line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
	return e;
}

const char *weft_init_error(void) { return init_err; }

/* A decimal environment value in [lo, hi]: 1 with *out set, 0 if unset or
 * empty, or weft_init refused (-EINVAL) naming the variable, its value and
 * the range. */
static int env_num(const char *name, unsigned long lo, unsigned long hi, unsigned long *out)
{
	const char *s = shim_getenv(name);
	if (!s || !*s)
		return 0;
	if (weft__parse_ulong(s, lo, hi, out))
		return refuse(-EINVAL, "%s=%.40s: not a whole number from %lu to %lu", name, s, lo,
			      hi);
	return 1;
}

/* The simulation's fault rates (docs/api.md, WEFT_SIM_FAULTS): a comma
 * list of KEY=N, N per mille from 0 to 1000, each key at most once; "" is
 * none. what names the source for the message ("WEFT_SIM_FAULTS=..."). 0,
 * or weft_init refused (-EINVAL) naming the word it could not take. A
 * partition (part) needs the simulated hosts of lwIP's loop netif:
 * weft_net_init refuses it with a device netif (net/lwip_port.c). */
static int parse_faults(const char *what, const char *s, struct weft__sim_faults *out)
{
	*out = (struct weft__sim_faults){{0}};
	unsigned seen = 0;
	for (const char *p = s;;) {
		const char *end = strchr(p, ',');
		int len = end ? (int)(end - p) : (int)strlen(p);
		const char *eq = memchr(p, '=', (size_t)len);
		int klen = eq ? (int)(eq - p) : len;
		int k = 0;
		while (k < SIM_FAULT_KINDS && ((int)strlen(SIM_FAULT_NAME(k)) != klen ||
					       memcmp(p, SIM_FAULT_NAME(k), (size_t)klen) != 0))
			k++;
		if (len == 0)
			return refuse(-EINVAL, "%.80s: an empty word", what);
		if (k == SIM_FAULT_KINDS)
			return refuse(-EINVAL,
				      "%.80s: \"%.*s\": no such fault (alloc, stack, cancel, "
				      "intr, drop, dup, delay, part)",
				      what, len, p);
		unsigned long v = 0;
		int digits = 0;
		for (const char *d = eq ? eq + 1 : p + len; d < p + len; d++, digits++) {
			if (*d < '0' || *d > '9' || digits == 4)
				break;
			v = v * 10 + (unsigned long)(*d - '0');
		}
		if (!eq || digits == 0 || eq + 1 + digits != p + len || v > SIM_FAULT_RATE_MAX)
			return refuse(-EINVAL,
				      "%.80s: \"%.*s\": not %s=N with N per mille from 0 to %d",
				      what, len, p, SIM_FAULT_NAME(k), SIM_FAULT_RATE_MAX);
		if (seen & (1u << k))
			return refuse(-EINVAL, "%.80s: \"%.*s\": %s given twice", what, len, p,
				      SIM_FAULT_NAME(k));
		seen |= 1u << k;
		out->rate[k] = (uint16_t)v;
		if (!end)
			break;
		p = end + 1;
		if (!*p)
			return refuse(-EINVAL, "%.80s: an empty word", what);
	}
	return 0;
}

int weft_init(const weft_config_t *cfg)
{
	if (atomic_load(&weft__rt.running))
		return refuse(-EALREADY, "already running (weft_shutdown first)");
	init_err[0] = 0;
	weft_config_t c = {0};
	if (cfg)
		c = *cfg;
	unsigned long v;
	int e;
	/* A simulation's seed: the configuration's, else $WEFT_SIM_SEED
	 * (decimal, or hexadecimal after 0x). Only libweft-sim.a runs one
	 * (sim.h, docs/decisions/simulation.md). */
	uint64_t sim_seed = c.sim_seed;
	const char *seed_env = shim_getenv("WEFT_SIM_SEED");
	if (!sim_seed && seed_env && *seed_env) {
		char *end;
		errno = 0;
		unsigned long long s = strtoull(seed_env, &end, 0);
		if (*end || !s || errno || seed_env[0] == '-')
			return refuse(-EINVAL,
				      "WEFT_SIM_SEED=%.40s: not a whole number from 1 to "
				      "2^64-1 (decimal, or hexadecimal after 0x)",
				      seed_env);
		sim_seed = s;
	}
	/* Its faults: the configuration's, else $WEFT_SIM_FAULTS. */
	const char *faults_src = c.sim_faults ? c.sim_faults : shim_getenv("WEFT_SIM_FAULTS");
	bool faults_on = faults_src && *faults_src;
	struct weft__sim_faults faults = {{0}};
	if (faults_on) {
		char what[96];
		snprintf(what, sizeof what, "%s%.60s%s",
			 c.sim_faults ? "weft_config_t.sim_faults \"" : "WEFT_SIM_FAULTS=",
			 faults_src, c.sim_faults ? "\"" : "");
		if ((e = parse_faults(what, faults_src, &faults)) < 0)
			return e;
	}
	if (sim_seed && !WEFT__SIM_BUILD)
		return refuse(-ENOTSUP,
			      "a simulation seed (weft_config_t.sim_seed or WEFT_SIM_SEED) "
			      "needs the program linked with libweft-sim.a, not libweft.a");
	if (faults_on && !WEFT__SIM_BUILD)
		return refuse(-ENOTSUP,
			      "simulation faults (weft_config_t.sim_faults or WEFT_SIM_FAULTS) "
			      "need the program linked with libweft-sim.a, not libweft.a");
	if (faults_on && !sim_seed)
		return refuse(-EINVAL,
			      "simulation faults (weft_config_t.sim_faults or WEFT_SIM_FAULTS) "
			      "without a simulation seed");
	if (sim_seed && weft__sim_fault_start(sim_seed, &faults) < 0)
		return refuse(-EINVAL,
			      "the simulation faults alloc= and stack= need the program "
			      "linked with tests/allocwrap.c and --wrap for malloc, calloc, "
			      "realloc, aligned_alloc, free and shim_stack_alloc (as the "
			      "simulation scenarios are)");
	if (c.workers == 0) {
		if ((e = env_num("WEFT_WORKERS", 1, WEFT_MAX_WORKERS, &v)) < 0)
			return e;
		/* A simulation's run may not depend on the machine's CPUs. */
		c.workers = e ? (unsigned)v : sim_seed ? 4 : shim_cpu_count();
		if (c.workers > WEFT_MAX_WORKERS)
			c.workers = WEFT_MAX_WORKERS;
	}
	if (c.workers > WEFT_MAX_WORKERS)
		return refuse(-EINVAL, "weft_config_t.workers %u: at most %d", c.workers,
			      WEFT_MAX_WORKERS);
	if (c.stack_size == 0) {
		if ((e = env_num("WEFT_STACK_KB", MIN_STACK / 1024, MAX_STACK / 1024, &v)) < 0)
			return e;
		c.stack_size = e ? v * 1024 : DEFAULT_STACK;
	}
	if (c.stack_size < MIN_STACK || c.stack_size > MAX_STACK)
		return refuse(-EINVAL, "weft_config_t.stack_size %zu: not from %d to %zu bytes",
			      c.stack_size, MIN_STACK, MAX_STACK);
	/* arch_switch moves the stack pointer but not a hardware shadow stack:
	 * with one on, the first return after a switch would fault. */
	if (arch_shadow_stack_on())
		return refuse(-ENOTSUP,
			      "this process runs with a hardware shadow stack (x86 CET "
			      "SHSTK or arm64 GCS), which weft's context switch does not "
			      "support. Run the program with shadow stacks off (glibc: "
			      "GLIBC_TUNABLES=glibc.cpu.x86_shstk=off) and do not link it "
			      "with -z shstk");
	/* The guard below each stack: $WEFT_GUARD_KB, else the CPU's default
	 * (the shim's ARCH_STACK_GUARD). Checked before anything is set up. */
	unsigned long guard_kb = 0;
	if ((e = env_num("WEFT_GUARD_KB", 4, SHIM_STACK_GUARD_MAX / 1024, &v)) < 0)
		return e;
	if (e)
		guard_kb = v;
	unsigned known = WEFT_CFG_VIRTUAL_CLOCK | WEFT_CFG_REAL_CLOCK | WEFT_CFG_HOST_LOOP |
			 WEFT_CFG_NO_QUIT_DUMP;
	if (c.flags & ~known)
		return refuse(-EINVAL, "weft_config_t.flags 0x%x: unknown bits 0x%x", c.flags,
			      c.flags & ~known);
	if ((c.flags & (WEFT_CFG_VIRTUAL_CLOCK | WEFT_CFG_REAL_CLOCK)) ==
	    (WEFT_CFG_VIRTUAL_CLOCK | WEFT_CFG_REAL_CLOCK))
		return refuse(-EINVAL, "weft_config_t.flags: WEFT_CFG_VIRTUAL_CLOCK and "
				       "WEFT_CFG_REAL_CLOCK together");
	bool host = c.flags & WEFT_CFG_HOST_LOOP;
	if (host) {
		if (cfg && cfg->workers > 1)
			return refuse(-EINVAL,
				      "weft_config_t.workers %u with WEFT_CFG_HOST_LOOP: 0 or 1",
				      cfg->workers);
		c.workers = 1;
	}
	if (sim_seed && (c.flags & (WEFT_CFG_HOST_LOOP | WEFT_CFG_REAL_CLOCK)))
		return refuse(-EINVAL, "weft_config_t.flags: WEFT_CFG_HOST_LOOP or "
				       "WEFT_CFG_REAL_CLOCK with a simulation seed");
	bool virt = (c.flags & WEFT_CFG_VIRTUAL_CLOCK) || sim_seed;
	if (!(c.flags & (WEFT_CFG_VIRTUAL_CLOCK | WEFT_CFG_REAL_CLOCK))) {
		const char *clk = shim_getenv("WEFT_CLOCK");
		if (clk && *clk && strcmp(clk, "real") != 0) {
			if (strcmp(clk, "virtual") != 0)
				return refuse(-EINVAL, "WEFT_CLOCK=%.40s: not real or virtual",
					      clk);
			virt = true;
		}
	}
	/* The stall detector's threshold: the configuration's, else
	 * $WEFT_STALL_MS (0 there: off), else the default. */
	if (c.stall_ms < WEFT_STALL_OFF || c.stall_ms > MAX_STALL_MS)
		return refuse(-EINVAL,
			      "weft_config_t.stall_ms %d: not from 1 to %d, 0 (the default) or "
			      "WEFT_STALL_OFF",
			      c.stall_ms, MAX_STALL_MS);
	if (c.stall_ms == 0) {
		if ((e = env_num("WEFT_STALL_MS", 0, MAX_STALL_MS, &v)) < 0)
			return e;
		c.stall_ms = e ? (v ? (int)v : WEFT_STALL_OFF) : DEFAULT_STALL_MS;
	}
	/* It measures CPU time, which a simulation does not replay. */
	if (sim_seed)
		c.stall_ms = WEFT_STALL_OFF;
	/* The shim's reactor backend, chosen at its first wait: a bad choice
	 * fails here, not there. */
	const char *io_err = shim_io_config_error();
	if (io_err)
		return refuse(-EINVAL, "%s", io_err);

	/* calloc would give malloc's alignment (16), not the 64 the deque's
	 * fields need against false sharing. sizeof is a multiple of 64. */
	size_t wbytes = c.workers * sizeof(struct weft__worker);
	struct weft__worker *ws = aligned_alloc(_Alignof(struct weft__worker), wbytes);
	if (!ws)
		return refuse(-ENOMEM, "no memory for %u workers", c.workers);
	memset(ws, 0, wbytes);
	(void)shim_stack_guard_set(guard_kb * 1024); /* in range: checked above */
	e = shim_fault_init(weft__name_fault);
	if (e) {
		free(ws);
		return refuse(e, "the stack overflow handler could not be set up (%s)",
			      strerror(-e));
	}
	weft__rt.nworkers = c.workers;
	weft__rt.stack_size = shim_stack_round(c.stack_size);
	weft__rt.workers = ws;
	weft__rt.host = host;
	weft__rt.fiber_main = weft__fiber_main;
	weft__rt.hooks = &weft__fiber_hooks;
	atomic_store(&weft__rt.draining, 0);
	atomic_store(&weft__rt.stopping, 0);
	atomic_store(&weft__rt.live, 0);
	atomic_store(&weft__rt.services, 0);
	atomic_store(&weft__rt.nspinning, 0);
	atomic_store(&weft__rt.monitor, 0);
	for (unsigned i = 0; i < c.workers; i++) {
		ws[i].index = (int)i;
		ws[i].rng = 0x9e3779b97f4a7c15ull * (i + 1);
	}
	if (sim_seed)
		weft__sim_start(sim_seed);
	weft__vclock_start(virt);
	weft__dump_init();
	atomic_store(&weft__rt.running, 1);
	unsigned started = 0;
	const char *what = "worker thread";
	for (; started < c.workers && !host; started++) {
		e = shim_thread_start(&ws[started].thread, weft__worker_main, &ws[started]);
		if (e)
			break;
	}
	/* The host loop has no worker thread for the detector to sample. */
	if (!e) {
		what = "stall detector's thread";
		e = weft__stall_start(
			host || c.stall_ms == WEFT_STALL_OFF ? 0 : (int64_t)c.stall_ms * 1000000,
			c.stall_fn, c.stall_ctx);
	}
	if (e) {
		weft__workers_stop();
		for (unsigned j = 0; j < started; j++)
			shim_thread_join(ws[j].thread);
		atomic_store(&weft__rt.running, 0);
		weft__vclock_start(false);
		free(ws);
		weft__rt.workers = NULL;
		return refuse(e, "could not start the %s (%s)", what, strerror(-e));
	}
	/* SIGQUIT prints weft_dump (Linux), unless the program handles it
	 * itself or opted out; a target without it (-ENOSYS) is no error. */
	if (!(c.flags & WEFT_CFG_NO_QUIT_DUMP) && !sim_seed) /* a thread of its own */
		(void)shim_on_quit(weft__dump_on_quit);
	if (sim_seed)
		weft__sim_fault_arm();
	return 0;
}

static _Atomic int holds;

void weft__runtime_hold(int delta) { atomic_fetch_add(&holds, delta); }

/* The stops weft_shutdown_grace calls (weft__runtime_on_grace): filled in
 * once each, never emptied, so they are read without the lock. */
#define MAX_GRACE_STOPS 4
static int (*_Atomic grace_stops[MAX_GRACE_STOPS])(void);
static weft__lock_t grace_lock = WEFT__LOCK_INIT;

int weft__runtime_on_grace(int (*stop)(void))
{
	int err = -ENOMEM;
	weft__lock(&grace_lock);
	for (int i = 0; i < MAX_GRACE_STOPS; i++) {
		int (*s)(void) = atomic_load(&grace_stops[i]);
		if (s == stop) {
			err = 0;
			break;
		}
		if (!s) {
			atomic_store(&grace_stops[i], stop);
			err = 0;
			break;
		}
	}
	weft__unlock(&grace_lock);
	return err;
}

/* Stop what holds the runtime, in the order registered: 0, or the first
 * stop's failure (the later ones are not tried). */
static int grace_stop_holders(void)
{
	for (int i = 0; i < MAX_GRACE_STOPS; i++) {
		int (*s)(void) = atomic_load(&grace_stops[i]);
		if (!s)
			break;
		int r = s();
		if (r < 0)
			return r;
	}
	return 0;
}

bool weft__running(void) { return atomic_load(&weft__rt.running); }

int weft_run(void)
{
	if (!atomic_load(&weft__rt.running))
		return -ESRCH;
	if (weft__worker_self())
		return -EPERM;
	if (weft__rt.host) {
		while (atomic_load(&weft__rt.live) != 0) {
			int r = weft__host_drive(-1);
			if (r < 0)
				return r;
		}
		return 0;
	}
	for (;;) {
		uint32_t seq = atomic_load(&weft__rt.live_seq);
		if (atomic_load(&weft__rt.live) == 0)
			return 0;
		shim_wait(&weft__rt.live_seq, seq, -1);
	}
}

int weft_shutdown(void)
{
	if (!atomic_load(&weft__rt.running))
		return -ESRCH;
	if (weft__worker_self())
		return -EPERM;
	if (weft__live_count() != 0 || atomic_load(&weft__rt.services) != 0 ||
	    atomic_load(&holds) != 0)
		return -EBUSY;
	shim_on_quit(NULL); /* waits for a dump in progress */
	weft__stall_stop(); /* before the workers it samples go */
	weft__offload_stop();
	weft__workers_stop();
	if (weft__rt.host) { /* no thread of its own */
		weft__stack_cache_drain(&weft__rt.workers[0]);
		weft__fiber_cache_drain(&weft__rt.workers[0]);
	} else
		for (unsigned i = 0; i < weft__rt.nworkers; i++)
			shim_thread_join(weft__rt.workers[i].thread);
	/* No fiber is alive, but plain threads may still wait in the reactor
	 * or on a timer of the virtual clock. From here a call finds the
	 * runtime stopped (the reactor and the timer heap look under their
	 * locks), and the resets end the waits still there before freeing
	 * what they wait in: an fd wait with -ESRCH, a virtual deadline with
	 * -ETIMEDOUT (its clock stops). Those first, so that an fd wait with
	 * a virtual deadline ends with -ESRCH. */
	atomic_store(&weft__rt.running, 0);
	free(weft__rt.workers);
	weft__rt.workers = NULL;
	weft__rt.nworkers = 0;
	weft__io_reset();
	weft__timer_reset();
	weft__fibers_reset();
	weft__stack_reset();
	weft__vclock_start(false);
	weft__rt.host = false;
	return 0;
}

unsigned weft_workers(void) { return atomic_load(&weft__rt.running) ? weft__rt.nworkers : 0; }

/* Wait until no fiber is alive or the deadline. 0 or -ETIMEDOUT. */
static int wait_all_done(int64_t deadline)
{
	deadline = weft__deadline_norm(deadline);
	if (weft__rt.host) {
		while (atomic_load(&weft__rt.live) != 0) {
			if (deadline >= 0 && (deadline == 0 || weft__now() >= deadline))
				return -ETIMEDOUT;
			int r = weft__host_drive(deadline);
			if (r < 0)
				return r;
		}
		return 0;
	}
	return weft__live_wait(deadline);
}

static bool pending_app_fiber(struct weft__fiber *f)
{
	return !(f->flags & FF_SERVICE) && atomic_load(&f->done.state) == FS_PENDING;
}

static void cancel_one(struct weft__fiber *f, void *ctx)
{
	(void)ctx;
	if (pending_app_fiber(f))
		weft__cancel_request(f);
}

struct report {
	weft_straggler_fn fn;
	void *ctx;
	int n;
};

static void report_one(struct weft__fiber *f, void *arg)
{
	struct report *r = arg;
	if (!pending_app_fiber(f))
		return;
	r->n++;
	if (r->fn) {
		r->fn(f->handle, weft__fiber_name_of(f), f->file, f->line, r->ctx);
		return;
	}
	char buf[160];
	int n = snprintf(buf, sizeof buf,
			 "weft: shutdown: fiber %llu \"%s\" (spawned at %s:%d) did not finish\n",
			 (unsigned long long)f->handle, weft__fiber_name_of(f),
			 f->file ? f->file : "?", f->line);
	if (n > 0)
		shim_console_write(buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

int weft_shutdown_grace(int64_t deadline, weft_straggler_fn report, void *ctx)
{
	if (!atomic_load(&weft__rt.running))
		return -ESRCH;
	if (weft__worker_self())
		return -EPERM;
	/* Before the walk: a fiber spawned during it is either seen by the
	 * walk or starts cancelled (fiber.c, spawn). */
	atomic_store(&weft__rt.draining, 1);
	weft__fibers_each(cancel_one, NULL);
	int r = wait_all_done(deadline);
	if (r == -ETIMEDOUT) {
		struct report rep = {report, ctx, 0};
		weft__fibers_each(report_one, &rep);
		if (rep.n > 0) {
			atomic_store(&weft__rt.draining, 0);
			return rep.n;
		}
		/* Every one finished after all, just now: the last is on its
		 * way out (between settling and leaving the count). */
		r = wait_all_done(-1);
	}
	atomic_store(&weft__rt.draining, 0);
	if (r < 0)
		return r;
	/* Every fiber has finished: what holds the runtime (the network
	 * stack, with its service fibers) stops now, so that one call ends
	 * it all. */
	r = grace_stop_holders();
	if (r < 0)
		return r;
	return weft_shutdown();
}
