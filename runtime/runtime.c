/* SPDX-License-Identifier: MIT */
/* Starting and stopping the runtime: configuration, worker threads, waiting
 * for every fiber to finish. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define DEFAULT_STACK (64 * 1024)
#define MIN_STACK (4 * 1024)
#define MAX_STACK ((size_t)1 << 30)

/* Parse a decimal environment value in [lo, hi]; 0 if unset, -EINVAL if bad. */
static int env_num(const char *name, unsigned long lo, unsigned long hi, unsigned long *out)
{
	const char *s = shim_getenv(name);
	if (!s || !*s)
		return 0;
	char *end;
	unsigned long v = strtoul(s, &end, 10);
	if (*end || v < lo || v > hi || s[0] == '-')
		return -EINVAL;
	*out = v;
	return 1;
}

int weft_init(const weft_config_t *cfg)
{
	if (atomic_load(&weft__rt.running))
		return -EALREADY;
	weft_config_t c = {0};
	if (cfg)
		c = *cfg;
	unsigned long v;
	int e;
	if (c.workers == 0) {
		if ((e = env_num("WEFT_WORKERS", 1, WEFT_MAX_WORKERS, &v)) < 0)
			return e;
		c.workers = e ? (unsigned)v : shim_cpu_count();
		if (c.workers > WEFT_MAX_WORKERS)
			c.workers = WEFT_MAX_WORKERS;
	}
	if (c.workers > WEFT_MAX_WORKERS)
		return -EINVAL;
	if (c.stack_size == 0) {
		if ((e = env_num("WEFT_STACK_KB", MIN_STACK / 1024, MAX_STACK / 1024, &v)) < 0)
			return e;
		c.stack_size = e ? v * 1024 : DEFAULT_STACK;
	}
	if (c.stack_size < MIN_STACK || c.stack_size > MAX_STACK)
		return -EINVAL;

	struct weft__worker *ws = calloc(c.workers, sizeof *ws);
	if (!ws)
		return -ENOMEM;
	e = shim_fault_init(weft__name_fault);
	if (e) {
		free(ws);
		return e;
	}
	weft__rt.nworkers = c.workers;
	weft__rt.stack_size = shim_stack_round(c.stack_size);
	weft__rt.workers = ws;
	atomic_store(&weft__rt.stopping, 0);
	atomic_store(&weft__rt.live, 0);
	atomic_store(&weft__rt.services, 0);
	atomic_store(&weft__rt.nspinning, 0);
	for (unsigned i = 0; i < c.workers; i++) {
		ws[i].index = (int)i;
		ws[i].rng = 0x9e3779b97f4a7c15ull * (i + 1);
	}
	atomic_store(&weft__rt.running, 1);
	for (unsigned i = 0; i < c.workers; i++) {
		e = shim_thread_start(&ws[i].thread, weft__worker_main, &ws[i]);
		if (e) {
			weft__workers_stop();
			for (unsigned j = 0; j < i; j++)
				shim_thread_join(ws[j].thread);
			atomic_store(&weft__rt.running, 0);
			free(ws);
			weft__rt.workers = NULL;
			return e;
		}
	}
	return 0;
}

static _Atomic int holds;

void weft__runtime_hold(int delta) { atomic_fetch_add(&holds, delta); }

int weft_run(void)
{
	if (!atomic_load(&weft__rt.running))
		return -ESRCH;
	if (weft__worker_self())
		return -EPERM;
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
	if (atomic_load(&weft__rt.live) != 0 || atomic_load(&weft__rt.services) != 0 ||
	    atomic_load(&holds) != 0)
		return -EBUSY;
	weft__offload_stop();
	weft__workers_stop();
	for (unsigned i = 0; i < weft__rt.nworkers; i++)
		shim_thread_join(weft__rt.workers[i].thread);
	free(weft__rt.workers);
	weft__rt.workers = NULL;
	weft__rt.nworkers = 0;
	weft__timer_reset();
	weft__io_reset();
	weft__fibers_reset();
	atomic_store(&weft__rt.running, 0);
	return 0;
}

unsigned weft_workers(void)
{
	return atomic_load(&weft__rt.running) ? weft__rt.nworkers : 0;
}

/* Called by a fiber's exit path: the last one out wakes weft_run. */
void weft__live_dec(void)
{
	if (atomic_fetch_sub(&weft__rt.live, 1) == 1) {
		atomic_fetch_add(&weft__rt.live_seq, 1);
		shim_wake(&weft__rt.live_seq, INT_MAX);
	}
}
