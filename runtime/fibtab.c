/* SPDX-License-Identifier: MIT */
/* The fiber table: the weft_fiber_t values that name fibers, and the pool
 * of fiber records behind them.
 *
 * A weft_fiber_t is (generation << SLOT_BITS | slot + 1) in a table of
 * slots: the fiber's one identity (join, cancel, interrupt, messages and
 * the diagnostics all take it). A slot's generation moves on when its
 * fiber is freed, so a stale value (joined twice, detached and finished,
 * never valid) is told apart from a live one and gets -ESRCH instead of
 * reaching another fiber. Generations have 40 bits; a slot whose
 * generation would wrap is retired with its record instead of reused, so
 * no value is ever issued twice. Bit 63 is never set: it marks the pids of
 * step-processes, which share weft_mailbox_send with fibers.
 *
 * Each fiber record owns its slot for good (a free record's handle is
 * WEFT__HANDLE_FREE | slot + 1, which no lookup matches), and records are never returned
 * to malloc while the runtime runs, so a lookup may read one that was just
 * freed: it takes a reference only if the count is not zero and then checks
 * the value again. Free records wait in a cache on the worker that freed
 * them, moved to and from a shared pool BATCH at a time, so a spawn and an
 * exit on a worker take no lock.
 *
 * The table also lists every fiber, held or detached, for shutdown and the
 * diagnostics: they walk the slots the same way (weft__fibers_each).
 *
 * Records are carved from slabs of SLAB_RECS (8 KiB, cache-line aligned,
 * no allocator header per record): a parked fiber's record costs 128
 * bytes and its slot 16. weft_shutdown frees each slab whose records are
 * all free; a slab with a finished fiber whose handle is still held stays,
 * its free records pooled for the next weft_init. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define CHUNK 4096
#define MAX_CHUNKS 1024                 /* 4M fibers at once */
#define BATCH 32                        /* records moved between a worker's cache and the pool */
#define SLOT_BITS WEFT__FIBER_SLOT_BITS /* slot + 1, up to CHUNK * MAX_CHUNKS = 2^22 */
#define SLOT_MASK ((UINT64_C(1) << SLOT_BITS) - 1)
#define GEN_LAST ((UINT64_C(1) << 40) - 1) /* bits 23-62 */
/* A free record's handle: WEFT__HANDLE_FREE | slot + 1, and this bit too
 * once its slot is retired (no generation is left for it). */
#define HANDLE_RETIRED (UINT64_C(1) << 62)

#define SLAB_BYTES 8192
#define SLAB_RECS ((SLAB_BYTES - 64) / sizeof(struct weft__fiber))
struct slab {
	_Alignas(64) struct slab *next; /* newest first: the head is being carved */
	unsigned used;                  /* records carved from it */
	_Alignas(64) struct weft__fiber recs[SLAB_RECS];
};
_Static_assert(sizeof(struct slab) <= SLAB_BYTES, "a slab is 8 KiB");

/* 16 bytes: the generation and the free list share a word. */
struct slot {
	_Atomic(struct weft__fiber *) f; /* the record that owns it, NULL = none */
	uint64_t gen : 40;               /* the generation its next value gets */
	uint64_t next_free : 24;         /* without a record: index + 1 of the next, 0 = none */
};
_Static_assert(CHUNK *MAX_CHUNKS < (1u << 24), "next_free holds a slot index + 1");

static weft__lock_t table_lock = WEFT__LOCK_INIT;
static struct slot *_Atomic chunks[MAX_CHUNKS];
static uint32_t nslots, free_head;       /* table_lock */
static struct weft__fiber *pool;         /* free records, table_lock */
static struct slab *slabs;               /* table_lock */
_Atomic size_t weft__fiber_nrecords;     /* records made and not freed (written under table_lock) */
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
	if (!free_head && nslots % CHUNK == 0 && !slot_at(nslots)) {
		struct slot *c = calloc(CHUNK, sizeof *c);
		if (!c)
			return NULL;
		atomic_store_explicit(&chunks[nslots / CHUNK], c, memory_order_release);
	}
	if (!slabs || slabs->used == SLAB_RECS) {
		struct slab *sl = aligned_alloc(_Alignof(struct slab), sizeof *sl);
		if (!sl)
			return NULL;
		memset(sl, 0, sizeof *sl);
		sl->next = slabs;
		slabs = sl;
	}
	f = &slabs->recs[slabs->used++];
	if (free_head)
		free_head = slot_at(idx)->next_free;
	else
		nslots++;
	atomic_fetch_add_explicit(&weft__fiber_nrecords, 1, memory_order_relaxed);
	atomic_store_explicit(&f->handle, WEFT__HANDLE_FREE | (idx + 1), memory_order_relaxed);
	atomic_store_explicit(&slot_at(idx)->f, f, memory_order_release);
	return f;
}

/* The slot a record owns: its handle says, free or not. */
static uint32_t slot_idx(struct weft__fiber *f)
{
	return (uint32_t)(atomic_load_explicit(&f->handle, memory_order_relaxed) & SLOT_MASK) - 1;
}

struct weft__fiber_cold *weft__fiber_cold(struct weft__fiber *f)
{
	struct weft__fiber_cold *c = weft__cold(f);
	if (c)
		return c;
	/* Zeroed: empty names, no mailbox, no context. The fiber and a
	 * sender may race to make it: one block wins, for good. */
	struct weft__fiber_cold *n = calloc(1, sizeof *n);
	if (!n)
		return NULL;
	if (atomic_compare_exchange_strong(&f->cold, &c, n)) /* seq_cst: mailbox.c */
		return n;
	free(n);
	return c;
}

