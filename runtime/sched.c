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
 * queued on its own worker: wakes from elsewhere go to that worker's inbox. With nothing found it looks again for
 * SPIN_NS with the pause hint in between, then sleeps on its own futex word
 * until a waker picks it from the idle list or the next timer is due.
 * With the virtual clock, idle workers sleep without a timeout and the last
 * one to go idle moves the clock to the next deadline instead.
 *
 * Idle workers, waking them and the virtual clock's move are idle.c's; the
 * runtime's counters are stats.c's.
 *
 * Waking only queues (push, don't run): a fiber never runs on another fiber's
 * stack, so chains of wakes stay flat. A fiber is only made visible to other
 * workers by the context that runs after it (weft__finish_switch), once its
 * registers are saved. */
#include <limits.h>

#include "fence.h"
#include "internal.h"

/* Runs in a row a worker takes from its next-run slot before it looks at
 * its deque. */
#define RUNNEXT_MAX 16
/* How long a hand-off's fiber stays in its worker's slot before an idle
 * worker may take it (Go waits about 3 us). */
#define RUNNEXT_GRACE_NS 5000
/* Latency-sensitive runs in a row a worker makes while bulk work waits
 * (docs/api.md's bound). */
#define HIGH_STREAK_MAX 8
/* How long an idle worker looks for work before it sleeps, and the pause
 * hints between two looks. */
#define SPIN_NS 20000
#define SPIN_PAUSES 32

/* One writer per counter (its worker); readers take a relaxed snapshot. */
static inline void bump(_Atomic uint64_t *c)
{
	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1,
			      memory_order_relaxed);
}

/* The running fiber, published for weft_dump's snapshot: an atomic store
 * (a plain one on every CPU), so the dump's read is not a data race. */
static inline void set_cur(struct weft__worker *w, struct weft__fiber *f)
{
	__atomic_store_n(&w->cur, f, __ATOMIC_RELAXED);
}

struct weft__fiber *weft__worker_cur(struct weft__worker *w)
{
	return __atomic_load_n(&w->cur, __ATOMIC_RELAXED);
}

/* The host loop's limit (weft_poll's deadline) has passed: stop taking work. */
static bool past_limit(struct weft__worker *w) { return w->limit && weft__now() >= w->limit; }

/* ---- Queues ------------------------------------------------------------- */

/* A fiber's class, the index of its queues: 1 latency-sensitive
 * (WEFT_ATTR_HIGH), 0 bulk. Every queue but the next-run slot and the
 * yielded list comes in one of each; those two hold bulk fibers only. */
static inline int cls(const struct weft__fiber *f) { return (f->flags & FF_HIGH) ? 1 : 0; }

static inline struct weft__deque *deque_of(struct weft__worker *w, int c)
{
	return c ? &w->dq_hi : &w->dq;
}

static void gq_push_list(int c, struct weft__fiber *head, struct weft__fiber *tail, int64_t n)
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
	int c = cls(f);
	struct weft__deque *d = deque_of(w, c);
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
	gq_push_list(c, head, f, n + 1);
}

/* ---- Pinned fibers ------------------------------------------------------ */

/* A pinned fiber (weft_fiber_pin, WEFT_ATTR_PIN) is never in a deque, a
 * next-run slot that thieves look at, or the global queue: its own worker
 * keeps it on a private list, and other threads that make it runnable put it
 * in that worker's inbox and wake the worker if it sleeps. */

/* The worker f is pinned to, or NULL. */
static inline struct weft__worker *pinned_to(struct weft__fiber *f)
{
	uint32_t p = weft__fiber_pin_of(f);
	return p ? &weft__rt.workers[p - 1] : NULL;
}

static void pinned_push(struct weft__worker *w, struct weft__fiber *f)
{
	int c = cls(f);
	f->next = NULL;
	if (w->pinned_tail[c])
		w->pinned_tail[c]->next = f;
	else
		w->pinned[c] = f;
	w->pinned_tail[c] = f;
}

static inline struct weft__fiber *take_pinned(struct weft__worker *w, int c)
{
	struct weft__fiber *f = w->pinned[c];
	if (f && !(w->pinned[c] = f->next))
		w->pinned_tail[c] = NULL;
	return f;
}

/* The pinned and latency-sensitive paths are kept out of line: the common
 * path (no pin, the bulk class) pays a load and a branch for each. */
#define COLD __attribute__((cold, noinline))

