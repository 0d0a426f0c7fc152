/* SPDX-License-Identifier: MIT */
/* Deadlines of parked fibers: a binary min-heap per worker, each under its
 * own lock, and a shared one for plain threads (virtual clock) and as a
 * fallback (docs/decisions/worker-timers.md). A fiber arms its entry in the
 * heap of the worker it parks on, before it switches out, and disarms it
 * when it resumes, on whichever worker that is: its timer_slot names the
 * heap, so an entry never outlives its park and each heap holds at most one
 * entry per fiber (or plain thread). The common timed park takes only its
 * own worker's heap lock, twice.
 *
 * Each heap's room for fibers is made by the spawn of a fiber whose record
 * is new (weft__timer_reserve): every heap of the running workers and the
 * shared one get room for every record, where running out of memory is the
 * spawn's -ENOMEM, so arming a fiber's deadline never allocates: it cannot
 * fail (a worker heap without room, a worker of a runtime started after the
 * reserve, sends the entry to the shared heap, which has it).
 *
 * weft__timer_deadline is a lower bound of every heap's earliest deadline:
 * an arm earlier than it lowers it (and wakes an idle worker to recompute
 * its timeout); a disarm leaves it, stale but early; whoever finds it
 * passed fires what is due in every heap, then raises it to the heaps'
 * earliest again (resummarize). Timers fire no earlier than due: a stale
 * bound only makes a look or an idle worker's sleep end early. Whichever
 * worker looks for work fires what is due in any heap; idle workers sleep no
 * later than the bound, or with the virtual clock the last one to go idle
 * moves the clock to the exact earliest deadline. */
#include <stdint.h>
#include <stdlib.h>

#include "internal.h"

struct entry {
	int64_t deadline;
	struct weft__fiber *f;
	uint32_t gen;
};

/* timer_slot: (index + 1) << HEAP_BITS | heap, 0 when not armed. */
#define HEAP_BITS 5
#define NHEAPS (WEFT_MAX_WORKERS + 1)
#define SHARED WEFT_MAX_WORKERS
_Static_assert(NHEAPS <= 1 << HEAP_BITS, "heap numbers fit timer_slot's low bits");

struct heap {
	_Alignas(64) weft__lock_t lock;
	/* earliest deadline here, 0: none (an armed deadline is > 0, and
	 * the heaps start zeroed); read with top_of */
	_Atomic int64_t top;
	struct entry *e;
	size_t len, cap;
};

static struct heap heaps[NHEAPS];
_Alignas(64) _Atomic int64_t weft__timer_deadline = INT64_MAX;
static _Atomic size_t room; /* every heap's cap at least, for weft__timer_reserve */

/* timer_slot is written under its heap's lock and read by the disarming
 * fiber without it (to find the heap): atomic accesses throughout. */
static _Atomic uint32_t *slot_of(struct weft__fiber *f)
{
	return (_Atomic uint32_t *)&f->timer_slot;
}

/* The heap's entries, length and number, held in locals while it is
 * reordered: the slot stores are atomic, which the compiler would
 * otherwise take as reasons to load them again. */
struct view {
	struct entry *e;
	size_t len;
	uint32_t id;
};

/* The reordering steps, inlined where they are used: out of line, their
 * calls cost a timed park about 50 instructions more (callgrind,
 * docs/decisions/worker-timers.md). */
#define HEAP_OP static inline __attribute__((always_inline))

static struct view view_of(struct heap *h)
{
	return (struct view){h->e, h->len, (uint32_t)(h - heaps)};
}

HEAP_OP void place(struct view v, size_t i, struct entry e)
{
	v.e[i] = e;
	atomic_store_explicit(slot_of(e.f), (uint32_t)((i + 1) << HEAP_BITS) | v.id,
			      memory_order_relaxed);
}

/* Returns where the entry at i ends up. */
HEAP_OP size_t sift_up(struct view v, size_t i)
{
	struct entry e = v.e[i];
	while (i > 0) {
		size_t p = (i - 1) / 2;
		if (v.e[p].deadline <= e.deadline)
			break;
		place(v, i, v.e[p]);
		i = p;
	}
	place(v, i, e);
	return i;
}

/* Returns true if the entry at i moved. */
HEAP_OP bool sift_down(struct view v, size_t i)
{
	struct entry e = v.e[i];
	size_t start = i;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= v.len)
			break;
		if (c + 1 < v.len && v.e[c + 1].deadline < v.e[c].deadline)
			c++;
		if (e.deadline <= v.e[c].deadline)
			break;
		place(v, i, v.e[c]);
		i = c;
	}
	if (i != start)
		place(v, i, e);
	return i != start;
}

/* h's earliest deadline, INT64_MAX: none. */
static int64_t top_of(struct heap *h, memory_order mo)
{
	int64_t t = atomic_load_explicit(&h->top, mo);
	return t ? t : INT64_MAX;
}

