/* SPDX-License-Identifier: MIT */
/* Deadlines of parked fibers: one binary min-heap under a lock. A fiber arms
 * its entry before it switches out and disarms it when it resumes, so an
 * entry never outlives its park; the heap holds at most one entry per fiber
 * (or plain thread, under the virtual clock). Its room for fibers is made
 * by the spawn of a fiber whose record is new (weft__timer_reserve), where
 * running out of memory is the spawn's -ENOMEM, so arming a fiber's
 * deadline never allocates: it cannot fail. Whichever worker looks for work
 * next fires what is due; idle workers sleep no later than the earliest
 * deadline, or with the virtual clock the last one to go idle moves the
 * clock to it. */
#include <stdint.h>
#include <stdlib.h>

#include "internal.h"

struct entry {
	int64_t deadline;
	struct weft__fiber *f;
	uint32_t gen;
};

static weft__lock_t lock = WEFT__LOCK_INIT;
static struct entry *heap;
static size_t len, cap;
_Atomic int64_t weft__timer_deadline = INT64_MAX;
_Atomic size_t weft__timer_room; /* cap, for weft__timer_reserve's check */

static void place(size_t i, struct entry e)
{
	heap[i] = e;
	e.f->timer_slot = i + 1;
}

static void sift_up(size_t i)
{
	struct entry e = heap[i];
	while (i > 0) {
		size_t p = (i - 1) / 2;
		if (heap[p].deadline <= e.deadline)
			break;
		place(i, heap[p]);
		i = p;
	}
	place(i, e);
}

static void sift_down(size_t i)
{
	struct entry e = heap[i];
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= len)
			break;
		if (c + 1 < len && heap[c + 1].deadline < heap[c].deadline)
			c++;
		if (e.deadline <= heap[c].deadline)
			break;
		place(i, heap[c]);
		i = c;
	}
	place(i, e);
}

static void remove_at(size_t i)
{
	heap[i].f->timer_slot = 0;
	len--;
	if (i < len) {
		struct weft__fiber *moved = heap[len].f;
		place(i, heap[len]);
		sift_down(i);
		sift_up(moved->timer_slot - 1);
	}
	atomic_store_explicit(&weft__timer_deadline, len ? heap[0].deadline : INT64_MAX,
			      memory_order_release);
}

/* Room for n entries (lock held): 0 or -ENOMEM. */
static int grow(size_t n)
{
	if (n <= cap)
		return 0;
	size_t ncap = cap ? cap : 64;
	while (ncap < n)
		ncap *= 2;
	struct entry *e = realloc(heap, ncap * sizeof *e);
	if (!e)
		return -ENOMEM;
	heap = e;
	cap = ncap;
	atomic_store_explicit(&weft__timer_room, cap, memory_order_relaxed);
	return 0;
}

int weft__timer_reserve(size_t n)
{
	if (n <= atomic_load_explicit(&weft__timer_room, memory_order_relaxed))
		return 0;
	weft__lock(&lock);
	int r = grow(n);
	weft__unlock(&lock);
	return r;
}

void weft__timer_arm(struct weft__fiber *f, uint32_t gen, int64_t deadline)
{
	weft__lock(&lock);
	/* Only a plain thread's (virtual clock) can find no room, or find the
	 * runtime stopped under it (weft__timer_reset has already let the
	 * others go): no memory for the entry, or no clock to reach its
	 * deadline. It times out now rather than never. */
	if ((len == cap && grow(cap + 1)) ||
	    ((f->flags & FF_THREAD) && !atomic_load(&weft__rt.running))) {
		weft__unlock(&lock);
		weft__unpark(f, gen, -ETIMEDOUT);
		return;
	}
	place(len, (struct entry){deadline, f, gen});
	sift_up(len++);
	bool earliest = heap[0].f == f;
	atomic_store_explicit(&weft__timer_deadline, heap[0].deadline, memory_order_release);
	weft__unlock(&lock);
	if (earliest)
		weft__kick_idle(); /* a sleeping worker may need to wake sooner */
}

void weft__timer_disarm(struct weft__fiber *f)
{
	weft__lock(&lock);
	if (f->timer_slot)
		remove_at(f->timer_slot - 1);
	weft__unlock(&lock);
}

/* Fire what is due at now, a reading of weft__now(). */
static void fire_at(int64_t now)
{
	if (atomic_load_explicit(&weft__timer_deadline, memory_order_acquire) > now)
		return;
	weft__lock(&lock);
	while (len && heap[0].deadline <= now) {
		struct entry e = heap[0];
		remove_at(0);
		/* Under the lock: the fiber cannot disarm and go away meanwhile. */
		weft__unpark(e.f, e.gen, -ETIMEDOUT);
	}
	weft__unlock(&lock);
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

void weft__timer_reset(void)
{
	/* The heap keeps its room: the fiber records it was made for
	 * outlive the runtime (fibtab.c). Every fiber has ended, so what is
	 * left are plain threads' deadlines on the virtual clock, which
	 * stops with the runtime: they time out now. Each entry is taken out
	 * first, so the thread's disarm finds nothing to remove; its record
	 * is still there, since that disarm takes this lock. */
	weft__lock(&lock);
	while (len) {
		struct entry e = heap[--len];
		e.f->timer_slot = 0;
		if (e.f->flags & FF_THREAD)
			weft__unpark(e.f, e.gen, -ETIMEDOUT);
	}
	atomic_store(&weft__timer_deadline, INT64_MAX);
	weft__unlock(&lock);
}