/* From a thread other than t's: into t's inbox, and wake t if it sleeps. */
static void inbox_push(struct weft__worker *t, struct weft__fiber *f)
{
	f->next = NULL;
	weft__lock(&t->inbox_lock);
	if (t->inbox_tail)
		t->inbox_tail->next = f;
	else
		t->inbox = f;
	t->inbox_tail = f;
	atomic_store_explicit(&t->inbox_len,
			      atomic_load_explicit(&t->inbox_len, memory_order_relaxed) + 1,
			      memory_order_release);
	weft__unlock(&t->inbox_lock);
	weft__wake_if_asleep(t);
}

/* The owner moves its inbox to its pinned lists, oldest first. */
COLD static void inbox_drain(struct weft__worker *w)
{
	weft__lock(&w->inbox_lock);
	struct weft__fiber *f = w->inbox;
	w->inbox = w->inbox_tail = NULL;
	atomic_store_explicit(&w->inbox_len, 0, memory_order_relaxed);
	weft__unlock(&w->inbox_lock);
	while (f) {
		struct weft__fiber *next = f->next;
		pinned_push(w, f);
		f = next;
	}
}

/* Queue f, pinned to t, from the thread of worker w (NULL: a plain thread). */
COLD static void pinned_ready(struct weft__worker *w, struct weft__worker *t, struct weft__fiber *f)
{
	if (w == t)
		pinned_push(w, f);
	else
		inbox_push(t, f);
}

