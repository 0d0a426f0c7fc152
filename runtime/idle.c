/* SPDX-License-Identifier: MIT */
/* Idle workers: a worker that found nothing to run joins the idle list and
 * sleeps on its own futex word (or, with fibers waiting on I/O, in the
 * reactor's poll) until a waker picks it from the list or its next timer is
 * due. A waker wakes one idle worker only if nobody is already spinning for
 * work, and the woken worker starts out counted as spinning, so a burst of
 * readies wakes one, and it is one asleep on its futex rather than the one
 * in the poll, so the poll keeps its poller. With the virtual clock, idle
 * workers sleep without a timeout and the last one to go idle moves the
 * clock to the next deadline instead. */
#include <limits.h>

#include "fence.h"
#include "internal.h"

static weft__lock_t idle_lock = WEFT__LOCK_INIT;
static struct weft__worker *idle_list[WEFT_MAX_WORKERS];
static _Atomic int nidle;
static weft__lock_t vclock_lock = WEFT__LOCK_INIT;

int weft__idle_count(void) { return atomic_load_explicit(&nidle, memory_order_relaxed); }

/* Whether a fiber is queued that worker w may take (NULL: any worker).
 * A fiber pinned to another worker is that worker's alone: in its inbox
 * (its pusher wakes it by name, weft__wake_if_asleep) or in its next-run
 * slot (put there by a fiber running on it, which takes it next), it is
 * no work for w, and counting it would keep w looking for work it can
 * never take, at full CPU, for as long as that worker's fiber runs. An
 * unpinned fiber in a busy worker's slot is w's to steal once it has
 * waited there (steal.c's steal_runnext), so it counts with slots; the
 * monitor leaves it out: it looks at the slots in time anyway, and a pair
 * handing off to each other keeps one there half the time, so counting
 * it would keep the monitor from ever sleeping. */
static bool queued_for(const struct weft__worker *w, bool slots)
{
	if (atomic_load_explicit(&weft__rt.gq[0].len, memory_order_acquire) > 0 ||
	    atomic_load_explicit(&weft__rt.gq[1].len, memory_order_acquire) > 0)
		return true;
	for (unsigned i = 0; i < weft__rt.nworkers; i++) {
		struct weft__worker *v = &weft__rt.workers[i];
		if (weft__deque_size(&v->dq) > 0 || weft__deque_size(&v->dq_hi) > 0)
			return true;
		struct weft__fiber *r = atomic_load_explicit(&v->runnext, memory_order_acquire);
		if (w && v != w) {
			/* Its pin changes only while it runs, never in the slot. */
			if (slots && r && !weft__fiber_pin_of(r))
				return true;
		} else if (r || atomic_load_explicit(&v->inbox_len, memory_order_acquire)) {
			return true;
		}
	}
	return false;
}

bool weft__work_queued(void) { return queued_for(NULL, true); }

/* What an idle worker w's last look before sleeping counts as work: what w
 * may take, an interrupt to deliver, a timer due. */
static bool work_visible(const struct weft__worker *w, bool slots)
{
	if (queued_for(w, slots) || atomic_load(&weft__rt.irq_sweep))
		return true;
	int64_t t = weft__timer_next();
	return t != INT64_MAX && t <= weft__now();
}

static bool idle_remove(struct weft__worker *w)
{
	bool found = false;
	weft__lock(&idle_lock);
	int n = atomic_load_explicit(&nidle, memory_order_relaxed);
	for (int i = 0; i < n; i++) {
		if (idle_list[i] == w) {
			idle_list[i] = idle_list[n - 1];
			atomic_store_explicit(&nidle, n - 1, memory_order_relaxed);
			found = true;
			break;
		}
	}
	weft__unlock(&idle_lock);
	return found;
}

static void wake_worker(struct weft__worker *w)
{
	atomic_store_explicit(&w->wake, 1, memory_order_release);
	weft__fence();
	if (atomic_load(&w->in_poll))
		shim_io_wake();
	shim_wake(&w->wake, 1);
}

void weft__wake_one(bool even_if_spinning)
{
	weft__fence();
	weft__wake_one_fenced(even_if_spinning);
}

