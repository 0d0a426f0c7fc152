/* SPDX-License-Identifier: MIT */
/* Fibers: spawn, join, detach, exit. The handles that name them and the
 * records they live in are fibtab.c's; cancelling them is cancel.c's. A fiber holds one reference to
 * its record for being alive and one for its handle until join or detach. */
#include <string.h>

#include "internal.h"

static _Noreturn void finish(struct weft__fiber *self, void *result)
{
	/* The fiber context's hooks (hooks.c): its exit status, then what
	 * may still block: local storage destructors, a generator's end, the
	 * mailbox, the supervisor report. */
	weft__rt.hooks->exit(self, result);
	/* A service fiber leaves the count before its joiner can return: the
	 * network stack joins its own in weft_net_fini, and weft_shutdown,
	 * called next, must not find it still counted (-EBUSY). The others
	 * leave after, so that weft_run returns once every join would. */
	if (self->flags & FF_SERVICE)
		atomic_fetch_sub(&weft__rt.services, 1);
	if (self->flags & FF_HIGH)
		atomic_fetch_sub_explicit(&weft__rt.high_alive, 1, memory_order_relaxed);
	weft__future_settle(&self->done, FS_RESOLVED, result, 0);
	if (!(self->flags & FF_SERVICE))
		weft__live_dec(weft__worker_self());
	weft__switch_out(self, ACT_EXIT);
	__builtin_unreachable();
}

void weft__fiber_main(void *arg)
{
	struct weft__fiber *self = arg;
	weft__ctx_entered(&self->ctx);
	weft__finish_switch(weft__worker_self());
	finish(self, self->fn(self->arg));
}

static int spawn(weft_fiber_t *out, const weft_attr_t *attr, weft_fn fn, void *arg,
		 const char *file, int line, unsigned flags);
int weft_fiber_spawn_site(weft_fiber_t *out, const weft_attr_t *attr, weft_fn fn, void *arg,
			  const char *file, int line)
{
	return spawn(out, attr, fn, arg, file, line, 0);
}

