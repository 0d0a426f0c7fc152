/* SPDX-License-Identifier: MIT */
/* Fibers: spawn, join, detach, cancel, exit, and the handles that name them.
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
 * the handle again. A fiber holds one reference for being alive and one for
 * its handle until join or detach. Free records wait in a cache on the
 * worker that freed them, moved to and from a shared pool BATCH at a time,
 * so a spawn and an exit on a worker take no lock; ids come to each worker
 * ID_BATCH at a time.
 *
 * The table also lists every fiber, held or detached, for shutdown: it walks
 * the slots the same way (weft__fibers_each). */
#include <stdlib.h>
#include <string.h>

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
static struct weft__fiber *record_get(struct weft__worker *w)
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
static uint64_t new_id(struct weft__worker *w)
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

/* Find the fiber a held handle names and take a reference, or -ESRCH. */
static int lookup(weft_fiber_t h, struct weft__fiber **out)
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

int weft__fiber_lookup(weft_fiber_t h, struct weft__fiber **out)
{
	return lookup(h, out);
}

static _Noreturn void finish(struct weft__fiber *self, void *result)
{
	/* Fiber context: its exit status, then what may still block: local
	 * storage destructors, a generator's end, the supervisor report. */
	self->ending = 1;
	self->status = weft__exit_status(self);
	weft__fls_exit(self);
	weft__gen_exit(self, result);
	uint64_t pid = self->supervisor ? weft_pid_self() : 0;
	weft__mbox_exit(self); /* processes: sends fail (-ESRCH) from here on */
	weft__supervise_exit(self, pid, result, self->status);
	weft__future_settle(&self->done, FS_RESOLVED, result, 0);
	if (self->flags & FF_SERVICE)
		atomic_fetch_sub(&weft__rt.services, 1);
	else
		weft__live_dec(weft__worker_self());
	weft__switch_out(self, ACT_EXIT);
	__builtin_unreachable();
}

static void fiber_main(void *arg)
{
	struct weft__fiber *self = arg;
	weft__ctx_entered(&self->ctx);
	weft__finish_switch(weft__worker_self());
	finish(self, self->fn(self->arg));
}

static int spawn(weft_fiber_t *out, const weft_attr_t *attr, weft_fn fn, void *arg,
		 const char *file, int line, unsigned flags);
static int release_handle(struct weft__fiber *f);

int weft_fiber_spawn_at(weft_fiber_t *out, const weft_attr_t *attr, weft_fn fn, void *arg,
			const char *file, int line)
{
	return spawn(out, attr, fn, arg, file, line, 0);
}

int weft__spawn_service(weft_fiber_t *out, const char *name, weft_fn fn, void *arg)
{
	weft_attr_t a = {.name = name};
	return spawn(out, &a, fn, arg, __FILE__, __LINE__, FF_SERVICE);
}