void weft__wake_one_fenced(bool even_if_spinning)
{
	if (atomic_load_explicit(&nidle, memory_order_relaxed) == 0)
		return;
	if (!even_if_spinning && atomic_load_explicit(&weft__rt.nspinning, memory_order_relaxed))
		return;
	SIM_POINT_UNHELD(weft__tls_worker, SIM_WAKE_ONE);
	weft__lock(&idle_lock);
	struct weft__worker *w = NULL;
	int n = atomic_load_explicit(&nidle, memory_order_relaxed);
	if (n > 0) {
		/* The newest sleeper on its futex, not the worker in the
		 * reactor's poll: that one stays there while fibers wait on
		 * I/O, unless nobody else is idle. */
		int i = n - 1;
		for (int k = n - 1; k >= 0; k--) {
			if (!atomic_load_explicit(&idle_list[k]->in_poll, memory_order_relaxed)) {
				i = k;
				break;
			}
		}
		w = idle_list[i];
		idle_list[i] = idle_list[n - 1];
		atomic_store_explicit(&nidle, n - 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&weft__rt.nspinning, 1, memory_order_relaxed);
	}
	weft__unlock(&idle_lock);
	if (w)
		wake_worker(w);
}

void weft__kick_idle(void) { weft__wake_one(true); }

void weft__wake_if_asleep(struct weft__worker *w)
{
	/* Against weft__sleep_idle: it sets asleep, fences, then looks at
	 * its inbox; the pusher filled the inbox, fences, then looks at
	 * asleep. One of the two sees the other. */
	weft__fence();
	if (atomic_load_explicit(&w->asleep, memory_order_relaxed))
		wake_worker(w);
}

/* The virtual clock's one move, by an idle worker already on the idle list:
 * if every worker is idle, nothing is queued and no I/O is ready, the clock
 * jumps to the earliest deadline (or to cap, the host loop's, if sooner)
 * and what is due fires. Under a lock, so two workers going idle together
 * cannot both move it: the second sees the first one's fired fibers queued.
 * Ready I/O is looked at first (without blocking). When another worker is
 * blocked in the reactor's poll, it is woken instead: it comes round, finds
 * itself the last idle worker and moves the clock after its own look.
 * Returns true if the clock moved. */
static bool vclock_advance(int64_t cap)
{
	bool moved = false;
	weft__lock(&vclock_lock);
	if (atomic_load(&nidle) == (int)weft__rt.nworkers && !work_visible(NULL, true)) {
		bool quiet = true;
		if (weft__io_pending()) {
			if (weft__io_poll(0, NULL)) {
				quiet = !work_visible(NULL, true);
			} else if (weft__io_pending()) {
				/* Not for lack of waiters: another worker holds
				 * the poll. */
				shim_io_wake();
				quiet = false;
			}
		}
		/* The earliest deadline itself, not the bound an idle
		 * sleep uses, which a disarm leaves early (timer.c). */
		int64_t t = weft__timer_earliest();
		if (cap >= 0 && cap < t)
			t = cap;
		if (quiet && t != INT64_MAX) {
			weft__vclock_set(t);
			weft__timer_fire_due();
			moved = true;
		}
	}
	weft__unlock(&vclock_lock);
	return moved;
}

/* Whether some other worker's next-run slot holds a fiber w may take. */
static bool slot_in_sight(const struct weft__worker *w)
{
	for (unsigned i = 0; i < weft__rt.nworkers; i++) {
		struct weft__worker *v = &weft__rt.workers[i];
		struct weft__fiber *r = atomic_load_explicit(&v->runnext, memory_order_acquire);
		/* Its pin changes only while it runs, never in the slot. */
		if (v != w && r && !weft__fiber_pin_of(r))
			return true;
	}
	return false;
}

/* The idle monitor (docs/decisions/handoff-monitor.md). While another
 * worker is busy, one idle worker (weft__rt.monitor) sleeps at most
 * WEFT__MONITOR_NS at a time at first, up to WEFT__MONITOR_MAX_NS later,
 * in the reactor's poll or on its futex word, and between two sleeps
 * looks at the other workers' next-run slots: a
 * hand-off into an empty slot wakes nobody while there is a monitor
 * (sched.c's weft__ready_next), and a fiber the monitor finds there at two
 * looks in a row, the same while its worker did not switch, it takes.
 * Returns that fiber, or NULL once woken, stopping, at deadline (-1:
 * none), or once every worker is idle. */
