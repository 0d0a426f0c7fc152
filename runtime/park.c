/* SPDX-License-Identifier: MIT */
/* The one way to wait. Every blocking call parks through here with an
 * absolute deadline, and every wake, timeout and cancellation goes through
 * weft__unpark. The park word (park.h) makes each of them a single CAS:
 * a wake that arrives while the fiber is still switching out turns PARKING
 * into WOKEN, and the context that finishes the switch sees it and requeues
 * the fiber, so the wake is neither lost nor doubled; a wake for an older
 * generation is dropped.
 *
 * A wait list's waiter may instead park holding the list's lock
 * (weft__park_locked, as Go's gopark does): no waker can reach it until the
 * next context has made its word PARKED and released the lock, so that park
 * takes one CAS instead of two (docs/decisions/park-locked.md).
 *
 * A plain OS thread gets a stand-in fiber (thread-local) and sleeps on a
 * futex instead of switching, so the same primitives serve both. */

#include "internal.h"

/* Its flags are set here, once: a waker reads them (weft__unpark) while
 * the thread may already be starting its next wait. */
static _Thread_local struct weft__fiber thread_self = {.flags = FF_THREAD};

struct weft__fiber *weft__self(void)
{
	/* The thread-local itself: this call never switches, and its callers
	 * cannot keep its result across one (WEFT_NOIPA). */
	struct weft__worker *w = weft__tls_worker;
	if (w && w->cur)
		return w->cur;
	return SIM_THREAD_SELF(&thread_self); /* under a simulation, the actor's */
}

uint32_t weft__park_begin(struct weft__fiber *self) { return weft__park_begin_why(self, "park"); }

uint32_t weft__park_begin_why(struct weft__fiber *self, const char *why)
{
	atomic_store_explicit(&self->wait_why, why, memory_order_relaxed);
	uint64_t w = atomic_load_explicit(&self->park, memory_order_relaxed);
	uint64_t n;
	do {
		n = PW_MAKE(PW_GEN(w) + 1, 0, PS_PARKING) | (w & PW_FLAGS);
	} while (!atomic_compare_exchange_weak_explicit(&self->park, &w, n, memory_order_acq_rel,
							memory_order_relaxed));
	return PW_GEN(n);
}

/* Leave the park without sleeping, with the result it ends with: a wake that
 * already arrived wins; else a pending cancellation (unless held off); else
 * fallback. */
static int park_settle(struct weft__fiber *self, int fallback, bool take_cancel)
{
	uint64_t w = atomic_load_explicit(&self->park, memory_order_acquire);
	for (;;) {
		int res;
		uint64_t n;
		bool spent = false; /* the pending request, delivered here */
		if (PW_STATE(w) == PS_WOKEN || PW_STATE(w) == PS_RUNNING) {
			res = PW_RESULT(w);
			n = PW_MAKE(PW_GEN(w), 0, PS_RUNNING) | (w & PW_FLAGS);
		} else if (take_cancel && PW_DELIVERABLE(w)) {
			res = -ECANCELED;
			n = PW_MAKE(PW_GEN(w), 0, PS_RUNNING);
			spent = true;
		} else {
			res = fallback;
			n = PW_MAKE(PW_GEN(w), 0, PS_RUNNING) | (w & PW_FLAGS);
		}
		if (atomic_compare_exchange_weak_explicit(&self->park, &w, n, memory_order_acq_rel,
							  memory_order_acquire)) {
			if (spent)
				weft__cancel_mark(self);
			return res;
		}
	}
}

/* The park word's low half (its state, flags and result), on which a plain
 * thread sleeps. Every wake changes it (the state), so the waker's CAS is
 * the futex protocol's change of the word, made before the wake: a thread
 * that read PARKING and has not yet gone to sleep finds the word changed
 * and does not. The wake after the CAS only names the address, and nothing
 * after the CAS writes to the thread's record, which is thread-local and
 * may be gone as soon as the thread sees the wake. */
static _Atomic uint32_t *park_half(struct weft__fiber *f)
{
	static const union {
		uint64_t w;
		uint32_t h[2];
	} probe = {1};
	return (_Atomic uint32_t *)&f->park + (probe.h[0] == 1 ? 0 : 1);
}

/* A plain thread sleeps on its park word's low half. Under the virtual
 * clock its deadline is virtual, so it is a timer like a fiber's: the worker
 * that moves the clock fires it, and the futex wait itself has no timeout. */
