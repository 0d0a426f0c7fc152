/* SPDX-License-Identifier: MIT */
/* The fiber handle table and the pool of fiber records behind it.
 *
 * A handle is (generation << 32 | slot + 1) in a table of slots; a slot's
 * generation moves on when its fiber is freed, so a stale handle (joined
 * twice, detached, never valid) is told apart from a live one and gets
 * -ESRCH instead of reaching another fiber. A slot whose generation would
 * wrap is retired with its record instead of reused, so no handle is ever
 * issued twice.
 *
 * Each fiber record owns its slot for good, and records are never returned
 * to malloc while the runtime runs, so a lookup may read one that was just
 * freed: it takes a reference only if the count is not zero and then checks
 * the handle again. Free records wait in a cache on the worker that freed
 * them, moved to and from a shared pool BATCH at a time, so a spawn and an
 * exit on a worker take no lock; ids come to each worker ID_BATCH at a time.
 *
 * The table also lists every fiber, held or detached, for shutdown and the
 * diagnostics: they walk the slots the same way (weft__fibers_each). */
#include <stdlib.h>

#include "internal.h"

#define CHUNK 4096
#define MAX_CHUNKS 1024 /* 4M fibers at once */
#define BATCH 32        /* records moved between a worker's cache and the pool */
#define ID_BATCH 256

struct slot {
	_Atomic(struct weft__fiber *) f; /* the record that owns it, NULL = none */
	uint32_t gen;       /* the generation its next handle gets */
	uint32_t next_free; /* without a record: index + 1 of the next, 0 = none */
};

static weft__lock_t table_lock = WEFT__LOCK_INIT;
static struct slot *_Atomic chunks[MAX_CHUNKS];
static uint32_t nslots, free_head; /* table_lock */
static struct weft__fiber *pool;   /* free records, table_lock */
static _Atomic uint64_t next_id = 1;
static _Atomic uint64_t spawned_outside; /* by plain threads, and by workers gone */

static struct slot *slot_at(uint32_t idx)
{
	struct slot *c = atomic_load_explicit(&chunks[idx / CHUNK], memory_order_acquire);
	return c ? &c[idx % CHUNK] : NULL;
}

/* A free record from the shared pool, or a new one with a slot of its own.
 * Table lock held. */
static struct weft__fiber *pool_take(void)
{
	struct weft__fiber *f = pool;
	if (f) {
		pool = f->next;
		return f;
	}
	uint32_t idx;
	if (free_head) {
		idx = free_head - 1;
	} else {
		if (nslots == CHUNK * MAX_CHUNKS)
			return NULL;
		idx = nslots;
	}
	if (!(f = calloc(1, sizeof *f)))
		return NULL;
	if (!free_head && nslots % CHUNK == 0) {
		struct slot *c = calloc(CHUNK, sizeof *c);
		if (!c) {
			free(f);
			return NULL;
		}
		atomic_store_explicit(&chunks[nslots / CHUNK], c, memory_order_release);
	}
	if (free_head)
		free_head = slot_at(idx)->next_free;
	else
		nslots++;
	f->slot = idx;
	atomic_store_explicit(&slot_at(idx)->f, f, memory_order_release);
	return f;
}

/* A free record for a spawn on w (NULL: a plain thread), its handle set. */
struct weft__fiber *weft__fiber_record_get(struct weft__worker *w)
{
	struct weft__fiber *f;
	if (w && (f = w->fpool)) {
		w->fpool = f->next;
		w->nfpool--;
	} else {
		weft__lock(&table_lock);
		f = pool_take();
		/* Refill the cache from what is pooled already. */
		while (f && w && pool && w->nfpool < BATCH) {
			struct weft__fiber *g = pool;
			pool = g->next;
			g->next = w->fpool;
			w->fpool = g;
			w->nfpool++;
		}
		weft__unlock(&table_lock);
		if (!f)
			return NULL;
	}
	f->handle = ((uint64_t)slot_at(f->slot)->gen << 32) | (f->slot + 1);
	return f;
}

/* Give up to n records of w's cache back to the pool. */
static void cache_give(struct weft__worker *w, unsigned n)
{
	weft__lock(&table_lock);
	while (n-- && w->fpool) {
		struct weft__fiber *f = w->fpool;
		w->fpool = f->next;
		w->nfpool--;
		f->next = pool;
		pool = f;
	}
	weft__unlock(&table_lock);
}

void weft__fiber_cache_drain(struct weft__worker *w)
{
	cache_give(w, UINT32_MAX);
	/* weft_stats counts spawns since the process started. */
	atomic_fetch_add(&spawned_outside, atomic_exchange(&w->spawned, 0));
}

/* The last reference is gone: the record is free, its slot's generation
 * moves on. After 2^32 fibers the next generation would repeat the first:
 * the slot and its record then stay out of use for good. */