static void set_top(struct heap *h)
{
	int64_t t = h->len ? h->e[0].deadline : 0;
	if (atomic_load_explicit(&h->top, memory_order_relaxed) != t)
		atomic_store_explicit(&h->top, t, memory_order_release);
}

static void remove_at(struct heap *h, size_t i)
{
	struct view v = view_of(h);
	atomic_store_explicit(slot_of(v.e[i].f), 0, memory_order_relaxed);
	v.len = --h->len;
	if (i < v.len) {
		place(v, i, v.e[v.len]);
		if (!sift_down(v, i))
			sift_up(v, i);
	}
	set_top(h);
}

/* Room for n entries in h (its lock held): 0 or -ENOMEM. */
static int grow(struct heap *h, size_t n)
{
	if (n <= h->cap)
		return 0;
	size_t ncap = h->cap ? h->cap : 64;
	while (ncap < n)
		ncap *= 2;
	struct entry *e = realloc(h->e, ncap * sizeof *e);
	if (!e)
		return -ENOMEM;
	h->e = e;
	h->cap = ncap;
	return 0;
}

/* Lower the bound to t if it is later: true if it did. */
static bool lower_to(int64_t t)
{
	int64_t g = atomic_load(&weft__timer_deadline);
	while (t < g)
		if (atomic_compare_exchange_weak(&weft__timer_deadline, &g, t))
			return true;
	return false;
}

/* The heaps in use: the running workers' and the shared one. */
static unsigned nheaps(void) { return weft__rt.nworkers; }

/* Raise the bound to the heaps' earliest deadline, if it is below it. An
 * arm that read the old bound and left it (its deadline not earlier) may
 * be missed by the first look at the heaps; the second, under each heap's
 * lock after the new bound is stored, sees that arm's entry, or the arm
 * took the lock after it and read the new bound, and lowers it itself. */
static void resummarize(void)
{
	int64_t m = top_of(&heaps[SHARED], memory_order_acquire);
	unsigned n = nheaps();
	for (unsigned i = 0; i < n; i++) {
		int64_t t = top_of(&heaps[i], memory_order_acquire);
		if (t < m)
			m = t;
	}
	if (m <= atomic_load(&weft__timer_deadline))
		return; /* exact, or an arm is about to lower it */
	atomic_store(&weft__timer_deadline, m);
	for (unsigned i = 0; i <= n; i++) {
		struct heap *h = &heaps[i == n ? SHARED : i];
		weft__lock(&h->lock);
		int64_t t = top_of(h, memory_order_relaxed);
		weft__unlock(&h->lock);
		if (t < m)
			lower_to(t);
	}
}

int weft__timer_reserve(size_t n)
{
	if (n <= atomic_load_explicit(&room, memory_order_relaxed))
		return 0;
	unsigned nw = nheaps();
	size_t least = SIZE_MAX;
	for (unsigned i = 0; i <= nw; i++) {
		struct heap *h = &heaps[i == nw ? SHARED : i];
		weft__lock(&h->lock);
		int r = grow(h, n);
		if (h->cap < least)
			least = h->cap;
		weft__unlock(&h->lock);
		if (r)
			return r;
	}
	atomic_store_explicit(&room, least, memory_order_relaxed);
	return 0;
}

void weft__timer_arm(struct weft__fiber *f, uint32_t gen, int64_t deadline)
{
	struct weft__worker *w = f->flags & FF_THREAD ? NULL : weft__worker_self();
	struct heap *h = &heaps[w ? (unsigned)w->index : SHARED];
	weft__lock(&h->lock);
	if (h->len == h->cap && w) {
		/* A worker's heap without room (its runtime started after the
		 * last reserve): the shared heap has room for every record. */
		weft__unlock(&h->lock);
		h = &heaps[SHARED];
		weft__lock(&h->lock);
	}
	/* Only a plain thread's (virtual clock) can find no room, or find the
	 * runtime stopped under it (weft__timer_reset has already let the
	 * others go): no memory for the entry, or no clock to reach its
	 * deadline. It times out now rather than never. */
	if ((h->len == h->cap && grow(h, h->cap + 1)) ||
	    ((f->flags & FF_THREAD) && !atomic_load(&weft__rt.running))) {
		weft__unlock(&h->lock);
		weft__unpark(f, gen, -ETIMEDOUT);
		return;
	}
	struct view v = view_of(h);
	v.e[v.len] = (struct entry){deadline, f, gen};
	h->len++;
	bool earliest = false;
	if (sift_up(v, v.len) == 0) {
		atomic_store_explicit(&h->top, deadline, memory_order_release);
		/* Under the lock: resummarize's second look relies on it. */
		earliest = lower_to(deadline);
	}
	weft__unlock(&h->lock);
	if (earliest) {
		SIM_POINT_UNHELD(weft__tls_worker, SIM_TIMER_ARM);
		weft__kick_idle(); /* a sleeping worker may need to wake sooner */
	}
}

