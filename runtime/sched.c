/* SPDX-License-Identifier: MIT */
/* The M:N scheduler. Each worker thread runs a loop on its own stack: it looks
 * for a runnable fiber and switches to it; fibers switch among themselves
 * directly when they park or yield, and back to the loop only when nothing is
 * runnable. A worker looks for work in this order: its next-run slot (the
 * fiber a hand-off on it woke, weft__ready_next; at most RUNNEXT_MAX times
 * in a row), its own deque (LIFO), the fibers pinned to it (oldest first),
 * the fibers that yielded on it (oldest first; while another worker is idle
 * they go to the global queue instead, and one idle worker is woken), the
 * global queue (one, plus a batch moved to its deque), then half of a random
 * victim's deque, then a victim's next-run slot that has waited too long.
 * Every 64th look starts at the global queue, or every other such look at
 * the pinned fibers, so that neither starves. A pinned fiber is only ever
 * queued on its own worker: wakes from elsewhere go to that worker's inbox.
 * With nothing found it looks again for SPIN_NS with the pause hint in
 * between, then sleeps on its own futex word until a waker picks it from
 * the idle list or the next timer is due. With the virtual clock, idle
 * workers sleep without a timeout and the last one to go idle moves the
 * clock to the next deadline instead.
 *
 * The worker loop is worker.c's; stealing from a victim steal.c's; the
 * pinned fibers' lists and inboxes pin.c's; fibers whose first run found no
 * stack wait on starve.c's list. Idle workers, waking them and the virtual
 * clock's move are idle.c's; the runtime's counters are stats.c's.
 *
 * Waking only queues (push, don't run): a fiber never runs on another fiber's
 * stack, so chains of wakes stay flat. A fiber is only made visible to other
 * workers by the context that runs after it (weft__finish_switch), once its
 * registers are saved. */
#include "fence.h"
#include "internal.h"

/* Runs in a row a worker takes from its next-run slot before it looks at
 * its deque. */
#define RUNNEXT_MAX 16
/* Latency-sensitive runs in a row a worker makes while bulk work waits
 * (docs/api.md's bound). */
#define HIGH_STREAK_MAX 8

/* The running fiber, published for weft_dump's snapshot: an atomic store
 * (a plain one on every CPU), so the dump's read is not a data race. */
static inline void set_cur(struct weft__worker *w, struct weft__fiber *f)
{
	__atomic_store_n(&w->cur, f, __ATOMIC_RELAXED);
}

/* The host loop's limit (weft_poll's deadline) has passed: stop taking work. */
static bool past_limit(struct weft__worker *w) { return w->limit && weft__now() >= w->limit; }

/* ---- Queues ------------------------------------------------------------- */

void weft__gq_push_list(int c, struct weft__fiber *head, struct weft__fiber *tail, int64_t n)
{
	struct weft__runq *q = &weft__rt.gq[c];
	tail->next = NULL;
	weft__lock(&q->lock);
	if (q->tail)
		q->tail->next = head;
	else
		q->head = head;
	q->tail = tail;
	atomic_fetch_add_explicit(&q->len, n, memory_order_release);
	weft__unlock(&q->lock);
}

/* Push on the worker's own deque of f's class; when it is full, move half
 * of it and f to the global queue, as Go does with a full local run queue. */
static void push_local(struct weft__worker *w, struct weft__fiber *f)
{
	int c = weft__fiber_class(f);
	struct weft__deque *d = weft__deque_of(w, c);
	if (weft__deque_push(d, f))
		return;
	struct weft__fiber *head = NULL, *tail = NULL;
	int64_t n = 0;
	for (int i = 0; i < WEFT_DEQUE_CAP / 2; i++) {
		struct weft__fiber *g = weft__deque_steal(d);
		if (!g)
			break;
		if (tail)
			tail->next = g;
		else
			head = g;
		tail = g;
		n++;
	}
	if (tail)
		tail->next = f;
	else
		head = f;
	weft__gq_push_list(c, head, f, n + 1);
}

/* The worker f is pinned to, or NULL. */
static inline struct weft__worker *pinned_to(struct weft__fiber *f)
{
	uint32_t p = weft__fiber_pin_of(f);
	return p ? &weft__rt.workers[p - 1] : NULL;
}

/* The pinned and latency-sensitive paths are kept out of line: the common
 * path (no pin, the bulk class) pays a load and a branch for each. */
#define COLD __attribute__((cold, noinline))