static void record_free(struct weft__fiber *f)
{
	struct slot *s = slot_at(f->slot);
	f->handle = 0;
	f->id = 0; /* weft__fiber_peek looks for live ids only */
	if (s->gen == UINT32_MAX)
		return;
	s->gen++;
	struct weft__worker *w = weft__worker_self();
	if (w) {
		f->next = w->fpool;
		w->fpool = f;
		if (++w->nfpool >= 2 * BATCH)
			cache_give(w, BATCH);
		return;
	}
	weft__lock(&table_lock);
	f->next = pool;
	pool = f;
	weft__unlock(&table_lock);
}

void weft__fiber_unref(struct weft__fiber *f)
{
	if (atomic_fetch_sub_explicit(&f->refs, 1, memory_order_acq_rel) == 1)
		record_free(f);
}

/* A new fiber id: unique, from w's batch (or one at a time for a plain
 * thread). */
uint64_t weft__fiber_new_id(struct weft__worker *w)
{
	if (!w) {
		atomic_fetch_add_explicit(&spawned_outside, 1, memory_order_relaxed);
		return atomic_fetch_add(&next_id, 1);
	}
	atomic_store_explicit(&w->spawned,
			      atomic_load_explicit(&w->spawned, memory_order_relaxed) + 1,
			      memory_order_relaxed);
	if (w->id_next == w->id_end) {
		w->id_next = atomic_fetch_add(&next_id, ID_BATCH);
		w->id_end = w->id_next + ID_BATCH;
	}
	return w->id_next++;
}

int weft__fiber_lookup(weft_fiber_t h, struct weft__fiber **out)
{
	uint32_t idx = (uint32_t)h - 1;
	if ((uint32_t)h == 0 || idx >= CHUNK * MAX_CHUNKS)
		return -ESRCH;
	struct slot *s = slot_at(idx);
	struct weft__fiber *f = s ? atomic_load_explicit(&s->f, memory_order_acquire) : NULL;
	if (!f)
		return -ESRCH;
	int r = atomic_load_explicit(&f->refs, memory_order_relaxed);
	do {
		if (r == 0)
			return -ESRCH;
	} while (!atomic_compare_exchange_weak_explicit(&f->refs, &r, r + 1, memory_order_acq_rel,
							memory_order_relaxed));
	if (f->handle != h || !atomic_load(&f->handle_held)) {
		weft__fiber_unref(f);
		return -ESRCH;
	}
	*out = f;
	return 0;
}

void weft__fiber_slot_age(weft_fiber_t h, uint32_t gen)
{
	weft__lock(&table_lock);
	struct slot *s = slot_at((uint32_t)h - 1);
	if (s)
		s->gen = gen;
	weft__unlock(&table_lock);
}

void weft__fibers_reset(void)
{
	/* Only after every fiber is gone and every worker's cache drained
	 * (weft_shutdown): each free record is freed through its slot, which
	 * waits for a new one. A finished fiber whose handle is still held
	 * keeps its record (its handle stays valid after shutdown). */
	weft__lock(&table_lock);
	for (uint32_t idx = 0; idx < nslots; idx++) {
		struct slot *s = slot_at(idx);
		struct weft__fiber *f = atomic_load_explicit(&s->f, memory_order_relaxed);
		if (!f || atomic_load(&f->refs) != 0)
			continue;
		free(f);
		atomic_store_explicit(&s->f, NULL, memory_order_relaxed);
		if (s->gen == UINT32_MAX)
			continue; /* retired */
		s->next_free = free_head;
		free_head = idx + 1;
	}
	pool = NULL;
	weft__unlock(&table_lock);
}

uint64_t weft__fibers_spawned(void)
{
	uint64_t n = atomic_load_explicit(&spawned_outside, memory_order_relaxed);
	for (unsigned i = 0; i < weft__rt.nworkers; i++)
		n += atomic_load_explicit(&weft__rt.workers[i].spawned, memory_order_relaxed);
	return n;
}

void weft__fibers_each(void (*fn)(struct weft__fiber *f, void *ctx), void *ctx)
{
	weft__lock(&table_lock);
	uint32_t n = nslots;
	weft__unlock(&table_lock);
	for (uint32_t idx = 0; idx < n; idx++) {
		struct slot *s = slot_at(idx);
		struct weft__fiber *f = s ? atomic_load(&s->f) : NULL;
		if (!f)
			continue;
		/* As weft__fiber_lookup: a reference only while the count
		 * is not zero, then make sure the record still belongs to this
		 * slot. */
		int r = atomic_load(&f->refs);
		do {
			if (r == 0)
				break;
		} while (!atomic_compare_exchange_weak(&f->refs, &r, r + 1));
		if (r == 0)
			continue;
		if ((uint32_t)f->handle == idx + 1)
			fn(f, ctx);
		weft__fiber_unref(f);
	}
}

struct weft__fiber *weft__fiber_peek(uint64_t id)
{
	for (uint32_t c = 0; c < MAX_CHUNKS; c++) {
		struct slot *chunk = atomic_load_explicit(&chunks[c], memory_order_acquire);
		if (!chunk)
			break; /* chunks are filled in order */
		for (uint32_t i = 0; i < CHUNK; i++) {
			struct weft__fiber *f =
				atomic_load_explicit(&chunk[i].f, memory_order_acquire);
			if (f && f->id == id)
				return f;
		}
	}
	return NULL;
}
