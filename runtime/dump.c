/* SPDX-License-Identifier: MIT */
/* weft_dump: every fiber with its state, what it waits on and for how long,
 * where and by whom it was spawned, and for a parked fiber the return
 * addresses on its stack; then each worker's counters.
 *
 * It reads other fibers while they run, so what it prints is a snapshot of
 * each fiber taken at a slightly different moment. Two passes over the fiber
 * table: the first copies every fiber's id and parent, so that the spawn
 * chain can be followed up through parents that are still alive; the second
 * prints. A parked fiber's stack is walked with its frame pointers
 * (arch_backtrace); the walk is kept only if the fiber was parked, with the
 * same park word, before and after it. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define MAX_FRAMES 16
#define MAX_CHAIN 8

/* The counter and the clock together at weft_init: the park stamps
 * (arch_cycles) become wall-clock durations by the ratio of the two since. */
static int64_t ref_ns;
static uint64_t ref_cycles;

void weft__dump_init(void)
{
	ref_ns = shim_now();
	ref_cycles = arch_cycles();
}

struct ident {
	weft_fiber_t id, parent;
	char parent_name[WEFT_NAME_MAX];
};

struct dump {
	weft_dump_fn fn;
	void *ctx;
	struct ident *ids;
	size_t nids, cap;
	int64_t now;
	uint64_t cycles;     /* arch_cycles() with now_ns */
	double ns_per_cycle; /* 0: not measurable yet */
	int count;
};

static void emit(struct dump *d, const char *s, size_t n)
{
	if (n)
		d->fn(s, n, d->ctx);
}

/* Append to a line buffer; never overflows, truncates instead. */
static void put(char *buf, size_t cap, size_t *len, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void put(char *buf, size_t cap, size_t *len, const char *fmt, ...)
{
	if (*len >= cap - 1)
		return;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf + *len, cap - *len, fmt, ap);
	va_end(ap);
	if (n > 0)
		*len += (size_t)n < cap - *len ? (size_t)n : cap - *len - 1;
}

static void collect(struct weft__fiber *f, void *arg)
{
	struct dump *d = arg;
	if (d->nids == d->cap) {
		size_t ncap = d->cap ? d->cap * 2 : 256;
		struct ident *n = realloc(d->ids, ncap * sizeof *n);
		if (!n)
			return; /* the chains end early */
		d->ids = n;
		d->cap = ncap;
	}
	struct ident *e = &d->ids[d->nids++];
	e->id = f->handle;
	e->parent = f->parent;
	weft__name_copy(e->parent_name, weft__fiber_parent_name(f));
}

static int by_id(const void *a, const void *b)
{
	uint64_t x = ((const struct ident *)a)->id, y = ((const struct ident *)b)->id;
	return x < y ? -1 : x > y;
}

static const struct ident *find(struct dump *d, weft_fiber_t id)
{
	struct ident key = {.id = id};
	return d->nids ? bsearch(&key, d->ids, d->nids, sizeof key, by_id) : NULL;
}

static int on_worker(struct weft__fiber *f)
{
	for (unsigned i = 0; i < weft__rt.nworkers; i++)
		if (weft__worker_cur(&weft__rt.workers[i]) == f)
			return (int)i;
	return -1;
}