static struct weft__fiber *monitor_sleep(struct weft__worker *w, int64_t deadline)
{
	/* Each look costs the idle CPU a timed wake: on a slow one (riscv64
	 * Linux under qemu-system, test_idle) 100 us apart they cost more
	 * than a quarter of what the busy worker used, and 1 ms apart 15-29%;
	 * 5 ms apart, a few percent. */
	for (int64_t period = WEFT__MONITOR_NS;;
	     period = period * 2 < WEFT__MONITOR_MAX_NS ? period * 2 : WEFT__MONITOR_MAX_NS) {
		int64_t d = shim_now() + period;
		if (deadline >= 0 && deadline < d)
			d = deadline;
		bool polled = weft__io_poll(d, w);
		if (!polled)
			while (!atomic_load_explicit(&w->wake, memory_order_acquire) &&
			       !atomic_load(&weft__rt.stopping) &&
			       shim_wait(&w->wake, 0, d) != -ETIMEDOUT)
				;
		/* What the poll completed went to this worker's deques or
		 * its private pinned list (no wake: it is the poller's own
		 * thread), or to the global queue. */
		if (atomic_load_explicit(&w->wake, memory_order_acquire) ||
		    atomic_load(&weft__rt.stopping) || (deadline >= 0 && shim_now() >= deadline) ||
		    (polled && (queued_for(w, false) || w->pinned[0] || w->pinned[1])))
			return NULL;
		/* Every worker idle: nobody to watch. The role ends (the
		 * caller's look after it catches a hand-off made meanwhile),
		 * and the next sleep, with nobody busy, has no timeout. */
		if (atomic_load_explicit(&nidle, memory_order_relaxed) == (int)weft__rt.nworkers)
			return NULL;
		struct weft__fiber *f = weft__steal_stale(w);
		if (f)
			return f;
	}
}

/* Sleep until woken, the next timer or cap (-1: none). Returns true when a
 * waker picked us, or when work was in sight and we did not sleep: either
 * way we then count as spinning, so the work we take next passes the baton
 * (worker.c, weft__worker_main). The second case: a waker that saw us still
 * spinning woke nobody, counting on us; our spin ended empty-handed, and
 * the look below found other work than that waker's (another fiber in the
 * global queue, its own in its deque). Not counted as spinning, we took it
 * and woke nobody, and that fiber waited in a busy worker's deque while a
 * worker slept (test_busy_fibers_get_every_worker under TSan: 1 run in
 * about 150 beside a CPU hog; Go's findrunnable re-takes the spinning
 * state in the same case). */
