/* SPDX-License-Identifier: MIT */
/* Stacks of the default size in two tiers in front of the shim's pools: a
 * cache on each worker (an array: taking one touches no stack memory) and
 * a shared tier behind one lock, between which they move MOVE at a time,
 * so a steady stream of spawns and exits touches no lock and makes no
 * system call, and stacks freed on one worker are soon taken on another.
 *
 * Stacks kept here are memory the shim cannot see (on bare metal a stack's
 * pages are backed): when the last busy worker runs out of work the shared
 * tier keeps at most SHARED_KEEP and the shim gives the pages of what it
 * pools back (shim_stack_trim); when the shim says -ENOMEM, every worker's
 * cache goes to the shared tier at its next look for work, and the tier is
 * trimmed to SHARED_KEEP (weft__stack_pressure).
 *
 * A fiber of the default size gets its stack when it first runs, not at its
 * spawn (docs/decisions/lazy-stacks.md): a fiber spawned and not yet run is
 * its record alone. Spawn only makes sure the worker's cache is not empty
 * (weft__stack_admit), so that running out is still told to the spawner. A
 * fiber that finds no stack at its first run all the same waits on the
 * scheduler's starved list (starve.c) for one to be freed. */
#include "internal.h"

#define CACHE_MAX                                             \
	((unsigned)(sizeof((struct weft__worker *)0)->cache / \
		    sizeof((struct weft__worker *)0)->cache[0]))
#define MOVE (CACHE_MAX / 2)
#define SHARED_MAX 1024
#define SHARED_KEEP 32

static weft__lock_t shared_lock = WEFT__LOCK_INIT;
static struct shim_stack shared[SHARED_MAX];
/* How many are in shared: written under shared_lock, read without it as a
 * hint (weft__stack_idle). */
static _Atomic unsigned nshared_;
#define NSHARED() atomic_load_explicit(&nshared_, memory_order_relaxed)
#define SET_NSHARED(n) atomic_store_explicit(&nshared_, (n), memory_order_relaxed)
static _Atomic unsigned pressure; /* moves on each -ENOMEM from the shim */
/* Moves each time stacks go back where a first run looks for one (a cache
 * drained into the shared tier, the shared tier trimmed into the shim):
 * what a fiber on starve.c's starved list waits for. */
static _Atomic unsigned returns;

static bool default_size(size_t size) { return size == weft__rt.stack_size; }

/* The common shape's guard, learnt from the first default-size stack
 * the shim gives after weft__stack_reset; 0 until then. */
_Atomic size_t weft__stack_guard;

void weft__stack_of(const struct weft__fiber *f, struct shim_stack *out)
{
	if (f->flags & FF_STACK) {
		*out = atomic_load_explicit(&((struct weft__fiber *)f)->cold, memory_order_acquire)
			       ->stack;
		return;
	}
	*out = (struct shim_stack){
		.base = __atomic_load_n(&f->stack, __ATOMIC_RELAXED),
		.size = weft__rt.stack_size,
		.guard = atomic_load_explicit(&weft__stack_guard, memory_order_relaxed),
	};
}

int weft__stack_get(struct weft__worker *w, size_t size, struct shim_stack *out)
{
	if (default_size(size)) {
		if (w && w->ncached) {
			*out = w->cache[--w->ncached];
			return 0;
		}
		/* Before the look (see weft__stack_returns). */
		if (w)
			w->stack_returns = atomic_load(&returns);
		bool got = false;
		weft__lock(&shared_lock);
		unsigned n = NSHARED();
		if (n) {
			*out = shared[--n];
			got = true;
			/* and a batch for the next spawns here */
			while (w && n && w->ncached < MOVE)
				w->cache[w->ncached++] = shared[--n];
			SET_NSHARED(n);
		}
		weft__unlock(&shared_lock);
		if (got)
			return 0;
	}
	int err = shim_stack_alloc(size, out);
	if (err == -ENOMEM)
		atomic_fetch_add(&pressure, 1);
	size_t none = 0;
	if (!err && default_size(size) &&
	    !atomic_load_explicit(&weft__stack_guard, memory_order_relaxed))
		atomic_compare_exchange_strong(&weft__stack_guard, &none, out->guard);
	return err;
}

/* Hand n stacks to the shared tier, or to the shim when it is full. */
static void give(const struct shim_stack *s, unsigned n)
{
	unsigned i = 0;
	weft__lock(&shared_lock);
	unsigned k = NSHARED();
	while (i < n && k < SHARED_MAX)
		shared[k++] = s[i++];
	SET_NSHARED(k);
	weft__unlock(&shared_lock);
	for (; i < n; i++)
		shim_stack_free(&s[i]);
}

void weft__stack_put(struct weft__worker *w, const struct shim_stack *s)
{
	if (!weft__stack_common(s)) {
		shim_stack_free(s);
		return;
	}
	if (!w) {
		give(s, 1);
		return;
	}
	if (w->ncached == CACHE_MAX) {
		/* the oldest half: the newest are likeliest still in cache */
		give(w->cache, MOVE);
		w->ncached -= MOVE;
		for (unsigned i = 0; i < w->ncached; i++)
			w->cache[i] = w->cache[i + MOVE];
	}
	w->cache[w->ncached++] = *s;
}