static int thread_park(struct weft__fiber *self, int64_t deadline)
{
	bool timer = deadline > 0 && weft__vclock_on();
	if (timer) {
		weft__timer_arm(self, PW_GEN(atomic_load(&self->park)), deadline);
		deadline = -1;
	}
	int res;
	for (;;) {
		uint64_t w = atomic_load_explicit(&self->park, memory_order_acquire);
		if (PW_STATE(w) != PS_PARKING) {
			res = park_settle(self, 0, false);
			break;
		}
		SIM_POINT(SIM_THREAD_PARK); /* a wake here changes the word (792a651) */
		if (shim_wait(park_half(self), (uint32_t)(w & 0xffffffffu), deadline) ==
		    -ETIMEDOUT) {
			res = park_settle(self, -ETIMEDOUT, false);
			break;
		}
	}
	if (timer)
		weft__timer_disarm(self);
	return res;
}

int weft__park_end(struct weft__fiber *self, int64_t deadline)
{
	/* Every wait ends here: -2 or INT64_MIN must not reach the timer or
	 * the shim's wait as "no deadline". */
	deadline = weft__deadline_norm(deadline);
	if (deadline >= 0 && (deadline == 0 || deadline <= weft__now()))
		return park_settle(self, -ETIMEDOUT, !(self->flags & FF_THREAD));
	if (self->flags & FF_THREAD)
		return thread_park(self, deadline);

	/* A request made before this park is delivered now, without sleeping. */
	uint64_t w = atomic_load_explicit(&self->park, memory_order_acquire);
	if (PW_DELIVERABLE(w))
		return park_settle(self, -ECANCELED, true);

	uint32_t gen = PW_GEN(w);
	if (deadline > 0)
		weft__timer_arm(self, gen, deadline);
	weft__switch_out(self, ACT_PARK); /* stamps wait_since */
	if (deadline > 0)
		weft__timer_disarm(self);

	/* Resumed by whoever queued us: the word holds the result. A plain
	 * wake (the common case) leaves nothing to clear. */
	w = atomic_load_explicit(&self->park, memory_order_acquire);
	if (PW_STATE(w) == PS_RUNNING && PW_RESULT(w) == 0)
		return 0;
	return park_settle(self, 0, false);
}

int weft__park_locked(struct weft__fiber *self, weft__lock_t *lock, const char *why)
{
	atomic_store_explicit(&self->wait_why, why, memory_order_relaxed);
	weft__switch_out_locked(self, lock); /* the next context releases lock */
	uint64_t w = atomic_load_explicit(&self->park, memory_order_acquire);
	if (PW_STATE(w) == PS_RUNNING && PW_RESULT(w) == 0)
		return 0;
	return park_settle(self, 0, false);
}

/* weft_worker_stats' wakes: the waking worker's own counter (one writer).
 * A plain thread's wakes are not counted. */
static void count_wake(void)
{
	struct weft__worker *me = weft__tls_worker; /* no switch in between */
	if (me)
		atomic_store_explicit(&me->wakes,
				      atomic_load_explicit(&me->wakes, memory_order_relaxed) + 1,
				      memory_order_relaxed);
}

bool weft__unpark(struct weft__fiber *f, uint32_t gen, int result)
{
	/* A plain thread may return from its wait, and end, as soon as the
	 * CAS below lets it go: its flags are read before (park_half). */
	bool thread = f->flags & FF_THREAD;
	uint64_t w = atomic_load_explicit(&f->park, memory_order_acquire);
	for (;;) {
		if (PW_GEN(w) != gen)
			return false; /* a wake for an older park */
		unsigned st = PW_STATE(w);
		uint64_t keep = w & PW_FLAGS;
		if (result == -ECANCELED) {
			if (w & PW_HOLD)
				return false; /* held off: the request waits */
			keep = 0;             /* this wake delivers the request */
		}
		uint64_t n;
		if (st == PS_PARKING)
			n = PW_MAKE(gen, result, PS_WOKEN) | keep;
		else if (st == PS_PARKED)
			n = PW_MAKE(gen, result, PS_RUNNING) | keep;
		else
			return false; /* already woken */
		SIM_POINT_UNHELD(weft__tls_worker, SIM_UNPARK);
		if (!atomic_compare_exchange_weak_explicit(&f->park, &w, n, memory_order_acq_rel,
							   memory_order_acquire))
			continue;
		count_wake();
		if (thread) {
			shim_wake(park_half(f), 1);
		} else if (st == PS_PARKED) {
			/* A plain wake is a hand-off (the waker is likely to
			 * block next); a timeout or a cancellation is not. */
			if (result == 0)
				weft__ready_next(f);
			else
				weft__ready(f);
		}
		/* PARKING: the context that finishes f's switch queues it. */
		return true;
	}
}
