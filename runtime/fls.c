/* SPDX-License-Identifier: MIT */
/* Fiber-local storage: a table of values per fiber, shared with a child
 * (WEFT_FLS_SHARE) or handed to it as a copy-on-write view (WEFT_FLS_COPY).
 *
 * Three reference-counted layers make both kinds of inheritance cheap:
 *   table  what a fiber points at; SHARE gives the child the same table, so
 *          a set by either is seen by both. Its lock guards its vals pointer.
 *   vals   the array of cells a table shows. COPY gives the child a new
 *          table over the same vals. A vals held by more than one table is
 *          never written: a set copies it first (the copy takes a reference
 *          on each cell), so neither side sees the other's later sets.
 *   cell   one value of one key. Copies share cells, so a value set once is
 *          one cell however many tables show it, and its destructor runs
 *          once, when the last vals holding the cell lets it go.
 * Destructors run outside every lock, on whoever dropped the last
 * reference: they may block. A vals only ever grows to the highest key set
 * in it, so a fiber using key 1 costs a table and a one-cell array. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct cell {
	_Atomic int refs;
	unsigned key;
	void *value;
};

struct vals {
	_Atomic int refs;
	unsigned n; /* cells in c[] */
	struct cell *c[];
};

struct weft__fls {
	_Atomic int refs;
	weft__lock_t lock;
	struct vals *vals; /* NULL: nothing set yet */
};

static _Atomic(void (*)(void *)) dtors[WEFT_FLS_KEYS];
static _Atomic unsigned nkeys;

int weft_fls_key_create(weft_fls_key_t *key, void (*dtor)(void *value))
{
	if (!key)
		return -EINVAL;
	unsigned k = atomic_load(&nkeys);
	do {
		if (k >= WEFT_FLS_KEYS)
			return -EAGAIN;
	} while (!atomic_compare_exchange_weak(&nkeys, &k, k + 1));
	atomic_store(&dtors[k], dtor);
	*key = k + 1;
	return 0;
}

static void cell_unref(struct cell *c)
{
	if (atomic_fetch_sub_explicit(&c->refs, 1, memory_order_acq_rel) != 1)
		return;
	void (*dtor)(void *) = atomic_load(&dtors[c->key - 1]);
	void *v = c->value;
	free(c);
	if (dtor)
		dtor(v);
}

static void vals_unref(struct vals *v)
{
	if (!v || atomic_fetch_sub_explicit(&v->refs, 1, memory_order_acq_rel) != 1)
		return;
	for (unsigned i = 0; i < v->n; i++)
		if (v->c[i])
			cell_unref(v->c[i]);
	free(v);
}

void weft__fls_drop(struct weft__fls *t)
{
	if (!t || atomic_fetch_sub_explicit(&t->refs, 1, memory_order_acq_rel) != 1)
		return;
	vals_unref(t->vals);
	free(t);
}

static struct weft__fls *table_new(struct vals *v)
{
	struct weft__fls *t = malloc(sizeof *t);
	if (!t)
		return NULL;
	atomic_store_explicit(&t->refs, 1, memory_order_relaxed);
	t->lock = (weft__lock_t)WEFT__LOCK_INIT;
	t->vals = v;
	return t;
}

/* A private copy of v (NULL: none) with room for at least n cells. */
static struct vals *vals_copy(const struct vals *v, unsigned n)
{
	unsigned have = v ? v->n : 0;
	if (n < have)
		n = have;
	struct vals *c = malloc(sizeof *c + n * sizeof c->c[0]);
	if (!c)
		return NULL;
	atomic_store_explicit(&c->refs, 1, memory_order_relaxed);
	c->n = n;
	for (unsigned i = 0; i < n; i++) {
		c->c[i] = i < have ? v->c[i] : NULL;
		if (c->c[i])
			atomic_fetch_add_explicit(&c->c[i]->refs, 1, memory_order_relaxed);
	}
	return c;
}

/* f is in its exit path (only f itself asks). */
static bool ending(struct weft__fiber *f)
{
	return atomic_load_explicit(&f->life, memory_order_relaxed) & FL_ENDING;
}