static int spawn(weft_fiber_t *out, const weft_attr_t *attr, weft_fn fn, void *arg,
		 const char *file, int line, unsigned flags)
{
	if (!fn)
		return -EINVAL;
	if (!atomic_load(&weft__rt.running))
		return -ESRCH;
	size_t size = weft__rt.stack_size;
	if (attr && attr->stack_size) {
		if (attr->stack_size < 4096 || attr->stack_size > ((size_t)1 << 30))
			return -EINVAL;
		size = shim_stack_round(attr->stack_size);
	}
	/* Fiber context: the local-storage mode and the supervisor channel. */
	unsigned fls_mode = attr ? attr->fls : WEFT_FLS_EMPTY;
	weft_chan_t *sup = attr ? attr->supervisor : NULL;
	unsigned aflags = attr ? attr->flags : 0;
	if (fls_mode > WEFT_FLS_COPY || (aflags & ~(unsigned)WEFT_ATTR_FPENV) ||
	    (sup && weft__chan_elem_size(sup) != sizeof(weft_exit_t)))
		return -EINVAL;

	struct weft__worker *w = weft__worker_self();
	struct weft__fls *fls;
	int err = weft__fls_inherit(w ? w->cur : NULL, fls_mode, &fls);
	if (err)
		return err;
	struct shim_stack stack;
	err = weft__stack_get(w, size, &stack);
	if (err) {
		weft__fls_drop(fls);
		return err;
	}
	struct weft__fiber *f = record_get(w);
	if (!f) {
		weft__stack_put(w, &stack);
		weft__fls_drop(fls);
		return -ENOMEM;
	}

	/* A pooled struct keeps its park generation, so no wake meant for its
	 * previous life can match a park of this one. */
	uint64_t pw = atomic_load_explicit(&f->park, memory_order_relaxed);
	atomic_store_explicit(&f->park, PW_MAKE(PW_GEN(pw) + 1, 0, PS_RUNNING),
			      memory_order_relaxed);
	f->flags = flags;
	f->next = NULL;
	f->timer_slot = 0;
	f->cancel_hold = 0;
	atomic_store_explicit(&f->mbox, NULL, memory_order_relaxed); /* processes: none yet */
	f->fls = fls; /* fiber context (fls.c, generator.c, supervise.c) */
	f->gen = NULL;
	f->supervisor = sup;
	f->status = 0;
	f->status_set = 0;
	f->ending = 0;
	atomic_store_explicit(&f->cancelled, 0, memory_order_relaxed);
	atomic_store_explicit(&f->joining, 0, memory_order_relaxed);
	memset(f->name, 0, sizeof f->name);
	memset(f->parent_name, 0, sizeof f->parent_name);
	f->parent_id = 0;
	f->id = new_id(w);
	f->fn = fn;
	f->arg = arg;
	f->stack = stack;
	f->file = file;
	f->line = line;
	if (attr && attr->name)
		strncpy(f->name, attr->name, WEFT_NAME_MAX - 1);
	struct weft__fiber *parent = w ? w->cur : NULL;
	if (parent) {
		f->parent_id = parent->id;
		memcpy(f->parent_name, parent->name, WEFT_NAME_MAX);
	}
	weft__future_init(&f->done);
	/* A supervised fiber gets its pid now, so that its report can never
	 * lack one: held for weft_fiber_pid, and let go of if out is NULL. */
	/* The stores above are relaxed (a locked instruction each would cost
	 * more than the rest of spawn): this seq_cst store of refs publishes
	 * them to anyone who finds the record through the handle table, which
	 * takes its reference with a CAS on refs. */
	atomic_store_explicit(&f->handle_held, out || sup ? 1 : 0, memory_order_relaxed);
	atomic_store(&f->refs, out || sup ? 2 : 1);
	if (sup) {
		weft_pid_t pid;
		err = weft_fiber_pid(f->handle, &pid);
		if (err) {
			atomic_store(&f->handle_held, 0);
			weft__fiber_unref(f);
			weft__fiber_unref(f);
			weft__stack_put(w, &stack);
			weft__fls_drop(fls);
			return err;
		}
		if (!out)
			release_handle(f);
	}
	/* Spawned while shutdown cancels everything: start with the request.
	 * The sweep sets draining before it walks the table, and this looks
	 * after the fiber became visible to it (refs above, both seq_cst), so
	 * the fiber is seen by one or both; two requests merge. */
	if (!(flags & FF_SERVICE) && atomic_load(&weft__rt.draining))
		weft__cancel_request(f);
	if (aflags & WEFT_ATTR_FPENV) {
		f->flags |= FF_FPENV;
		arch_fpenv_save(&f->ctx.fpenv); /* the spawner's, to start from */
	}
	f->ctx.sp = NULL; /* its frame is made when it first runs */
	if (out)
		*out = f->handle;
	if (flags & FF_SERVICE)
		atomic_fetch_add(&weft__rt.services, 1);
	else
		weft__live_inc(w);
	weft__ready(f);
	return 0;
}

void weft__fiber_start(struct weft__worker *w, struct weft__fiber *f)
{
	/* The stack taken at spawn (where running out can still be told to
	 * the caller) is traded for the one this worker freed last, likely
	 * still in the CPU's cache: a stream of short fibers runs on one
	 * stack, and a stack taken but not yet run is never touched. */
	weft__stack_swap(w, &f->stack);
	weft__ctx_create(&f->ctx, f->stack.base, f->stack.size);
	f->ctx.fp_own = f->flags & FF_FPENV;
	f->ctx.sp = arch_frame_init((char *)f->stack.base + f->stack.size, fiber_main, f);
}

