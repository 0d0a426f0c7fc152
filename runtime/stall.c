/* SPDX-License-Identifier: MIT */
/* The stall detector: a monitor thread that notices a fiber holding its
 * worker past a threshold without reaching a suspension point, and reports
 * it once per stall (docs/decisions/stall-detector.md).
 *
 * It adds nothing to the scheduler's paths. Each worker already publishes
 * the fiber it runs (cur), counts its switches and stamps each look around
 * for work (sched.c), which every suspension point makes: a park or a yield
 * that switches counts a switch, and a yield that finds nothing else to run
 * looks around. The monitor samples the three every quarter of the
 * threshold; while they stay the same, the same fiber has run all along,
 * and the worker thread's CPU time since the monitor first saw them so is
 * how long (at least). CPU time, not wall time: a worker thread the machine
 * did not run for a while has not been running its fiber. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

#define MAX_FRAMES 16
#define PERIOD_MIN_NS 1000000LL
#define PERIOD_MAX_NS 250000000LL
/* How long a backtrace may take to come back (a worker answers in
 * microseconds; a sanitizer may hold the signal back for good). */
#define BACKTRACE_WAIT_NS 100000000LL

/* What the monitor samples on one worker. */
struct sample {
	struct weft__fiber *cur;
	uint64_t switches, stamp;
};

/* Per worker: the sample as first seen, the worker's CPU time then, and
 * whether this stall was reported. */
struct seen {
	struct sample s;
	int64_t since;
	bool reported;
};

static struct {
	int64_t threshold, period;
	weft_dump_fn fn;
	void *ctx;
	shim_thread_t thread;
	bool on;
	_Atomic uint32_t stop;
	struct seen seen[WEFT_MAX_WORKERS];
	_Atomic uint64_t stalls[WEFT_MAX_WORKERS]; /* written by the monitor only */
} mon;

static void take(struct weft__worker *w, struct sample *s)
{
	s->cur = weft__worker_cur(w);
	s->switches = atomic_load_explicit(&w->switches, memory_order_relaxed);
	s->stamp = __atomic_load_n(&w->stamp, __ATOMIC_RELAXED);
}

static bool same(const struct sample *a, const struct sample *b)
{
	return a->cur == b->cur && a->switches == b->switches && a->stamp == b->stamp;
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	char line[256];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	if (n <= 0)
		return;
	size_t len = (size_t)n < sizeof line ? (size_t)n : sizeof line - 1;
	if (mon.fn)
		mon.fn(line, len, mon.ctx);
	else
		shim_console_write(line, len);
}

static const char *why_none(int e)
{
	switch (e) {
	case -ENOSYS:
		return "not on this target";
	case -EBUSY:
		return "the program handles the signal it needs";
	case -ETIMEDOUT:
		return "the worker did not answer";
	case -ESTALE:
		return "it moved on meanwhile";
	case 0:
		return "not running on its stack";
	default:
		return "the signal could not be sent";
	}
}

/* A report in the making: worker i has run the fiber of sample at for ran
 * ns of CPU time. */
struct stall {
	unsigned i;
	struct weft__worker *w;
	struct sample at;
	int64_t ran;
	bool found;
};

/* Called by weft__fibers_each with a reference on f: the record is reached
 * through the fiber table (whose loads order its reads after the spawn that
 * filled it), not through the worker's cur pointer, which nothing orders. */
