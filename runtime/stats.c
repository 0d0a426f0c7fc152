/* SPDX-License-Identifier: MIT */
/* The runtime's counters for weft_stats and weft_worker_stats: each worker
 * writes its own (sched.c), readers take relaxed snapshots. */
#include "internal.h"

int weft_stats(weft_stats_t *out)
{
	if (!out)
		return -EINVAL;
	if (!atomic_load(&weft__rt.running))
		return -ESRCH;
	*out = (weft_stats_t){.workers = weft__rt.nworkers};
	for (unsigned i = 0; i < weft__rt.nworkers; i++)
		out->switches +=
			atomic_load_explicit(&weft__rt.workers[i].switches, memory_order_relaxed);
	out->fibers = (uint64_t)weft__live_count() + (uint64_t)atomic_load(&weft__rt.services);
	out->spawned = weft__fibers_spawned();
	return 0;
}

int weft_worker_stats(unsigned i, weft_worker_stats_t *out)
{
	if (!out)
		return -EINVAL;
	if (!atomic_load(&weft__rt.running))
		return -ESRCH;
	if (i >= weft__rt.nworkers)
		return -EINVAL;
	struct weft__worker *w = &weft__rt.workers[i];
	*out = (weft_worker_stats_t){
		.switches = atomic_load_explicit(&w->switches, memory_order_relaxed),
		.steals = atomic_load_explicit(&w->steals, memory_order_relaxed),
		.parks = atomic_load_explicit(&w->parks, memory_order_relaxed),
		.wakes = atomic_load_explicit(&w->wakes, memory_order_relaxed),
		.stalls = weft__stall_count(i),
	};
	int64_t q = weft__deque_size(&w->dq) + weft__deque_size(&w->dq_hi);
	out->queued = q > 0 ? (uint64_t)q : 0;
	return 0;
}