int weft__spawn_cold(weft_fiber_t *out, const weft_attr_t *attr, weft_fn fn, void *arg,
		     const char *file, int line)
{
	return spawn(out, attr, fn, arg, file, line, FF_COLD);
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
	/* The fiber context's hooks (hooks.c): the local-storage mode and
	 * the supervisor channel. */
	const struct weft__hooks *hk = weft__rt.hooks;
	unsigned fls_mode = attr ? attr->fls : WEFT_FLS_EMPTY;
	weft_chan_t *sup = attr ? attr->supervisor : NULL;
	unsigned aflags = attr ? attr->flags : 0;
	if (fls_mode > WEFT_FLS_COPY ||
	    (aflags & ~(unsigned)(WEFT_ATTR_FPENV | WEFT_ATTR_PIN | WEFT_ATTR_HIGH)) ||
	    (sup && hk->check_supervisor(sup)))
		return -EINVAL;

	struct weft__worker *w = weft__worker_self();
	struct weft__fiber *parent = w ? w->cur : NULL;
	struct weft__fls *fls = NULL;
	int err = fls_mode == WEFT_FLS_EMPTY ? 0 : hk->fls_inherit(parent, fls_mode, &fls);
	if (err)
		return err;
	/* A stack of the default size is taken when the fiber first runs
	 * (stack.c): here only the worker's cache is made sure of, so that a
	 * spawn is refused with -ENOMEM when the pools are empty and the
	 * shim has none either. Another size is the fiber's from now on. */
	bool lazy = size == weft__rt.stack_size;
	struct shim_stack stack = {0};
	err = lazy ? weft__stack_admit(w) : weft__stack_get(w, size, &stack);
	if (err) {
		if (fls)
			hk->fls_drop(fls);
		return err;
	}
	struct weft__fiber *f = weft__fiber_record_get(w);
	if (!f)
		goto no_memory;
	/* Every record has room in the timer heap before its fiber can park,
	 * so that arming a deadline never allocates (timer.c). */
	if (weft__timer_reserve(atomic_load_explicit(&weft__fiber_nrecords, memory_order_relaxed)))
		goto no_record;
	/* What most fibers never use is in the record's cold block (made
	 * here when this fiber needs one, kept from an earlier life if the
	 * record has one): an unnamed spawn by an unnamed spawner, with
	 * nothing else of the block's, allocates nothing. */
	struct weft__fiber_cold *pc = parent ? weft__cold(parent) : NULL;
	const char *pname = pc ? pc->name : "";
	bool needs_cold = (attr && (attr->name || (aflags & WEFT_ATTR_FPENV))) || fls || sup ||
			  (flags & FF_COLD) || *pname || !lazy;
	struct weft__fiber_cold *c = weft__cold(f);
	if (!c && needs_cold && !(c = weft__fiber_cold(f)))
		goto no_record;

	/* A pooled struct keeps its park generation, so no wake meant for its
	 * previous life can match a park of this one; and a
	 * weft_fiber_interrupt for that life, which saw the old park word,
	 * cannot match it either: release, after the record's new handle. */
	uint64_t pw = atomic_load_explicit(&f->park, memory_order_relaxed);
	atomic_store_explicit(&f->park, PW_MAKE(PW_GEN(pw) + 1, 0, PS_RUNNING),
			      memory_order_release);
	f->flags = (uint8_t)((flags & ~FF_COLD) | (aflags & (WEFT_ATTR_HIGH | WEFT_ATTR_FPENV)) |
			     (lazy ? 0 : FF_STACK));
	/* WEFT_ATTR_PIN: the spawner's worker, worker 0 from a plain thread */
	uint32_t pin = (aflags & WEFT_ATTR_PIN) ? (uint32_t)(w && w->cur ? w->index : 0) + 1 : 0;
	atomic_store_explicit(&f->life, (out ? FL_HELD : 0) | (pin << FL_PIN_SHIFT),
			      memory_order_relaxed);
	f->next = NULL;
	f->timer_slot = 0;
	f->cancel_hold = 0;
	f->status = WEFT__STATUS_UNSET;
	weft__fiber_count_spawn(w);
	f->fn = fn;
	f->arg = arg;
	__atomic_store_n(&f->stack, NULL, __ATOMIC_RELAXED); /* at its first run (stack.c) */
	f->file = file;
	f->line = line;
	f->parent = parent ? parent->handle : 0;
	if (c) {
		/* strings: the rest is never read */
		c->name[0] = 0;
		if (attr && attr->name) {
			strncpy(c->name, attr->name, WEFT_NAME_MAX - 1);
			c->name[WEFT_NAME_MAX - 1] = 0;
		}
		weft__name_copy(c->parent_name, pname);
		/* processes: no mailbox yet */
		atomic_store_explicit(&c->mbox, NULL, memory_order_relaxed);
		c->fls = fls; /* fiber context (fls.c, generator.c, supervise.c) */
		c->gen = NULL;
		c->supervisor = sup;
		c->step_runner = NULL;
		if (!lazy)
			c->stack = stack;
		if (aflags & WEFT_ATTR_FPENV)
			arch_fpenv_save(&c->fpenv); /* the spawner's, to start from */
	}
	weft__future_init(&f->done);
	f->ctx.sp = NULL; /* its frame is made when it first runs */
	/* The stores above are relaxed (a locked instruction each would cost
	 * more than the rest of spawn): this seq_cst store of refs publishes
	 * them to anyone who finds the record through the handle table, which
	 * takes its reference with a CAS on refs. */
	atomic_store(&f->refs, out ? 2 : 1);
	/* Spawned while shutdown cancels everything: start with the request.
	 * The sweep sets draining before it walks the table, and this looks
	 * after the fiber became visible to it (refs above, both seq_cst), so
	 * the fiber is seen by one or both; two requests merge. */
	if (!(flags & FF_SERVICE) && atomic_load(&weft__rt.draining))
		weft__cancel_request(f);
	if (out)
		*out = f->handle;
	if (flags & FF_SERVICE)
		atomic_fetch_add(&weft__rt.services, 1);
	else
		weft__live_inc(w);
	if (f->flags & FF_HIGH) /* before it is queued: find_work looks then */
		atomic_fetch_add_explicit(&weft__rt.high_alive, 1, memory_order_relaxed);
	if (f->flags & FF_FPENV) /* before it is queued: its first switch looks */
		atomic_fetch_add_explicit(&weft__rt.fp_alive, 1, memory_order_relaxed);
	/* Into the spawner's next-run slot, as Go's newproc does: a spawner
	 * that joins or waits next runs it here, and the fiber it displaces
	 * goes to the deque, where an idle worker is woken for it. */
	weft__ready_next(f);
	return 0;

no_record:
	atomic_store_explicit(&f->refs, 1, memory_order_relaxed);
	weft__fiber_unref(f); /* back to the pool */
no_memory:
	if (!lazy)
		weft__stack_put(w, &stack);
	if (fls)
		hk->fls_drop(fls);
	return -ENOMEM;
}