int weft__stack_admit_slow(struct weft__worker *w)
{
	if (!w && NSHARED() > 0)
		return 0;
	struct shim_stack s;
	int err = weft__stack_get(w, weft__rt.stack_size, &s);
	if (!err)
		weft__stack_put(w, &s);
	return err;
}

/* The base is set at the first run, when f is already in the fiber table:
 * the stall detector and weft_dump read it from other threads (an atomic
 * store, a plain one on every CPU). */
static void set_base(struct weft__fiber *f, void *base)
{
	__atomic_store_n(&f->stack, base, __ATOMIC_RELAXED);
}

/* A default-size stack for f, which has none yet: the one this worker
 * freed last (likely still in the CPU's cache: a stream of short fibers
 * runs on one stack), else from the shared tier or the shim. One the pools
 * would not keep (a tool's, or a guard other than the common one) goes in
 * f's cold block. */
static int take(struct weft__worker *w, struct weft__fiber *f)
{
	if (w && w->ncached) {
		set_base(f, w->cache[--w->ncached].base);
		return 0;
	}
	struct shim_stack s;
	int err = weft__stack_get(w, weft__rt.stack_size, &s);
	if (err)
		return err;
	if (weft__stack_common(&s)) {
		set_base(f, s.base);
		return 0;
	}
	struct weft__fiber_cold *c = weft__fiber_cold(f);
	if (!c) {
		weft__stack_put(w, &s);
		return -ENOMEM;
	}
	c->stack = s;
	f->flags |= FF_STACK;
	return 0;
}

int weft__stack_start(struct weft__worker *w, struct weft__fiber *f)
{
	if (!(f->flags & FF_STACK)) {
		int err = take(w, f);
		if (err)
			return err;
	}
	struct shim_stack s;
	weft__stack_of(f, &s);
	weft__ctx_create(&f->ctx, s.base, s.size);
	f->ctx.sp = arch_frame_init((char *)s.base + s.size, weft__rt.fiber_main, f);
	return 0;
}

void weft__stack_release(struct weft__worker *w, struct weft__fiber *f)
{
	weft__ctx_destroy(&f->ctx);
	if (!(f->flags & FF_STACK) && w && w->ncached < CACHE_MAX) {
		/* of the common shape: the cache takes it as it is */
		struct shim_stack *s = &w->cache[w->ncached++];
		s->base = __atomic_load_n(&f->stack, __ATOMIC_RELAXED);
		s->size = weft__rt.stack_size;
		s->guard = atomic_load_explicit(&weft__stack_guard, memory_order_relaxed);
		s->tool_id = 0;
		return;
	}
	struct shim_stack s;
	weft__stack_of(f, &s);
	weft__stack_put(w, &s);
}

void weft__stack_cache_drain(struct weft__worker *w)
{
	if (!w->ncached)
		return;
	give(w->cache, w->ncached);
	w->ncached = 0;
	atomic_fetch_add(&returns, 1);
}

bool weft__stack_pressure(struct weft__worker *w)
{
	unsigned p = atomic_load_explicit(&pressure, memory_order_relaxed);
	if (p == w->stack_pressure)
		return false;
	w->stack_pressure = p;
	unsigned r = atomic_load_explicit(&returns, memory_order_relaxed);
	/* Into the shared tier, where any worker's first run finds them, and
	 * the tier kept at SHARED_KEEP as when idle, not emptied: a fiber
	 * whose spawn was admitted by a stack in this cache may be starving
	 * on another worker. Given back to the shim, at its low-water mark
	 * the stack could not be had again, and that fiber would wait for
	 * good though its spawn succeeded (a connection accepted and never
	 * answered: test_demand on 2 harts). */
	weft__stack_cache_drain(w);
	weft__stack_trim(SHARED_KEEP);
	/* Not just "looked": a worker whose own refusal moved the pressure
	 * and that had nothing to give would retry its starved fibers, be
	 * refused again, and spin. */
	return atomic_load_explicit(&returns, memory_order_relaxed) != r;
}

unsigned weft__stack_returns(void) { return atomic_load(&returns); }

unsigned weft__stack_shared(void) { return NSHARED(); }

void weft__stack_trim(unsigned keep)
{
	bool freed = false;
	for (;;) { /* one at a time: this may run on a small fiber stack */
		struct shim_stack s;
		weft__lock(&shared_lock);
		unsigned n = NSHARED();
		bool more = n > keep;
		if (more) {
			s = shared[--n];
			SET_NSHARED(n);
		}
		weft__unlock(&shared_lock);
		if (!more)
			break;
		shim_stack_free(&s);
		freed = true;
	}
	shim_stack_trim();
	if (freed)
		atomic_fetch_add(&returns, 1);
}

void weft__stack_idle(void)
{
	if (NSHARED() > SHARED_KEEP || shim_stack_trim_due())
		weft__stack_trim(SHARED_KEEP);
}

void weft__stack_reset(void)
{
	weft__stack_trim(0);
	/* The next weft_init may choose another guard (WEFT_GUARD_KB). */
	atomic_store_explicit(&weft__stack_guard, 0, memory_order_relaxed);
}
