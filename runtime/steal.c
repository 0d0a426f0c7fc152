/* SPDX-License-Identifier: MIT */
/* Work stealing: a worker with nothing of its own takes half of a random
 * victim's deque, or a victim's next-run slot that has waited too long
 * (sched.c's weft__find_work says when). */
#include "internal.h"

/* How long a hand-off's fiber stays in its worker's slot before an idle
 * worker may take it (Go waits about 3 us). */
#define RUNNEXT_GRACE_NS 5000

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
	/* Acquire: the look at r's pin below reads its record, which the
	 * exchange that put r there published (TSan: the monitor's look at
	 * a freshly spawned fiber, test_handoff). */
	struct weft__fiber *r = atomic_load_explicit(&v->runnext, memory_order_acquire);
	/* A pinned fiber there changes its pin only while it runs, and then
	 * the victim has switched: the grace below starts again. */
	if (!r || weft__fiber_pin_of(r))
		return NULL;
	struct weft__seen *seen = &w->rn_seen[v->index];
	uint64_t sw = atomic_load_explicit(&v->switches, memory_order_relaxed);
	int64_t now = shim_now();
	if (seen->f != r || seen->switches != sw) {
		*seen = (struct weft__seen){.f = r, .switches = sw, .at = now};
		return NULL;
	}
	/* (A simulation draws whether the grace has passed: its clock does
	 * not move while a worker is busy.) */
	if (SIM_DRAW(4, SIM_GRACE, now - seen->at < RUNNEXT_GRACE_NS) ||
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
		struct weft__deque *d = weft__deque_of(v, c);
		int64_t half = (weft__deque_size(d) + 1) / 2;
		struct weft__fiber *first = half > 0 ? weft__deque_steal(d) : NULL;
		if (!first)
			continue;
		for (int64_t i = 1; i < half; i++) {
			struct weft__fiber *g = weft__deque_steal(d);
			if (!g || !weft__deque_push(weft__deque_of(w, c), g)) {
				if (g)
					weft__gq_push_list(c, g, g, 1);
				break;
			}
		}
		weft__bump(&w->steals);
		return first;
	}
	return NULL;
}

/* Every victim's next-run slot, from victim start on: the first that has
 * waited too long. */
static struct weft__fiber *steal_slots(struct weft__worker *w, unsigned start)
{
	unsigned n = weft__rt.nworkers;
	for (unsigned k = 0; k < n; k++) {
		struct weft__worker *v = &weft__rt.workers[(start + k) % n];
		struct weft__fiber *r = v != w ? steal_runnext(w, v) : NULL;
		if (r) {
			weft__bump(&w->steals);
			return r;
		}
	}
	return NULL;
}

/* Steal half of a random victim's bulk deque; with every one empty, a
 * victim's next-run slot that has waited too long. */
struct weft__fiber *weft__steal(struct weft__worker *w)
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
	if (SIM_DRAW(8, SIM_SLOT_LOOK, ++w->rn_looks % 8))
		return NULL;
	return steal_slots(w, start);
}

struct weft__fiber *weft__steal_stale(struct weft__worker *w)
{
	return weft__rt.nworkers > 1 ? steal_slots(w, 0) : NULL;
}

struct weft__fiber *weft__steal_high(struct weft__worker *w)
{
	unsigned n = weft__rt.nworkers;
	return n > 1 ? steal_class(w, 1, (unsigned)(next_rand(w) % n)) : NULL;
}