/* Called on the next context once the exited fiber is off its stack. */
void weft__fiber_release_stack(struct weft__worker *w, struct weft__fiber *f)
{
	weft__ctx_destroy(&f->ctx);
	weft__stack_put(w, &f->stack);
	weft__fiber_unref(f);
}

/* Give up the handle's reference, once. */
static int release_handle(struct weft__fiber *f)
{
	int held = 1;
	if (!atomic_compare_exchange_strong(&f->handle_held, &held, 0))
		return -ESRCH;
	weft__fiber_unref(f);
	return 0;
}

/* join and detach both hold the joining flag while they work, so they
 * cannot both use the handle: the loser gets -EBUSY. */
static bool claim(struct weft__fiber *f)
{
	int zero = 0;
	return atomic_compare_exchange_strong(&f->joining, &zero, 1);
}

int weft_fiber_join(weft_fiber_t h, int64_t deadline, void **result)
{
	return weft_fiber_join_status(h, deadline, result, NULL);
}

int weft_fiber_join_status(weft_fiber_t h, int64_t deadline, void **result, int *status)
{
	struct weft__fiber *f;
	int err = lookup(h, &f);
	if (err)
		return err;
	struct weft__worker *w = weft__worker_self();
	if (w && w->cur == f) {
		weft__fiber_unref(f);
		return -EDEADLK;
	}
	if (!claim(f)) {
		weft__fiber_unref(f);
		return -EBUSY;
	}
	void *value = NULL;
	err = weft__future_wait_why(&f->done, deadline, &value, "join");
	int st = 0;
	if (err == 0) {
		st = f->status; /* written before done settled */
		err = release_handle(f);
	}
	if (err == 0 && result)
		*result = value;
	if (err == 0 && status)
		*status = st;
	atomic_store(&f->joining, 0);
	weft__fiber_unref(f);
	return err;
}

int weft_fiber_detach(weft_fiber_t h)
{
	struct weft__fiber *f;
	int err = lookup(h, &f);
	if (err)
		return err;
	struct weft__worker *w = weft__worker_self();
	if (w && w->cur == f) {
		err = -EPERM; /* the handle belongs to whoever spawned it */
	} else if (!claim(f)) {
		err = -EBUSY;
	} else {
		err = release_handle(f);
		atomic_store(&f->joining, 0);
	}
	weft__fiber_unref(f);
	return err;
}

int weft_fiber_cancel(weft_fiber_t h)
{
	struct weft__fiber *f;
	int err = lookup(h, &f);
	if (err)
		return err;
	if (atomic_load(&f->done.state) != FS_PENDING)
		err = -EALREADY;
	else
		weft__cancel_request(f);
	weft__fiber_unref(f);
	return err;
}

int weft_fiber_exit(void *result)
{
	struct weft__worker *w = weft__worker_self();
	if (!w || !w->cur)
		return -EPERM;
	if (w->cur->ending)
		return -EALREADY; /* a destructor run by its own exit */
	finish(w->cur, result);
}

int weft_fiber_fail(int err)
{
	struct weft__worker *w = weft__worker_self();
	if (!w || !w->cur)
		return -EPERM;
	if (err >= 0)
		return -EINVAL;
	if (w->cur->ending)
		return -EALREADY;
	w->cur->status = err;
	w->cur->status_set = 1;
	finish(w->cur, NULL);
}

weft_fiber_t weft_fiber_self(void)
{
	struct weft__worker *w = weft__worker_self();
	return w && w->cur ? w->cur->handle : 0;
}

uint64_t weft_fiber_id(void)
{
	struct weft__worker *w = weft__worker_self();
	return w && w->cur ? w->cur->id : 0;
}

const char *weft_fiber_name(void)
{
	struct weft__worker *w = weft__worker_self();
	return w && w->cur ? w->cur->name : NULL;
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
		/* As lookup(): a reference only while the count is not zero,
		 * then make sure the record still belongs to this slot. */
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