void weft__timer_disarm(struct weft__fiber *f)
{
	/* Its heap's number stays while the entry is in it; 0 means fired
	 * (before the fiber was readied) or taken out by weft__timer_reset. */
	uint32_t s = atomic_load_explicit(slot_of(f), memory_order_relaxed);
	if (!s)
		return;
	struct heap *h = &heaps[s & ((1u << HEAP_BITS) - 1)];
	weft__lock(&h->lock);
	s = atomic_load_explicit(slot_of(f), memory_order_relaxed);
	if (s)
		remove_at(h, (s >> HEAP_BITS) - 1);
	weft__unlock(&h->lock);
}

/* Which of the entries due at the top's instant h fires next, drawn in a
 * simulation (the order of arms for one instant depends on timing): its
 * index. The plain build fires the top (SIM_CHOOSE) and has no use for
 * this. */
__attribute__((unused)) static size_t due_pick(const struct heap *h)
{
	int64_t t = h->e[0].deadline;
	size_t n = 0;
	for (size_t i = 0; i < h->len; i++)
		n += h->e[i].deadline == t;
	size_t k = n > 1 ? (size_t)SIM_DRAW(n, SIM_TIMER_ORDER, 0) : 0;
	for (size_t i = 0; i < h->len; i++)
		if (h->e[i].deadline == t && k-- == 0)
			return i;
	return 0;
}

static void fire_heap(struct heap *h, int64_t now)
{
	if (top_of(h, memory_order_acquire) > now)
		return;
	weft__lock(&h->lock);
	while (h->len && h->e[0].deadline <= now) {
		size_t i = SIM_CHOOSE(due_pick(h), 0);
		struct entry e = h->e[i];
		remove_at(h, i);
		/* Under the lock: the fiber cannot disarm and go away meanwhile. */
		weft__unpark(e.f, e.gen, -ETIMEDOUT);
	}
	weft__unlock(&h->lock);
}

/* Fire what is due at now, a reading of weft__now(), in every heap. */
static void fire_at(int64_t now)
{
	if (atomic_load_explicit(&weft__timer_deadline, memory_order_acquire) > now)
		return;
	unsigned n = nheaps();
	for (unsigned i = 0; i < n; i++)
		fire_heap(&heaps[i], now);
	fire_heap(&heaps[SHARED], now);
	resummarize();
}

void weft__timer_fire_due_slow(void) { fire_at(weft__now()); }

/* How often a look for work reads the clock while a timer is armed
 * (docs/decisions/timer-checks.md): 17 ns through the vDSO here, half a
 * yield. Where the last TIMER_EVERY looks came within TIMER_SLACK_NS, only
 * every TIMER_EVERY-th look reads it; otherwise every one does. So where
 * the pace of switches holds, a timer fires at most about TIMER_SLACK_NS
 * later than it would at every look; where quick looks turn slow, it fires
 * within TIMER_EVERY looks, and the looks after that are checked one by
 * one again. A window is judged whole: one quick look among slow ones (a
 * sleeper that wakes and parks again at once) does not make the next
 * seven go unchecked. The count of looks is weft__timer_look's. */
#define TIMER_EVERY 8
#define TIMER_SLACK_NS 20000

void weft__timer_check(struct weft__worker *w)
{
	int64_t now = weft__now();
	if (w->timer_looks >= TIMER_EVERY) {
		int64_t took = now - w->timer_seen; /* the window's looks */
		w->timer_skip = took >= 0 && took < TIMER_SLACK_NS ? TIMER_EVERY - 1 : 0;
		w->timer_looks = 0;
		w->timer_seen = now;
	}
	fire_at(now);
}

int64_t weft__timer_next(void)
{
	return atomic_load_explicit(&weft__timer_deadline, memory_order_acquire);
}

int64_t weft__timer_earliest(void)
{
	if (atomic_load_explicit(&weft__timer_deadline, memory_order_acquire) != INT64_MAX)
		resummarize();
	return atomic_load_explicit(&weft__timer_deadline, memory_order_acquire);
}

void weft__timer_reset(void)
{
	/* The heaps keep their room: the fiber records it was made for
	 * outlive the runtime (fibtab.c); the next runtime's first spawn
	 * checks it again for its own workers. Every fiber has ended, so
	 * what is left are plain threads' deadlines on the virtual clock,
	 * which stops with the runtime: they time out now. Each entry is
	 * taken out first, so the thread's disarm finds nothing to remove;
	 * its record is still there, since that disarm takes this lock. */
	for (unsigned i = 0; i < NHEAPS; i++) {
		struct heap *h = &heaps[i];
		weft__lock(&h->lock);
		while (h->len) {
			struct entry e = h->e[--h->len];
			atomic_store_explicit(slot_of(e.f), 0, memory_order_relaxed);
			if (e.f->flags & FF_THREAD)
				weft__unpark(e.f, e.gen, -ETIMEDOUT);
		}
		atomic_store(&h->top, 0);
		weft__unlock(&h->lock);
	}
	atomic_store(&weft__timer_deadline, INT64_MAX);
	atomic_store_explicit(&room, 0, memory_order_relaxed);
}