static void report_if(struct weft__fiber *f, void *arg)
{
	struct stall *st = arg;
	if (st->found || f != st->at.cur)
		return;
	st->found = true;
	/* Sampled again: unchanged, the record still holds the fiber that
	 * stalled (it cannot have ended without a switch), and the reference
	 * keeps it its own while we read it. */
	struct sample now;
	take(st->w, &now);
	if (!same(&now, &st->at))
		return; /* it moved on just now: no stall left */
	weft_fiber_t h = atomic_load_explicit(&f->handle, memory_order_acquire);
	uintptr_t pcs[MAX_FRAMES];
	struct shim_stack stk;
	weft__stack_of(f, &stk);
	uintptr_t lo = (uintptr_t)stk.base;
	int n = shim_thread_backtrace(st->w->thread, lo, lo + stk.size, pcs, MAX_FRAMES,
				      shim_now() + BACKTRACE_WAIT_NS);
	take(st->w, &now);
	if (n > 0 && !same(&now, &st->at))
		n = -ESTALE; /* the addresses may be another fiber's */
	say("weft: stall: fiber %llu \"%s\" (spawned at %s:%d) has run for %lld ms on worker %u "
	    "without a suspension point\n",
	    (unsigned long long)h, weft__fiber_name_of(f), f->file ? f->file : "?", f->line,
	    (long long)(st->ran / 1000000), st->i);
	if (n <= 0)
		say("    (no backtrace: %s)\n", why_none(n));
	for (int k = 0; k < n; k++) {
		char sym[160];
		size_t len = shim_symbolize(pcs[k], sym, sizeof sym);
		say("    #%d 0x%llx%s%.*s\n", k, (unsigned long long)pcs[k], len ? " " : "",
		    (int)len, sym);
	}
	/* After the text: whoever sees the count has been told. */
	atomic_fetch_add_explicit(&mon.stalls[st->i], 1, memory_order_release);
}

static void check(unsigned i)
{
	struct weft__worker *w = &weft__rt.workers[i];
	struct seen *s = &mon.seen[i];
	struct sample now;
	take(w, &now);
	int64_t cpu = shim_thread_cputime(w->thread);
	if (cpu < 0)
		return; /* not measurable: never a guess */
	if (!same(&now, &s->s)) {
		*s = (struct seen){.s = now, .since = cpu};
		return;
	}
	if (!now.cur || s->reported || cpu - s->since < mon.threshold)
		return;
	s->reported = true; /* once per stall: until the sample changes */
	struct stall st = {.i = i, .w = w, .at = now, .ran = cpu - s->since};
	weft__fibers_each(report_if, &st);
}

static void monitor(void *arg)
{
	(void)arg;
	while (!atomic_load(&mon.stop)) {
		shim_wait(&mon.stop, 0, shim_now() + mon.period);
		if (atomic_load(&mon.stop))
			break;
		for (unsigned i = 0; i < weft__rt.nworkers; i++)
			check(i);
	}
}

int weft__stall_start(int64_t threshold_ns, weft_dump_fn fn, void *ctx)
{
	for (unsigned i = 0; i < WEFT_MAX_WORKERS; i++) {
		atomic_store_explicit(&mon.stalls[i], 0, memory_order_relaxed);
		mon.seen[i] = (struct seen){0};
	}
	if (threshold_ns <= 0)
		return 0;
	mon.threshold = threshold_ns;
	mon.period = threshold_ns / 4;
	if (mon.period < PERIOD_MIN_NS)
		mon.period = PERIOD_MIN_NS;
	if (mon.period > PERIOD_MAX_NS)
		mon.period = PERIOD_MAX_NS;
	mon.fn = fn;
	mon.ctx = ctx;
	atomic_store(&mon.stop, 0);
	int e = shim_thread_start(&mon.thread, monitor, NULL);
	if (e)
		return e;
	mon.on = true;
	return 0;
}

void weft__stall_stop(void)
{
	if (!mon.on)
		return;
	atomic_store(&mon.stop, 1);
	shim_wake(&mon.stop, 1);
	shim_thread_join(mon.thread);
	mon.on = false;
}

uint64_t weft__stall_count(unsigned i)
{
	/* Acquire: whoever sees a stall counted sees its report handed over. */
	return i < WEFT_MAX_WORKERS ? atomic_load_explicit(&mon.stalls[i], memory_order_acquire)
				    : 0;
}
