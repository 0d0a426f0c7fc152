/* SPDX-License-Identifier: MIT */
/* The host loop: with WEFT_CFG_HOST_LOOP there are no worker threads, and a
 * program that owns its event loop runs the fibers on its own thread, one
 * iteration at a time. The thread in weft_poll becomes workers[0] for the
 * call: it runs the scheduler loop of sched.c (find work, switch to it,
 * fibers switch among themselves) until nothing is ready, and otherwise
 * sleeps as that worker's idle sleep does, so every waker (a timer, I/O, a
 * plain thread readying a fiber) already knows how to reach it.
 * docs/decisions/weft-poll.md says why it is built this way. */
#include <limits.h>

#include "internal.h"

static _Atomic int driving;

int weft__host_drive(int64_t deadline)
{
	int zero = 0;
	if (!atomic_compare_exchange_strong(&driving, &zero, 1))
		return -EBUSY;
	struct weft__worker *w = &weft__rt.workers[0];
	/* The overflow report needs a signal stack on whichever thread runs
	 * fibers (a no-op after this thread's first time). */
	shim_fault_thread_init();
	/* The worker's scheduler context is this thread's stack for the call
	 * (the sanitizers learn it again: another thread may drive next). */
	weft__ctx_adopt_thread(&w->sched);
	weft__set_worker(w);
	/* Fibers switch to each other without coming back here: the limit
	 * makes them come back once the deadline has passed. Deadline 0 sets
	 * none, so what is ready runs. */
	w->limit = deadline > 0 ? deadline : 0;
	/* Its first look reads the clock: a timer due now is ready work,
	 * which a quick look could skip (weft__timer_look), and the host
	 * would be told nothing ran. */
	weft__timer_look_now(w);
	uint64_t runs = w->runs;
	bool retried = false;
	for (;;) {
		struct weft__fiber *f;
		while ((f = weft__find_work(w)))
			weft__run(w, f);
		if (w->runs != runs || atomic_load(&weft__rt.stopping))
			break;
		/* Fibers that found no stack for their first run are tried
		 * again once before the host loop sleeps (worker.c does the
		 * same for a worker). */
		if (weft__starved() && !retried) {
			retried = true;
			weft__unstarve(UINT_MAX);
			continue;
		}
		if (deadline >= 0 && (deadline == 0 || weft__now() >= deadline))
			break;
		if (weft__sleep_idle(w, deadline))
			atomic_fetch_sub(&weft__rt.nspinning, 1); /* counted as spinning */
	}
	w->limit = 0;
	weft__flush_yielded(w); /* visible to weft_poll_next as queued work */
	weft__live_flush(w);
	weft__set_worker(NULL);
	atomic_store(&driving, 0);
	uint64_t n = w->runs - runs;
	return n > INT_MAX ? INT_MAX : (int)n;
}

int weft_poll(int64_t deadline)
{
	if (!atomic_load(&weft__rt.running))
		return -ESRCH;
	if (weft__worker_self())
		return -EPERM;
	if (!weft__rt.host)
		return -ENOTSUP;
	return weft__host_drive(weft__deadline_norm(deadline));
}

int64_t weft_poll_next(void)
{
	if (!atomic_load(&weft__rt.running))
		return -1;
	if (weft__work_queued())
		return 0;
	int64_t t = weft__timer_earliest();
	return t == INT64_MAX ? -1 : t;
}