bool weft__sleep_idle(struct weft__worker *w, int64_t cap)
{
	/* A timer due by now that a quick look skipped (weft__timer_look) is
	 * the deadline below, in the past: the wait ends at once, and the
	 * next look for work reads the clock and fires it. */
	weft__timer_look_now(w);
	weft__live_flush(w);
	atomic_store_explicit(&w->wake, 0, memory_order_relaxed);
	/* With another worker busy and no monitor yet, we are it (no virtual
	 * clock: it moves only when every worker sleeps without a timeout).
	 * Taken before we join the idle list and given up after we leave it:
	 * a hand-off made while we are on the list without the role would
	 * wake us, and a pair handing off to each other makes one every
	 * 100 ns or so, so it would find every such window. */
	int none = 0;
	bool mon =
		atomic_load_explicit(&nidle, memory_order_relaxed) + 1 < (int)weft__rt.nworkers &&
		!weft__vclock_on() &&
		atomic_compare_exchange_strong(&weft__rt.monitor, &none, w->index + 1);
	weft__lock(&idle_lock);
	int n = atomic_load_explicit(&nidle, memory_order_relaxed);
	idle_list[n] = w;
	atomic_store_explicit(&nidle, n + 1, memory_order_relaxed);
	weft__unlock(&idle_lock);
	SIM_POINT(SIM_IDLE_JOINED);
	/* Its cached stacks go to the shared tier, pages and all: a sleeper
	 * looks at stack.c's pressure only once woken, and a spawn on a busy
	 * worker refused for want of a stack while sleepers held dozens was
	 * a refusal with memory to spare (test_full_memory_refuses_new_work
	 * on four harts). First, so that the trim below covers them. */
	unsigned returns = weft__stack_returns();
	weft__stack_cache_drain(w);
	/* The last worker to go idle gives back what a burst of fibers left
	 * (a worker idle beside a busy one would only make the stacks it
	 * gives back fault in again, and every trim costs the other CPUs a
	 * TLB shootdown). */
	if (n + 1 == (int)weft__rt.nworkers)
		weft__stack_idle();
	/* A fiber starved of a stack another worker could not see here
	 * gets it now (the work makes the look below not sleep). */
	if (weft__stack_returns() != returns)
		weft__stacks_returned();
	atomic_store_explicit(&w->asleep, 1, memory_order_relaxed);
	weft__fence();
	SIM_POINT(SIM_IDLE_LOOK);

	/* Work queued between our last look and our joining the idle list is
	 * seen here: its waker either saw us idle or we see its work. Work
	 * pinned here is ours alone: its pusher wakes us by name; work pinned
	 * to another worker is not ours at all (queued_for). */
	bool visible = work_visible(w, !mon);
	if (!visible && !w->pinned[0] && !w->pinned[1] && !atomic_load(&weft__rt.stopping)) {
		int64_t t = weft__timer_next();
		int64_t deadline = t == INT64_MAX ? -1 : t;
		if (cap >= 0 && (deadline < 0 || cap < deadline))
			deadline = cap;
		SIM_POINT(SIM_IDLE_WAIT);
		if (weft__vclock_on()) {
			/* Under a seed a plain thread's actor that is runnable
			 * is busy: the clock stays, and this worker's wait
			 * keeps the (virtual) deadline, which the simulator
			 * ends, moving the clock, once every actor waits. */
			bool threads = SIM_CHOOSE(weft__sim_threads_run(), false);
			if (!threads && vclock_advance(cap))
				goto out;
			if (!threads)
				deadline = -1; /* a virtual deadline is no real time */
		}
		if (mon) {
			struct weft__fiber *f = monitor_sleep(w, deadline);
			if (f) {
				/* Taken from a busy worker's slot: ours to
				 * run; we count as spinning until we look. */
				if (!weft__deque_push(&w->dq, f))
					weft__gq_push_list(0, f, f, 1);
				visible = true;
			}
		} else if (!weft__io_poll(deadline, w)) {
			/* With fibers waiting on I/O, one idle worker sleeps
			 * in the reactor's poll instead of its futex; what the
			 * poll completes lands on this worker's deque. */
			while (!atomic_load_explicit(&w->wake, memory_order_acquire) &&
			       !atomic_load(&weft__rt.stopping))
				if (shim_wait(&w->wake, 0, deadline) == -ETIMEDOUT)
					break;
		}
	}
out:
	atomic_store_explicit(&w->asleep, 0, memory_order_relaxed);
	bool picked = !idle_remove(w);
	if (mon) {
		/* The role ends with a fence: a hand-off that still saw it
		 * stored its fiber before its own fence, so the look below
		 * sees the fiber; then we count as spinning, look for work,
		 * and pass the baton if we find some, as for any wake. */
		atomic_store(&weft__rt.monitor, 0);
		weft__fence();
		if (!visible && slot_in_sight(w))
			visible = true;
	}
	if (picked)
		return true; /* the waker counted us */
	if (!visible)
		return false;
	atomic_fetch_add(&weft__rt.nspinning, 1);
	return true;
}

void weft__kick_all(void)
{
	for (unsigned i = 0; i < weft__rt.nworkers; i++)
		wake_worker(&weft__rt.workers[i]);
}

void weft__workers_stop(void)
{
	atomic_store(&weft__rt.stopping, 1);
	for (unsigned i = 0; i < weft__rt.nworkers; i++)
		wake_worker(&weft__rt.workers[i]);
}