/* Queue f on w, its spawner's or waker's worker, or where it is pinned. */
static void push_own(struct weft__worker *w, struct weft__fiber *f)
{
	struct weft__worker *t = pinned_to(f);
	if (t)
		weft__pinned_ready(w, t, f);
	else
		push_local(w, f);
}

/* Take one fiber from global queue c and move a fair batch to the deque of
 * that class. */
static struct weft__fiber *gq_take(struct weft__worker *w, int c)
{
	struct weft__runq *q = &weft__rt.gq[c];
	if (atomic_load_explicit(&q->len, memory_order_acquire) == 0)
		return NULL;
	weft__lock(&q->lock);
	int64_t len = atomic_load_explicit(&q->len, memory_order_relaxed);
	int64_t n = len / weft__rt.nworkers + 1;
	if (n > 17)
		n = 17;
	if (n > len)
		n = len;
	struct weft__fiber *first = NULL;
	for (int64_t i = 0; i < n; i++) {
		struct weft__fiber *f = q->head;
		q->head = f->next;
		if (!q->head)
			q->tail = NULL;
		if (!first)
			first = f;
		else if (!weft__deque_push(weft__deque_of(w, c), f)) {
			/* No room: leave the rest queued. */
			f->next = q->head;
			q->head = f;
			if (!q->tail)
				q->tail = f;
			n = i;
			break;
		}
	}
	atomic_fetch_sub_explicit(&q->len, n, memory_order_release);
	weft__unlock(&q->lock);
	return first;
}

/* Move the yielded fibers to the deque, newest first so that the oldest is
 * taken first, and the rest can be stolen; if more than the one this
 * worker takes next is there, an idle worker may have them. */
void weft__flush_yielded(struct weft__worker *w)
{
	struct weft__fiber *f = w->yielded, *rev = NULL;
	w->yielded = w->yielded_tail = NULL;
	int n = 0;
	while (f) { /* oldest first: reverse */
		struct weft__fiber *next = f->next;
		f->next = rev;
		rev = f;
		f = next;
		n++;
	}
	while (rev) {
		struct weft__fiber *next = rev->next;
		push_own(w, rev);
		rev = next;
	}
	if (n > 1)
		weft__wake_one(false);
}

/* The oldest yielded fiber, or NULL. */
static inline struct weft__fiber *take_yielded(struct weft__worker *w)
{
	struct weft__fiber *f = w->yielded;
	if (f && !(w->yielded = f->next))
		w->yielded_tail = NULL;
	return f;
}

/* A fiber yielded while another worker sleeps, or has been woken and not
 * yet looked for work: the yielded fibers go to the global queue, oldest
 * first, where any worker takes them, and one idle worker is woken.
 * Otherwise two fibers that yield to each other would share one worker for
 * good while the other sits idle: the private list is seen by nobody else,
 * and nothing wakes a sleeper for it. The woken worker counts as spinning
 * (no longer idle) until it looks: the yields meanwhile are shared too, or
 * where it cannot run until the busy one is preempted (threads on one
 * hart), the busy worker would have taken the one shared fiber back and
 * kept the next on its list, and the woken one would find nothing, for
 * thousands of yields (test_yielders_use_both_workers). */
COLD static void share_yielded(struct weft__worker *w)
{
	struct weft__fiber *f = w->yielded, *head = NULL, *tail = NULL;
	int64_t n = 0;
	w->yielded = w->yielded_tail = NULL;
	while (f) { /* the pinned ones stay */
		struct weft__fiber *next = f->next;
		if (pinned_to(f)) {
			push_own(w, f);
		} else {
			if (tail)
				tail->next = f;
			else
				head = f;
			tail = f;
			n++;
		}
		f = next;
	}
	if (head) {
		weft__gq_push_list(0, head, tail, n);
		weft__wake_one(false);
	}
}

/* A runtime of one worker: nobody steals, so its own queues need no
 * locked instructions. */
static inline bool alone(void) { return weft__rt.nworkers == 1; }

/* The worker's own next-run slot (owner only). */
static inline struct weft__fiber *take_runnext(struct weft__worker *w)
{
	struct weft__fiber *f = atomic_load_explicit(&w->runnext, memory_order_relaxed);
	if (!f)
		return NULL;
	if (alone()) {
		atomic_store_explicit(&w->runnext, NULL, memory_order_relaxed);
		return f;
	}
	return atomic_exchange_explicit(&w->runnext, NULL, memory_order_acq_rel);
}