/* Queue f on w, its spawner's or waker's worker, or where it is pinned. */
static void push_own(struct weft__worker *w, struct weft__fiber *f)
{
	struct weft__worker *t = pinned_to(f);
	if (t)
		pinned_ready(w, t, f);
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
		else if (!weft__deque_push(deque_of(w, c), f)) {
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

static uint64_t next_rand(struct weft__worker *w)
{
	w->rng ^= w->rng << 13;
	w->rng ^= w->rng >> 7;
	w->rng ^= w->rng << 17;
	return w->rng;
}

/* A victim's next-run slot, taken only when the same fiber has sat there
 * for RUNNEXT_GRACE_NS while the victim did not switch: it is about to run
 * there, and taking it would move a hand-off's pair apart (Go's runnext).
 * w->rn_seen[i] is what w saw in victim i's slot, and when. */
static struct weft__fiber *steal_runnext(struct weft__worker *w, struct weft__worker *v)
{
	struct weft__fiber *r = atomic_load_explicit(&v->runnext, memory_order_relaxed);
	/* A pinned fiber there changes its pin only while it runs, and then
	 * the victim has switched: the grace below starts again. */
	if (!r || pinned_to(r))
		return NULL;
	struct weft__seen *seen = &w->rn_seen[v->index];
	uint64_t sw = atomic_load_explicit(&v->switches, memory_order_relaxed);
	int64_t now = shim_now();
	if (seen->f != r || seen->switches != sw) {
		*seen = (struct weft__seen){.f = r, .switches = sw, .at = now};
		return NULL;
	}
	if (now - seen->at < RUNNEXT_GRACE_NS ||
	    !atomic_compare_exchange_strong_explicit(&v->runnext, &r, NULL, memory_order_acq_rel,
						     memory_order_relaxed))
		return NULL;
	seen->f = NULL;
	return r;
}

/* Steal half of a random victim's deque of class c; return one, keep the
 * rest. */
static struct weft__fiber *steal_class(struct weft__worker *w, int c, unsigned start)
{
	unsigned n = weft__rt.nworkers;
	for (unsigned k = 0; k < n; k++) {
		struct weft__worker *v = &weft__rt.workers[(start + k) % n];
		if (v == w)
			continue;
		struct weft__deque *d = deque_of(v, c);
		int64_t half = (weft__deque_size(d) + 1) / 2;
		struct weft__fiber *first = half > 0 ? weft__deque_steal(d) : NULL;
		if (!first)
			continue;
		for (int64_t i = 1; i < half; i++) {
			struct weft__fiber *g = weft__deque_steal(d);
			if (!g || !weft__deque_push(deque_of(w, c), g)) {
				if (g)
					gq_push_list(c, g, g, 1);
				break;
			}
		}
		bump(&w->steals);
		return first;
	}
	return NULL;
}

/* Steal half of a random victim's bulk deque; with every one empty, a
 * victim's next-run slot that has waited too long. */
static struct weft__fiber *steal(struct weft__worker *w)
{
	unsigned n = weft__rt.nworkers;
	if (n < 2)
		return NULL;
	unsigned start = (unsigned)(next_rand(w) % n);
	struct weft__fiber *f = steal_class(w, 0, start);
	if (f)
		return f;
	/* The slots every 8th look: each look pulls the victim's line away
	 * from it, and a slot is only taken after RUNNEXT_GRACE_NS anyway. */
	if (++w->rn_looks % 8)
		return NULL;
	for (unsigned k = 0; k < n; k++) {
		struct weft__worker *v = &weft__rt.workers[(start + k) % n];
		struct weft__fiber *r = v != w ? steal_runnext(w, v) : NULL;
		if (r) {
			bump(&w->steals);
			return r;
		}
	}
	return NULL;
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
		gq_push_list(0, head, tail, n);
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
	weft__io_tick();
	/* Every other time the fibers pinned here before the global queue:
	 * neither waits for good behind a deque that keeps filling. */
	struct weft__fiber *f = (w->tick & 64) ? take_pinned(w, 0) : NULL;
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
	if ((f = take_pinned(w, 1)) || (f = weft__deque_steal(&w->dq_hi)) || (f = gq_take(w, 1)))
		return f;
	unsigned n = weft__rt.nworkers;
	return n > 1 ? steal_class(w, 1, (unsigned)(next_rand(w) % n)) : NULL;
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
	if (past_limit(w))
		return NULL;
	if (atomic_load_explicit(&weft__rt.irq_sweep, memory_order_relaxed))
		weft__irq_sweep();
	weft__timer_look(w);
	if (atomic_load_explicit(&w->inbox_len, memory_order_relaxed))
		inbox_drain(w);
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
	if ((++w->tick & 63) == 0 && (f = look_around(w)))
		return f;
	/* The hand-off first, but not forever: two fibers handing off to
	 * each other would keep the rest of the queue waiting. */
	if (w->runnext_streak < RUNNEXT_MAX && (f = take_runnext(w))) {
		w->runnext_streak++;
		return f;
	}
	w->runnext_streak = 0;
	if ((f = take_local(w)) || (f = take_pinned(w, 0)) || (f = take_yielded(w)) ||
	    (f = take_runnext(w)))
		return f;
	/* Nothing of its own (so no yielded fiber for look_around to flush). */
	if ((f = look_around(w)))
		return f;
	if ((f = steal(w)))
		return f;
	/* Nothing queued anywhere: look for I/O that is ready, without
	 * blocking, as Go's findrunnable does before it spins. */
	if (weft__io_pending() && weft__io_poll(0, NULL))
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
		pinned_ready(w, t, f);
		return;
	}
	if (w)
		push_local(w, f);
	else
		gq_push_list(cls(f), f, f, 1);
	wake_for(w);
}

void weft__ready_next(struct weft__fiber *f)
{
	struct weft__worker *w = weft__tls_worker;
	/* The slot holds bulk fibers: a latency-sensitive one goes to its
	 * class's queue, which is looked at first anyway; one pinned to
	 * another worker goes there. */
	uint32_t pin = weft__fiber_pin_of(f);
	if (!w || !w->cur || (pin && pin - 1 != (uint32_t)w->index) || cls(f)) {
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
	if (!alone())
		weft__wake_one(false);
}

void weft__finish_switch(struct weft__worker *w)
{
	struct weft__fiber *p = w->prev;
	w->prev = NULL;
	if (!p)
		return;
	switch (w->prev_act) {
	case ACT_YIELD:
		if (cls(p)) {
			yield_high(w, p);
			break;
		}
		p->next = NULL;
		if (w->yielded_tail)
			w->yielded_tail->next = p;
		else
			w->yielded = p;
		w->yielded_tail = p;
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

static inline void count_switch(struct weft__worker *w) { bump(&w->switches); }

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

/* ---- Fibers that found no stack at their first run ------------------------
 * (docs/decisions/lazy-stacks.md) They wait here, still counted alive and
 * not in any queue, until a fiber ends (its stack is then in the pools:
 * finish_switch readies one) or an idle worker tries them all again. */
static weft__lock_t starved_lock = WEFT__LOCK_INIT;
static struct weft__fiber *starved_head, *starved_tail;
static _Alignas(64) _Atomic unsigned nstarved; /* read without the lock: a hint */
_Atomic uint64_t weft__starves;

/* f's first run on w found no stack (weft__stack_start): it waits on the
 * starved list. Stacks may have gone back since w's look found none (a
 * sleeper drained its cache, a worker under pressure its own), and whoever
 * gave them may have looked at the starved list before f was on it: the
 * two sides fence between their write and their read (here the list, then
 * the count; weft__stacks_returned the count, then the list), so one of
 * them sees the other, and f is tried again. Every refused first run comes
 * here: a switch's (no_stack) and the worker loop's (weft__run). */
static void starve(struct weft__worker *w, struct weft__fiber *f)
{
	atomic_fetch_add_explicit(&weft__starves, 1, memory_order_relaxed);
	f->next = NULL;
	weft__lock(&starved_lock);
	if (starved_tail)
		starved_tail->next = f;
	else
		starved_head = f;
	starved_tail = f;
	atomic_store_explicit(&nstarved, atomic_load_explicit(&nstarved, memory_order_relaxed) + 1,
			      memory_order_relaxed);
	weft__unlock(&starved_lock);
	weft__fence();
	if (weft__stack_returns() != w->stack_returns)
		weft__unstarve(1);
}

bool weft__starved(void) { return atomic_load_explicit(&nstarved, memory_order_relaxed) > 0; }

void weft__unstarve(unsigned max)
{
	while (max-- && weft__starved()) {
		weft__lock(&starved_lock);
		struct weft__fiber *f = starved_head;
		if (f) {
			starved_head = f->next;
			if (!starved_head)
				starved_tail = NULL;
			atomic_store_explicit(
				&nstarved,
				atomic_load_explicit(&nstarved, memory_order_relaxed) - 1,
				memory_order_relaxed);
		}
		weft__unlock(&starved_lock);
		if (!f)
			break;
		f->next = NULL;
		weft__ready(f);
	}
}

void weft__stacks_returned(void)
{
	/* Against starve's: a returner that moved the count either sees
	 * the fiber starved, or the starver sees the count moved. */
	weft__fence();
	if (weft__starved())
		weft__unstarve(UINT_MAX);
}

/* next is about to run for the first time and found no stack: it waits on
 * the starved list, and w looks for other work. Out of line and
 * rare: only when the pools and the shim are both out of stacks. */
COLD static struct weft__fiber *no_stack(struct weft__worker *w, struct weft__fiber *next)
{
	do {
		starve(w, next);
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

void weft__switch_out(struct weft__fiber *self, int act)
{
	struct weft__worker *w = weft__tls_worker;
	struct weft__fiber *next = startable(w, weft__find_work(w));
	w->prev = self;
	w->prev_act = act;
	set_cur(w, next);
	count_switch(w);
	if (act == ACT_PARK) {
		bump(&w->parks);
		/* weft_dump's "for how long": the worker's stamp, not a read
		 * of the counter here (rdtsc costs 10-13 ns in this VM, two
		 * per channel round trip). */
		atomic_store_explicit(&self->wait_since, (int64_t)w->stamp, memory_order_relaxed);
	}
	if (next)
		w->runs++;
	/* Resumed, perhaps on another worker: the switch reads it afresh. */
	weft__finish_switch(switch_to(w, self, next, act == ACT_EXIT));
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
		atomic_fetch_and_explicit(&self->park, ~PW_CANCEL, memory_order_acq_rel);
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

int weft_fiber_pin(int worker)
{
	struct weft__worker *w = weft__worker_self();
	if (!w || !w->cur)
		return -EPERM;
	if (worker < -1 || worker >= (int)weft__rt.nworkers)
		return -EINVAL;
	struct weft__fiber *self = w->cur;
	if (worker == -1)
		worker = w->index;
	weft__fiber_set_pin(self, (uint32_t)worker + 1);
	if (worker != w->index)
		weft__switch_out(self, ACT_MOVE);
	return 0;
}

int weft_fiber_unpin(void)
{
	struct weft__worker *w = weft__worker_self();
	if (!w || !w->cur)
		return -EPERM;
	weft__fiber_set_pin(w->cur, 0);
	return 0;
}

/* ---- The worker loop ---------------------------------------------------- */

bool weft__run(struct weft__worker *w, struct weft__fiber *f)
{
	if (!f->ctx.sp && weft__stack_start(w, f)) {
		starve(w, f);
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

void weft__worker_main(void *arg)
{
	struct weft__worker *w = arg;
	weft__set_worker(w);
	shim_fault_thread_init();
	weft__ctx_adopt_thread(&w->sched);
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
		while (!f && shim_now() - spin_from < SPIN_NS) {
			if (!spinning) {
				spinning = true;
				atomic_fetch_add(&weft__rt.nspinning, 1);
			}
			for (int i = 0; i < SPIN_PAUSES; i++)
				arch_relax();
			f = weft__find_work(w);
		}
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