/* Give up the handle's reference, once. */
static int release_handle(struct weft__fiber *f)
{
	uint32_t l = atomic_load(&f->life);
	do {
		if (!(l & FL_HELD))
			return -ESRCH;
	} while (!atomic_compare_exchange_weak(&f->life, &l, l & ~(uint32_t)FL_HELD));
	weft__fiber_unref(f);
	return 0;
}

/* join and detach both hold the joining flag while they work, so they
 * cannot both use the handle: the loser gets -EBUSY. */
static bool claim(struct weft__fiber *f)
{
	return !(atomic_fetch_or(&f->life, FL_JOINING) & FL_JOINING);
}

static void unclaim(struct weft__fiber *f) { atomic_fetch_and(&f->life, ~(uint32_t)FL_JOINING); }

int weft_fiber_join(weft_fiber_t h, int64_t deadline, void **result, int *status)
{
	struct weft__fiber *f;
	int err = weft__fiber_lookup(h, true, &f);
	if (err)
		return err;
	struct weft__worker *w = weft__worker_self();
	if (w && w->cur == f) {
		weft__fiber_unref(f);
		return -EDEADLK;
	}
	/* A join whose deadline has passed only looks while f runs: it takes
	 * the handle only to collect a finished fiber, so a poll never makes a
	 * concurrent join or detach fail with -EBUSY (test_fiber's
	 * test_join_concurrent_busy saw that on a slow machine: its poll held
	 * the claim just as the joiner came). */
	if (deadline >= 0 && deadline <= weft__now() &&
	    atomic_load_explicit(&f->done.state, memory_order_acquire) == FS_PENDING) {
		err = atomic_load_explicit(&f->life, memory_order_relaxed) & FL_JOINING
			      ? -EBUSY
			      : -ETIMEDOUT;
		weft__fiber_unref(f);
		return err;
	}
	if (!claim(f)) {
		weft__fiber_unref(f);
		return -EBUSY;
	}
	void *value = NULL;
	err = weft__future_wait_why(&f->done, deadline, &value, "join");
	if (err) {
		unclaim(f);
		weft__fiber_unref(f);
		return err;
	}
	if (result)
		*result = value;
	if (status)
		*status = f->status; /* written before done settled */
	/* The claim keeps detach and other joins out, so the handle is
	 * released with the claim, and its reference and ours go in one step. */
	atomic_fetch_and_explicit(&f->life, ~(uint32_t)(FL_HELD | FL_JOINING),
				  memory_order_release);
	weft__fiber_unref_n(f, 2);
	return 0;
}

int weft_fiber_detach(weft_fiber_t h)
{
	struct weft__fiber *f;
	int err = weft__fiber_lookup(h, true, &f);
	if (err)
		return err;
	struct weft__worker *w = weft__worker_self();
	if (w && w->cur == f) {
		err = -EPERM; /* the handle belongs to whoever spawned it */
	} else if (!claim(f)) {
		err = -EBUSY;
	} else {
		err = release_handle(f);
		unclaim(f);
	}
	weft__fiber_unref(f);
	return err;
}

int weft_fiber_exit(void *result)
{
	struct weft__worker *w = weft__worker_self();
	if (!w || !w->cur)
		return -EPERM;
	if (atomic_load_explicit(&w->cur->life, memory_order_relaxed) & FL_ENDING)
		return -EALREADY; /* a destructor run by its own exit */
	finish(w->cur, result);
}

weft_fiber_t weft_fiber_self(void)
{
	struct weft__worker *w = weft__worker_self();
	if (!w || !w->cur)
		return 0;
	/* A runner fiber runs nothing but step callbacks, and a callback has
	 * a pid (weft_step_pid) and no fiber of its own. */
	struct weft__fiber_cold *c = weft__cold(w->cur);
	return c && c->step_runner ? 0 : w->cur->handle;
}

const char *weft_fiber_name(void)
{
	struct weft__worker *w = weft__worker_self();
	return w && w->cur ? weft__fiber_name_of(w->cur) : NULL;
}