static inline struct weft__fiber *take_local(struct weft__worker *w)
{
	return alone() ? weft__deque_take_alone(&w->dq) : weft__deque_take(&w->dq);
}

/* The checks a busy worker makes only every 64th look for work, and each
 * time its own queues are empty: stacks the shim ran short of, I/O nobody
 * polled for a while, and the global queue, so that it never starves. */
static struct weft__fiber *look_around(struct weft__worker *w)
{
	/* An atomic store (a plain one on every CPU): the stall detector
	 * reads it from its own thread (stall.c). */
	__atomic_store_n(&w->stamp, arch_cycles(), __ATOMIC_RELAXED);
	if (weft__stack_pressure(w))
		weft__stacks_returned();
	/* Not while a parking fiber holds a wait list's lock (the poll's
	 * handlers complete waiters under such locks, reactor.c's finish),
	 * but as soon as it is released: a worker whose fibers always park
	 * so would otherwise never look at I/O while it is busy. */
	if (w->held)
		w->io_owed = true;
	else
		weft__io_tick();
	/* Every other time the fibers pinned here before the global queue:
	 * neither waits for good behind a deque that keeps filling. */
	struct weft__fiber *f =
		SIM_DRAW(2, SIM_PINNED_FIRST, w->tick & 64) ? weft__take_pinned(w, 0) : NULL;
	if (!f)
		f = gq_take(w, 0);
	/* The yielded fibers get their turn before the deque's: with other
	 * workers they go to the deque, where a thief can take them; alone,
	 * nobody can, so the oldest just runs (moving them cost a push and a
	 * take per yield, 12% of a yield's instructions). */
	if (!f && w->yielded) {
		if (alone())
			f = take_yielded(w);
		else
			weft__flush_yielded(w);
	}
	return f;
}

/* A latency-sensitive fiber: pinned here, then the oldest of this worker's,
 * the global queue's, then half of a victim's. */
COLD static struct weft__fiber *take_high(struct weft__worker *w)
{
	struct weft__fiber *f;
	if ((f = weft__take_pinned(w, 1)) || (f = weft__deque_steal(&w->dq_hi)) ||
	    (f = gq_take(w, 1)))
		return f;
	return weft__steal_high(w);
}

static inline __attribute__((always_inline)) struct weft__fiber *find_bulk(struct weft__worker *w);

/* With latency-sensitive fibers alive: that class first, but after
 * HIGH_STREAK_MAX of them in a row a bulk fiber, if there is one, so that
 * none starves. */
COLD static struct weft__fiber *find_with_high(struct weft__worker *w)
{
	struct weft__fiber *f;
	if (w->hi_streak < HIGH_STREAK_MAX && (f = take_high(w))) {
		w->hi_streak++;
		return f;
	}
	w->hi_streak = 0;
	return (f = find_bulk(w)) ? f : take_high(w);
}

struct weft__fiber *weft__find_work(struct weft__worker *w)
{
	/* Not while a parking fiber holds its wait list's lock (ACT_PARK_LOCKED):
	 * the real code makes this look and the release in one uninterrupted
	 * stretch, and an actor switched out here would leave every other
	 * actor that wants the lock spinning (docs/decisions/simulation.md). */
	if (!w->held)
		SIM_POINT(SIM_FIND_WORK);
	if (past_limit(w))
		return NULL;
	if (atomic_load_explicit(&weft__rt.irq_sweep, memory_order_relaxed))
		weft__irq_sweep();
	weft__timer_look(w);
	if (atomic_load_explicit(&w->inbox_len, memory_order_relaxed))
		weft__inbox_drain(w);
	/* While no latency-sensitive fiber is alive this costs one load. */
	if (__builtin_expect(atomic_load_explicit(&weft__rt.high_alive, memory_order_relaxed) > 0,
			     0))
		return find_with_high(w);
	return find_bulk(w);
}

