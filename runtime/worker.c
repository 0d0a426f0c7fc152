/* SPDX-License-Identifier: MIT */
/* A worker thread's loop: look for work (sched.c's weft__find_work), run it
 * (weft__run), and with nothing found spin a while, then sleep as an idle
 * worker (idle.c). */
#include <limits.h>

#include "internal.h"

/* How long an idle worker looks for work before it sleeps, and the pause
 * hints between two looks. */
#define SPIN_NS 20000
#define SPIN_PAUSES 32

void weft__worker_main(void *arg)
{
	struct weft__worker *w = arg;
	weft__set_worker(w);
	shim_fault_thread_init();
	weft__ctx_adopt_thread(&w->sched);
	SIM_SEED(w->rng, SIM_STEAL_SEED); /* its victims, from the seed */
	bool spinning = false;
	while (!atomic_load_explicit(&weft__rt.stopping, memory_order_acquire)) {
		struct weft__fiber *f = weft__find_work(w);
		/* Nothing: look again for up to SPIN_NS with the CPU's pause
		 * hint between looks (not by giving the CPU away: the work
		 * that comes next is usually a hand-off's overflow, in well
		 * under a microsecond), then sleep. */
		if (!f)
			weft__live_flush(w); /* weft_run may be waiting for it */
		int64_t spin_from = f ? 0 : shim_now();
		/* (A simulation draws whether the spin looks again: its
		 * clock does not move while a worker is busy.) */
		while (!f && SIM_DRAW(4, SIM_SPIN, shim_now() - spin_from < SPIN_NS)) {
			if (!spinning) {
				spinning = true;
				atomic_fetch_add(&weft__rt.nspinning, 1);
			}
			for (int i = 0; i < SPIN_PAUSES; i++)
				arch_relax();
			f = weft__find_work(w);
		}
		if (!f) /* a waker may count on this spinner here */
			SIM_POINT(SIM_SPIN_END);
		bool was_spinning = spinning;
		if (spinning) {
			spinning = false;
			atomic_fetch_sub(&weft__rt.nspinning, 1);
		}
		/* The wakes that queued this work may have seen us spinning
		 * and woken nobody else: pass the baton, as Go's spinner does
		 * when it stops spinning with work (resetspinning), or what
		 * else was queued waits behind this fiber. Always when we were
		 * spinning: the rest may be in a busy worker's deque, which
		 * neither we nor anyone else would look at again (with three
		 * workers, three fibers made runnable at once: the first woken
		 * takes a batch from the global queue, the second steals half
		 * of what is left, and the third fiber waited in the first's
		 * deque for as long as the first one's fiber ran:
		 * test_busy_fibers_get_every_worker with WEFT_WORKERS=3). Also
		 * when more is queued here, or globally, though the work was
		 * found after the spin ended (by the look weft__sleep_idle
		 * makes after joining the idle list, or the next one): those
		 * wakes counted on us all the same. */
		if (f && (was_spinning || weft__deque_size(&w->dq) > 0 ||
			  weft__deque_size(&w->dq_hi) > 0 ||
			  atomic_load_explicit(&weft__rt.gq[0].len, memory_order_acquire) > 0 ||
			  atomic_load_explicit(&weft__rt.gq[1].len, memory_order_acquire) > 0))
			weft__wake_one(false);
		if (f) {
			if (weft__run(w, f))
				w->starved_tried = false;
		} else if (weft__starved() && !w->starved_tried) {
			/* Fibers wait for a stack for their first run: try them
			 * again once before sleeping, and again only after a
			 * fiber has run here (a spin, were memory out). */
			w->starved_tried = true;
			weft__unstarve(UINT_MAX);
		} else {
			spinning = weft__sleep_idle(w, -1);
		}
	}
	if (spinning)
		atomic_fetch_sub(&weft__rt.nspinning, 1);
	weft__live_flush(w);
	weft__stack_cache_drain(w);
	weft__fiber_cache_drain(w);
	shim_fault_thread_fini();
	weft__tls_worker = NULL;
}

int weft_worker_index(void)
{
	struct weft__worker *w = weft__worker_self();
	return w && w->cur ? w->index : -1;
}