static void print_one(struct weft__fiber *f, void *arg)
{
	struct dump *d = arg;
	char line[512];
	size_t n = 0;
	d->count++;

	uint64_t pw = atomic_load_explicit(&f->park, memory_order_acquire);
	unsigned st = PW_STATE(pw);
	int worker = on_worker(f);
	bool parked = false;
	put(line, sizeof line, &n, "weft: fiber %llu \"%s\" ", (unsigned long long)f->handle,
	    weft__fiber_name_of(f));
	if (atomic_load(&f->done.state) != FS_PENDING) {
		put(line, sizeof line, &n, "finished (not joined yet)");
	} else if (st == PS_PARKING || st == PS_PARKED) {
		parked = true;
		const char *why = atomic_load_explicit(&f->wait_why, memory_order_relaxed);
		uint64_t since =
			(uint64_t)atomic_load_explicit(&f->wait_since, memory_order_relaxed);
		int64_t ns = (int64_t)((double)(d->cycles - since) * d->ns_per_cycle);
		put(line, sizeof line, &n, "parked: %s", why ? why : "?");
		if (st == PS_PARKED && since && since <= d->cycles && d->ns_per_cycle > 0)
			put(line, sizeof line, &n, " for %lld.%06lld ms", (long long)(ns / 1000000),
			    (long long)(ns % 1000000));
	} else if (worker >= 0) {
		put(line, sizeof line, &n, "running on worker %d", worker);
	} else {
		put(line, sizeof line, &n, "runnable");
	}
	if (pw & PW_CANCEL)
		put(line, sizeof line, &n,
		    (pw & PW_HOLD) ? ", cancel pending (held off)" : ", cancel pending");
	else if (pw & PW_HOLD)
		put(line, sizeof line, &n, ", cancellation held off");
	uint32_t pin = weft__fiber_pin_of(f);
	if (pin)
		put(line, sizeof line, &n, ", pinned to worker %u", (unsigned)(pin - 1));
	if (f->flags & FF_HIGH)
		put(line, sizeof line, &n, ", latency-sensitive");
	if (f->flags & FF_SERVICE)
		put(line, sizeof line, &n, ", runtime service");
	put(line, sizeof line, &n, "\n");
	emit(d, line, n);

	/* Where it came from: the spawn site and the chain of spawners. */
	n = 0;
	put(line, sizeof line, &n, "    spawned at %s:%d ", f->file ? f->file : "?", f->line);
	weft_fiber_t pid = f->parent;
	const char *pname = weft__fiber_parent_name(f);
	if (!pid)
		put(line, sizeof line, &n, "by a thread");
	for (int depth = 0; pid && depth < MAX_CHAIN; depth++) {
		put(line, sizeof line, &n, "%sfiber %llu \"%.*s\"", depth ? " <- " : "by ",
		    (unsigned long long)pid, WEFT_NAME_MAX - 1, pname);
		const struct ident *p = find(d, pid);
		if (!p) {
			put(line, sizeof line, &n, " (gone)");
			break;
		}
		if (!p->parent) {
			put(line, sizeof line, &n, " <- a thread");
			break;
		}
		pid = p->parent;
		pname = p->parent_name;
	}
	put(line, sizeof line, &n, "\n");
	emit(d, line, n);

	if (!parked || st != PS_PARKED)
		return;
	uintptr_t pcs[MAX_FRAMES];
	struct shim_stack stk;
	weft__stack_of(f, &stk);
	uintptr_t lo = (uintptr_t)stk.base;
	size_t k = arch_backtrace(f->ctx.sp, lo, lo + stk.size, pcs, MAX_FRAMES);
	if (atomic_load_explicit(&f->park, memory_order_acquire) != pw)
		k = 0; /* it moved while we read: the addresses mean nothing */
	if (k <= 1) {
		/* Only the resume address: the runtime has no frame pointers. */
		n = 0;
		put(line, sizeof line, &n, "    (no backtrace)\n");
		emit(d, line, n);
		return;
	}
	for (size_t i = 0; i < k; i++) {
		char sym[160];
		size_t s = shim_symbolize(pcs[i], sym, sizeof sym);
		n = 0;
		put(line, sizeof line, &n, "    #%zu 0x%llx%s%.*s\n", i, (unsigned long long)pcs[i],
		    s ? " " : "", (int)s, sym);
		emit(d, line, n);
	}
}

int weft_dump_to(weft_dump_fn fn, void *ctx)
{
	if (!fn)
		return -EINVAL;
	if (!atomic_load(&weft__rt.running))
		return -ESRCH;
	struct dump d = {.fn = fn, .ctx = ctx, .now = weft__now(), .cycles = arch_cycles()};
	int64_t real = shim_now() - ref_ns;
	if (real > 0 && d.cycles > ref_cycles)
		d.ns_per_cycle = (double)real / (double)(d.cycles - ref_cycles);
	weft__fibers_each(collect, &d);
	if (d.nids)
		qsort(d.ids, d.nids, sizeof *d.ids, by_id);
	char line[256];
	size_t n = 0;
	put(line, sizeof line, &n, "weft: dump at %lld ns: %llu fibers alive, %u workers\n",
	    (long long)d.now,
	    (unsigned long long)(weft__live_count() + atomic_load(&weft__rt.services)),
	    weft__rt.nworkers);
	emit(&d, line, n);
	weft__fibers_each(print_one, &d);
	free(d.ids);
	for (unsigned i = 0; i < weft__rt.nworkers; i++) {
		weft_worker_stats_t s;
		if (weft_worker_stats(i, &s))
			break;
		struct weft__fiber *cur = weft__worker_cur(&weft__rt.workers[i]);
		n = 0;
		put(line, sizeof line, &n,
		    "weft: worker %u: %s, %llu queued, %llu switches, %llu steals, %llu parks, "
		    "%llu wakes\n",
		    i, cur ? "running a fiber" : "idle", (unsigned long long)s.queued,
		    (unsigned long long)s.switches, (unsigned long long)s.steals,
		    (unsigned long long)s.parks, (unsigned long long)s.wakes);
		emit(&d, line, n);
	}
	n = 0;
	put(line, sizeof line, &n, "weft: end of dump (%d fibers)\n", d.count);
	emit(&d, line, n);
	return d.count;
}

static void to_console(const char *s, size_t n, void *ctx)
{
	(void)ctx;
	shim_console_write(s, n);
}

int weft_dump(void) { return weft_dump_to(to_console, NULL); }

void weft__dump_on_quit(void) { weft_dump(); }