/* The bulk class, in the order the top of this file gives. */
static inline __attribute__((always_inline)) struct weft__fiber *find_bulk(struct weft__worker *w)
{
	struct weft__fiber *f;
	/* (A simulation also draws extra looks, and streaks that end
	 * early: never a longer one. simulation.md, "Slice 2, as built".) */
	if (((++w->tick & 63) == 0 || SIM_DRAW(32, SIM_LOOK_AROUND, 1) == 0) &&
	    (f = look_around(w)))
		return f;
	/* The hand-off first, but not forever: two fibers handing off to
	 * each other would keep the rest of the queue waiting. */
	if (w->runnext_streak < RUNNEXT_MAX && SIM_DRAW(8, SIM_STREAK, 1) &&
	    (f = take_runnext(w))) {
		w->runnext_streak++;
		return f;
	}
	w->runnext_streak = 0;
	if ((f = take_local(w)) || (f = weft__take_pinned(w, 0)) || (f = take_yielded(w)) ||
	    (f = take_runnext(w)))
		return f;
	/* Nothing of its own (so no yielded fiber for look_around to flush). */
	if ((f = look_around(w)))
		return f;
	if ((f = weft__steal(w)))
		return f;
	/* Nothing queued anywhere: look for I/O that is ready, without
	 * blocking, as Go's findrunnable does before it spins. */
	if (!w->held && weft__io_pending() && weft__io_poll(0, NULL))
		return take_local(w);
	return NULL;
}

/* ---- Switching ---------------------------------------------------------- */

/* New work is queued: wake an idle worker if nobody is looking for work.
 * A worker alone has nobody to wake (and is not idle: it is queuing). */
static inline void wake_for(struct weft__worker *w)
{
	if (!w || weft__rt.nworkers > 1)
		weft__wake_one(false);
}

void weft__ready(struct weft__fiber *f)
{
	struct weft__worker *w = weft__tls_worker;
	struct weft__worker *t = pinned_to(f);
	if (t) {
		weft__pinned_ready(w, t, f);
		return;
	}
	if (w)
		push_local(w, f);
	else
		weft__gq_push_list(weft__fiber_class(f), f, f, 1);
	SIM_POINT_UNHELD(w, SIM_READY); /* published, not yet woken (1b05ca3) */
	wake_for(w);
}

void weft__ready_next(struct weft__fiber *f)
{
	struct weft__worker *w = weft__tls_worker;
	/* The slot holds bulk fibers: a latency-sensitive one goes to its
	 * class's queue, which is looked at first anyway; one pinned to
	 * another worker goes there. */
	uint32_t pin = weft__fiber_pin_of(f);
	if (!w || !w->cur || (pin && pin - 1 != (uint32_t)w->index) || weft__fiber_class(f)) {
		weft__ready(f);
		return;
	}
	struct weft__fiber *old;
	if (alone()) {
		old = atomic_load_explicit(&w->runnext, memory_order_relaxed);
		atomic_store_explicit(&w->runnext, f, memory_order_relaxed);
		if (old)
			push_own(w, old);
		return; /* nobody to wake */
	}
	old = atomic_exchange_explicit(&w->runnext, f, memory_order_acq_rel);
	if (old)
		push_own(w, old);
	SIM_POINT_UNHELD(w, SIM_READY_NEXT); /* published, not yet woken */
	/* Pinned here, f (and old) are this worker's alone: a worker woken
	 * for them could take neither, and pinned fibers handing off to
	 * each other would keep it waking and looking for work. */
	if (pin && (!old || pinned_to(old)))
		return;
	if (old) {
		weft__wake_one(false);
		return;
	}
	/* The exchange published f: the wake's fence against a worker
	 * going to sleep (weft__sleep_idle) may be the exchange itself,
	 * where the CPU makes it a full fence (x86: 2 workers' channel
	 * round trip 8% faster, docs/benchmarks.md). */
	weft__fence_after_rmw();
	/* An idle worker is the monitor: it looks at this slot within a
	 * period (WEFT__MONITOR_NS up to WEFT__MONITOR_MAX_NS) and takes f
	 * if this worker has not switched to it by then. The waker usually
	 * parks next, and a worker woken for f would only find it gone
	 * (docs/decisions/handoff-monitor.md). */
	if (atomic_load_explicit(&weft__rt.monitor, memory_order_relaxed))
		return;
	weft__wake_one_fenced(false);
}

/* weft__ready, out of line: the paths of finish_switch that need it are
 * rare, and inlined it would make every switch save more registers. */
COLD static void requeue(struct weft__fiber *p) { weft__ready(p); }

/* A latency-sensitive fiber yielded: behind the others of its class, where
 * an idle worker may take it (pinned, it is this worker's alone).
 * weft__wake_one fences before it looks at the idle list, against
 * weft__sleep_idle, which joins the list, fences, then looks at the deques:
 * so either that sleeper sees p, or we see the sleeper. A relaxed look at
 * the idle list straight after the push could read it empty while the
 * sleeper read the deque without p (store buffering), and p would wait
 * behind whatever runs here while a worker sleeps. */