/* A free record for a spawn on w (NULL: a plain thread), its value set. */
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
	/* Before the park word's new generation is stored (release) at the
	 * spawn: weft_fiber_interrupt relies on that order. */
	uint32_t idx = slot_idx(f);
	atomic_store_explicit(&f->handle, ((uint64_t)slot_at(idx)->gen << SLOT_BITS) | (idx + 1),
			      memory_order_relaxed);
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
 * moves on. After 2^40 fibers the next generation would repeat the first:
 * the slot and its record then stay out of use for good. */
static void record_free(struct weft__fiber *f)
{
	uint32_t idx = slot_idx(f);
	struct slot *s = slot_at(idx);
	/* No value names it now (weft__fiber_peek); it keeps its slot. */
	atomic_store_explicit(&f->handle, WEFT__HANDLE_FREE | (idx + 1), memory_order_relaxed);
	if (s->gen == GEN_LAST) {
		atomic_store_explicit(&f->handle, WEFT__HANDLE_FREE | HANDLE_RETIRED | (idx + 1),
				      memory_order_relaxed);
		return;
	}
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

void weft__fiber_unref_n(struct weft__fiber *f, int n)
{
	if (atomic_fetch_sub_explicit(&f->refs, n, memory_order_acq_rel) == n)
		record_free(f);
}

void weft__fiber_unref(struct weft__fiber *f) { weft__fiber_unref_n(f, 1); }

void weft__fiber_count_spawn(struct weft__worker *w)
{
	if (!w) {
		atomic_fetch_add_explicit(&spawned_outside, 1, memory_order_relaxed);
		return;
	}
	atomic_store_explicit(&w->spawned,
			      atomic_load_explicit(&w->spawned, memory_order_relaxed) + 1,
			      memory_order_relaxed);
}

/* The slot value h names, or NULL (0, a step-process's pid, out of range). */
static struct slot *slot_of(weft_fiber_t h)
{
	uint64_t idx = (h & SLOT_MASK) - 1;
	if ((h & SLOT_MASK) == 0 || idx >= CHUNK * MAX_CHUNKS || (h >> 63))
		return NULL;
	return slot_at((uint32_t)idx);
}

int weft__fiber_lookup(weft_fiber_t h, bool owned, struct weft__fiber **out)
{
	struct slot *s = slot_of(h);
	struct weft__fiber *f = s ? atomic_load_explicit(&s->f, memory_order_acquire) : NULL;
	if (!f)
		return -ESRCH;
	int r = atomic_load_explicit(&f->refs, memory_order_relaxed);
	do {
		if (r == 0)
			return -ESRCH;
	} while (!atomic_compare_exchange_weak_explicit(&f->refs, &r, r + 1, memory_order_acq_rel,
							memory_order_relaxed));
	if (atomic_load_explicit(&f->handle, memory_order_relaxed) != h ||
	    !weft__fiber_named(f, owned)) {
		weft__fiber_unref(f);
		return -ESRCH;
	}
	*out = f;
	return 0;
}

uint64_t weft__fiber_gen_last(void) { return GEN_LAST; }

void weft__fiber_slot_age(weft_fiber_t h, uint64_t gen)
{
	weft__lock(&table_lock);
	struct slot *s = slot_of(h);
	if (s)
		s->gen = gen;
	weft__unlock(&table_lock);
}

void weft__fibers_reset(void)
{
	/* Only after every fiber is gone and every worker's cache drained
	 * (weft_shutdown): a slab whose records are all free is freed, and
	 * their slots wait for new ones. A finished fiber whose handle is
	 * still held keeps its record (its handle stays valid after
	 * shutdown), and so its slab: that slab's free records are the pool
	 * the next weft_init starts with. */
	weft__lock(&table_lock);
	pool = NULL;
	for (struct slab **pp = &slabs, *sl; (sl = *pp);) {
		bool held = false;
		for (unsigned i = 0; i < sl->used && !held; i++)
			held = atomic_load(&sl->recs[i].refs) != 0;
		if (held) {
			for (unsigned i = 0; i < sl->used; i++) {
				struct weft__fiber *f = &sl->recs[i];
				if (atomic_load(&f->refs) == 0 &&
				    !(atomic_load_explicit(&f->handle, memory_order_relaxed) &
				      HANDLE_RETIRED)) {
					f->next = pool;
					pool = f;
				}
			}
			pp = &sl->next;
			continue;
		}
		for (unsigned i = 0; i < sl->used; i++) {
			struct weft__fiber *f = &sl->recs[i];
			uint32_t idx = slot_idx(f);
			struct slot *s = slot_at(idx);
			free(atomic_load_explicit(&f->cold, memory_order_relaxed));
			atomic_fetch_sub_explicit(&weft__fiber_nrecords, 1, memory_order_relaxed);
			atomic_store_explicit(&s->f, NULL, memory_order_relaxed);
			if (s->gen == GEN_LAST)
				continue; /* retired */
			s->next_free = free_head;
			free_head = idx + 1;
		}
		*pp = sl->next;
		free(sl);
	}
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
		if ((atomic_load_explicit(&f->handle, memory_order_relaxed) & SLOT_MASK) == idx + 1)
			fn(f, ctx);
		weft__fiber_unref(f);
	}
}

struct weft__fiber *weft__fiber_peek(weft_fiber_t h)
{
	struct slot *s = slot_of(h);
	struct weft__fiber *f = s ? atomic_load_explicit(&s->f, memory_order_acquire) : NULL;
	if (!f || atomic_load_explicit(&f->handle, memory_order_acquire) != h)
		return NULL;
	return f;
}