int weft__fls_inherit(struct weft__fiber *parent, unsigned mode, struct weft__fls **out)
{
	*out = NULL;
	/* A plain thread has no table; a fiber in its exit path has let go of
	 * its own (a spawn from a destructor starts empty). */
	if (mode == WEFT_FLS_EMPTY || !parent || ending(parent))
		return 0;
	struct weft__fiber_cold *pc = weft__cold(parent);
	struct weft__fls *t = pc ? pc->fls : NULL;
	if (mode == WEFT_FLS_SHARE) {
		/* Both must see the same table from now on, so the parent gets
		 * one if it has none. */
		if (!t && (!(pc = weft__fiber_cold(parent)) || !(t = pc->fls = table_new(NULL))))
			return -ENOMEM;
		atomic_fetch_add_explicit(&t->refs, 1, memory_order_relaxed);
		*out = t;
		return 0;
	}
	if (!t)
		return 0;
	struct weft__fls *c = table_new(NULL);
	if (!c)
		return -ENOMEM;
	weft__lock(&t->lock);
	if ((c->vals = t->vals))
		atomic_fetch_add_explicit(&c->vals->refs, 1, memory_order_relaxed);
	weft__unlock(&t->lock);
	*out = c;
	return 0;
}

void weft__fls_exit(struct weft__fiber *self)
{
	struct weft__fiber_cold *c = weft__cold(self);
	struct weft__fls *t = c->fls;
	c->fls = NULL;
	weft__fls_drop(t);
}

static struct weft__fiber *self_fiber(void)
{
	struct weft__worker *w = weft__worker_self();
	return w ? w->cur : NULL;
}

void *weft_fls_get(weft_fls_key_t key)
{
	struct weft__fiber *self = self_fiber();
	struct weft__fiber_cold *c = self ? weft__cold(self) : NULL;
	struct weft__fls *t = c ? c->fls : NULL;
	if (!t || key == 0 || key > WEFT_FLS_KEYS)
		return NULL;
	void *value = NULL;
	weft__lock(&t->lock);
	struct vals *v = t->vals;
	if (v && key <= v->n && v->c[key - 1])
		value = v->c[key - 1]->value;
	weft__unlock(&t->lock);
	return value;
}

int weft_fls_set(weft_fls_key_t key, void *value)
{
	if (key == 0 || key > atomic_load(&nkeys))
		return -EINVAL;
	struct weft__fiber *self = self_fiber();
	if (!self || ending(self))
		return -EPERM;
	struct weft__fiber_cold *c = weft__cold(self);
	if (!c || !c->fls) {
		if (!value)
			return 0;
		if (!(c = weft__fiber_cold(self)) || !(c->fls = table_new(NULL)))
			return -ENOMEM;
	}
	struct weft__fls *t = c->fls;
	struct cell *nc = NULL;
	if (value) {
		if (!(nc = malloc(sizeof *nc)))
			return -ENOMEM;
		atomic_store_explicit(&nc->refs, 1, memory_order_relaxed);
		nc->key = key;
		nc->value = value;
	}

	weft__lock(&t->lock);
	struct vals *v = t->vals, *old_vals = NULL;
	struct cell *cur = v && key <= v->n ? v->c[key - 1] : NULL;
	if ((cur ? cur->value : NULL) == value) {
		weft__unlock(&t->lock);
		free(nc);
		return 0;
	}
	/* Only the one table holding v may write it in place; a vals shared
	 * with another table is copied first. Its count cannot rise under us:
	 * only tables holding it copy it, and then it is already above 1. */
	if (!v || key > v->n || atomic_load_explicit(&v->refs, memory_order_acquire) > 1) {
		struct vals *c = vals_copy(v, key);
		if (!c) {
			weft__unlock(&t->lock);
			free(nc);
			return -ENOMEM;
		}
		old_vals = v;
		t->vals = v = c;
	}
	v->c[key - 1] = nc;
	weft__unlock(&t->lock);
	/* Destructors run outside the lock: they may block. */
	if (cur)
		cell_unref(cur);
	vals_unref(old_vals);
	return 0;
}