COLD static void yield_high(struct weft__worker *w, struct weft__fiber *p)
{
	if (pinned_to(p)) {
		push_own(w, p);
		return;
	}
	push_local(w, p);
	SIM_POINT_UNHELD(w, SIM_FINISH_YIELD);
	if (!alone())
		weft__wake_one(false);
}

/* The I/O look find_work skipped while a lock was held (look_around). */
COLD static void owed_io(struct weft__worker *w)
{
	w->io_owed = false;
	weft__io_tick();
}

/* p parked holding a wait list's lock (weft__switch_out_locked): its word
 * still says RUNNING with the generation before the one its waiter carries,
 * since no waker could reach it while the lock was held. Now that p is off
 * its stack, one CAS makes it PARKED in that generation, or, if a
 * cancellation request came meanwhile (the only change anyone else makes to
 * a running fiber's word), delivers it: p runs again and finds -ECANCELED.
 * Then the lock is released, and wakers may find p. */
static void park_locked_finish(struct weft__worker *w, struct weft__fiber *p)
{
	uint64_t pw = atomic_load_explicit(&p->park, memory_order_relaxed);
	for (;;) {
		bool cancel = PW_DELIVERABLE(pw);
		uint64_t n = cancel ? PW_MAKE(PW_GEN(pw) + 1, -ECANCELED, PS_RUNNING)
				    : PW_MAKE(PW_GEN(pw) + 1, 0, PS_PARKED) | (pw & PW_FLAGS);
		if (atomic_compare_exchange_weak_explicit(&p->park, &pw, n, memory_order_acq_rel,
							  memory_order_relaxed)) {
			if (__builtin_expect(cancel, 0)) {
				weft__cancel_mark(p);
				requeue(p);
			}
			break;
		}
	}
	weft__lock_t *l = w->held;
	w->held = NULL;
	weft__unlock(l);
	if (__builtin_expect(w->io_owed, 0))
		owed_io(w);
}

void weft__finish_switch(struct weft__worker *w)
{
	struct weft__fiber *p = w->prev;
	w->prev = NULL;
	if (!p)
		return;
	switch (w->prev_act) {
	case ACT_YIELD:
		if (weft__fiber_class(p)) {
			yield_high(w, p);
			break;
		}
		p->next = NULL;
		if (w->yielded_tail)
			w->yielded_tail->next = p;
		else
			w->yielded = p;
		w->yielded_tail = p;
		SIM_POINT_UNHELD(w, SIM_FINISH_YIELD);
		/* Relaxed looks, no fence: unlike yield_high's push, the
		 * yielded list is this worker's own and no sleeper's last look
		 * reads it, so a fence here would order nothing that sleeper
		 * sees (a worker that joins the idle list just after these
		 * looks misses p with or without one). The next yield here
		 * looks again, and look_around moves the list to the deque. */
		if (!alone() &&
		    (weft__idle_count() > 0 ||
		     atomic_load_explicit(&weft__rt.nspinning, memory_order_relaxed) > 0))
			share_yielded(w);
		break;
	case ACT_PARK: {
		/* A wake may land here, before the CAS: it finds PARKING. */
		SIM_POINT_UNHELD(w, SIM_FINISH_PARK);
		uint64_t pw = atomic_load_explicit(&p->park, memory_order_acquire);
		for (;;) {
			unsigned st = PW_STATE(pw);
			uint64_t n =
				(pw & ~(uint64_t)7) | (st == PS_PARKING ? PS_PARKED : PS_RUNNING);
			if (atomic_compare_exchange_weak_explicit(
				    &p->park, &pw, n, memory_order_acq_rel, memory_order_acquire)) {
				if (st == PS_WOKEN) /* woken while switching out */
					requeue(p);
				break;
			}
		}
		break;
	}
	case ACT_PARK_LOCKED:
		park_locked_finish(w, p);
		break;
	case ACT_EXIT:
		weft__stack_release(w, p);
		if (__builtin_expect(weft__starved(), 0))
			weft__unstarve(1); /* the stack just freed is its */
		if (p->flags & FF_FPENV)   /* off its stack: its state is put back */
			atomic_fetch_sub_explicit(&weft__rt.fp_alive, 1, memory_order_relaxed);
		weft__fiber_unref(p); /* its reference for being alive */
		break;
	case ACT_MOVE:
		requeue(p); /* to the inbox of the worker it is pinned to */
		break;
	}
}

static inline void count_switch(struct weft__worker *w) { weft__bump(&w->switches); }

/* Whether any fiber may keep its own FP control state (WEFT_ATTR_FPENV):
 * only then does a switch look at the fibers' flags. */
static inline bool fp_any(void)
{
	return __builtin_expect(atomic_load_explicit(&weft__rt.fp_alive, memory_order_relaxed) > 0,
				0);
}

/* From fiber self to next (NULL: the scheduler). */
static inline struct weft__worker *switch_to(struct weft__worker *w, struct weft__fiber *self,
					     struct weft__fiber *next, bool dying)
{
	struct weft__ctx *to = next ? &next->ctx : &w->sched;
	if (fp_any())
		return weft__ctx_switch_fp(w, &self->ctx, weft__fiber_fp(self), to,
					   weft__fiber_fp(next), dying);
	return weft__ctx_switch(w, &self->ctx, to, dying);
}

/* next is about to run for the first time and found no stack: it waits on
 * the starved list, and w looks for other work. Out of line and
 * rare: only when the pools and the shim are both out of stacks. */
COLD static struct weft__fiber *no_stack(struct weft__worker *w, struct weft__fiber *next)
{
	do {
		weft__starve(w, next);
		next = weft__find_work(w);
	} while (next && !next->ctx.sp && weft__stack_start(w, next));
	return next;
}

/* The fiber w switches to next: next itself, or with no stack to be had
 * for its first run, whatever w finds instead. */
static inline struct weft__fiber *startable(struct weft__worker *w, struct weft__fiber *next)
{
	if (next && !next->ctx.sp && __builtin_expect(weft__stack_start(w, next), 0))
		return no_stack(w, next);
	return next;
}

static inline __attribute__((always_inline)) void switch_out(struct weft__worker *w,
							     struct weft__fiber *self, int act)
{
	struct weft__fiber *next = startable(w, weft__find_work(w));
	w->prev = self;
	w->prev_act = act;
	set_cur(w, next);
	count_switch(w);
	if (act == ACT_PARK || act == ACT_PARK_LOCKED) {
		weft__bump(&w->parks);
		/* weft_dump's "for how long": the worker's stamp, not a read
		 * of the counter here (a clock read costs 10 ns or more
		 * in a VM, and there would be two per channel round trip). */
		atomic_store_explicit(&self->wait_since, (int64_t)w->stamp, memory_order_relaxed);
	}
	if (next)
		w->runs++;
	/* Resumed, perhaps on another worker: the switch reads it afresh. */
	weft__finish_switch(switch_to(w, self, next, act == ACT_EXIT));
}

void weft__switch_out(struct weft__fiber *self, int act)
{
	switch_out(weft__tls_worker, self, act);
}

void weft__switch_out_locked(struct weft__fiber *self, weft__lock_t *lock)
{
	struct weft__worker *w = weft__tls_worker;
	w->held = lock;
	switch_out(w, self, ACT_PARK_LOCKED);
}

int weft_fiber_yield(void)
{
	struct weft__worker *w = weft__worker_self();
	if (!w || !w->cur) {
		shim_thread_yield();
		return 0;
	}
	struct weft__fiber *self = w->cur;
	uint64_t pw = atomic_load_explicit(&self->park, memory_order_acquire);
	if (PW_DELIVERABLE(pw)) {
		weft__cancel_delivered(self);
		return -ECANCELED;
	}
	struct weft__fiber *next = startable(w, weft__find_work(w));
	/* Nothing else to run: carry on, unless the host loop's time is up
	 * (then back to weft_poll, which returns to the host). */
	if (!next && !past_limit(w))
		return 0;
	w->prev = self;
	w->prev_act = ACT_YIELD;
	set_cur(w, next);
	count_switch(w);
	if (next)
		w->runs++;
	weft__finish_switch(switch_to(w, self, next, false));
	return 0;
}

/* ---- The worker loop ---------------------------------------------------- */

bool weft__run(struct weft__worker *w, struct weft__fiber *f)
{
	if (!f->ctx.sp && weft__stack_start(w, f)) {
		weft__starve(w, f);
		return false;
	}
	set_cur(w, f);
	w->runs++;
	count_switch(w);
	if (fp_any())
		w = weft__ctx_switch_fp(w, &w->sched, NULL, &f->ctx, weft__fiber_fp(f), false);
	else
		w = weft__ctx_switch(w, &w->sched, &f->ctx, false);
	weft__finish_switch(w);
	return true;
}
