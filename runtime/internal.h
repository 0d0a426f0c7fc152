/* SPDX-License-Identifier: MIT */
/* The runtime's private seam: the fiber and worker structures and the calls
 * that cross files inside runtime/. Nothing here is OS- or CPU-specific. */
#ifndef WEFT_INTERNAL_H
#define WEFT_INTERNAL_H

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch.h"
#include "shim.h"
#include "weft.h"

#include "deque.h"
#include "lock.h"
#include "san.h"
#include "service.h"

#if defined(__clang__)
#define WEFT_NOIPA __attribute__((noinline))
#else
#define WEFT_NOIPA __attribute__((noinline, noipa))
#endif

#define WEFT_MAX_WORKERS 16
#define WEFT_NAME_MAX 32

/* ---- Park word ----------------------------------------------------------
 * One 64-bit word per fiber settles every race between parking, waking,
 * timeouts and cancellation with a single compare-and-swap:
 *   bits 0-2   state (below)
 *   bit  3     a cancellation request not yet delivered
 *   bit  4     cancellation is held off (weft_fiber_cancel_hold): a request stays
 *              pending and wakes nobody until the hold ends
 *   bits 16-31 the wake result, as a positive errno (0 = plain wake)
 *   bits 32-63 the park generation: each park takes a new one, and a wake
 *              carrying an older generation is dropped (stale wakeup). */
enum {
	PS_RUNNING = 0, /* running, or runnable in a queue */
	PS_PARKING = 1, /* decided to park, still on its stack */
	PS_PARKED = 2,  /* switched out; a waker must queue it */
	PS_WOKEN = 3,   /* woken while still PARKING: it will not sleep */
};
#define PW_STATE(w) ((unsigned)((w)&7))
#define PW_CANCEL ((uint64_t)8)
#define PW_HOLD ((uint64_t)16)
#define PW_FLAGS (PW_CANCEL | PW_HOLD)
/* A request that may be delivered now: pending and not held off. */
#define PW_DELIVERABLE(w) (((w)&PW_FLAGS) == PW_CANCEL)
#define PW_RESULT(w) (-(int)(((w) >> 16) & 0xffff))
#define PW_GEN(w) ((uint32_t)((w) >> 32))
#define PW_MAKE(gen, res, state) \
	(((uint64_t)(gen) << 32) | ((uint64_t)(uint16_t)(-(res)) << 16) | (uint64_t)(state))

/* ---- Contexts and fibers ------------------------------------------------ */

/* Something arch_switch can switch to: a fiber, or a worker's scheduler
 * running on the thread's own stack. Whether it keeps its own FP control
 * state is its fiber's (FF_FPENV; the state is in its cold block). */
struct weft__ctx {
	void *sp;
	/* only in sanitizer builds (san.h): */
#ifdef WEFT_SAN
	void *stack_lo; /* the stack's lowest address */
	size_t stack_len;
	void *san_fake;  /* ASan's fake-stack handle while switched out */
	void *san_fiber; /* TSan's fiber handle */
#endif
};

struct weft__future {
	weft__lock_t lock;
	_Atomic int state; /* FS_* */
	void *value;       /* resolved: the value; rejected: the error (intptr_t) */
	struct weft__waiter *waiters;
};
enum { FS_PENDING = 0, FS_RESOLVED = 1, FS_REJECTED = 2 };

enum {
	FF_FPENV = 1,   /* keeps its own FP control state (WEFT_ATTR_FPENV), in cold */
	FF_SERVICE = 2, /* the runtime's own: weft_run does not wait for it */
	FF_HIGH = 4,    /* the latency-sensitive class (WEFT_ATTR_HIGH) */
	FF_THREAD = 8,  /* a plain OS thread standing in as a fiber */
	FF_STACK = 16,  /* its stack is not of the common shape: cold->stack says */
	FF_COLD = 32,   /* to spawn: make its cold block now (a generator's fiber) */
};
/* The attribute flags a spawn copies as they are. */
_Static_assert((int)FF_FPENV == (int)WEFT_ATTR_FPENV && (int)FF_HIGH == (int)WEFT_ATTR_HIGH,
	       "FF_ = WEFT_ATTR_");

/* The bits of a fiber's life word: set and cleared with atomic operations
 * by anyone; its pin (the worker it is pinned to, plus one; 0 = none) is
 * written only by the fiber itself and its spawner, read by whoever queues
 * it (relaxed: a plain load on every CPU). */
enum {
	FL_HELD = 1,      /* its weft_fiber_t is held (not joined or detached yet) */
	FL_JOINING = 2,   /* a join or detach is using the handle */
	FL_CANCELLED = 4, /* a cancellation request was made (its exit status) */
	FL_ENDING = 8,    /* in its exit path (finish); set by the fiber */
};
#define FL_PIN_SHIFT 8
#define FL_PIN(l) ((l) >> FL_PIN_SHIFT)
/* status before weft_fiber_set_status: no status is positive */
#define WEFT__STATUS_UNSET 1

struct weft__fls;
struct weft__mbox;

/* What most fibers never use, behind one pointer allocated on first use
 * (weft__fiber_cold) and kept with the record from then on, for its next
 * lives too (a spawn clears it). A spawn that names the fiber, or whose
 * spawner has a name, or that asks for local storage, a supervisor, its own
 * FP state or an uncommon stack makes it then; a first message to the fiber
 * makes it from the sender's thread (published with a CAS). */
struct weft__fiber_cold {
	char name[WEFT_NAME_MAX];
	char parent_name[WEFT_NAME_MAX];
	/* processes (mailbox.c): NULL until the first message is sent to it
	 * or it asks for one, then its mailbox; WEFT__MBOX_GONE once it has
	 * exited */
	struct weft__mbox *_Atomic mbox;
	/* fiber context (fls.c, generator.c, supervise.c) */
	struct weft__fls *fls;        /* local-storage table, NULL = empty; only
				       * the fiber itself (and its spawns) use it */
	struct weft_gen *gen;         /* the generator it runs, or NULL */
	struct weft_chan *supervisor; /* where its end is reported, or NULL */
	void *step_runner;            /* the step-process runner it is (step.c) */
	struct shim_stack stack;      /* with FF_STACK: its stack */
	arch_fpenv_t fpenv;           /* with FF_FPENV: its FP control state,
				       * saved while switched out */
};

/* A fiber's record: 128 bytes on a 64-bit CPU (outside sanitizer builds),
 * one per fiber alive or held (fibtab.c). */
struct weft__fiber {
	struct weft__ctx ctx;
	_Atomic uint64_t park;    /* the park word (a plain thread sleeps on its low half) */
	struct weft__fiber *next; /* run-queue and pool link */
	/* identity and lifetime: the weft_fiber_t naming it; once free,
	 * WEFT__HANDLE_FREE | its slot + 1 (it keeps its slot for good) */
	_Atomic uint64_t handle;
	struct weft__future done; /* settles with the result at exit */
	union {
		/* what it runs: read when it first runs */
		struct {
			weft_fn fn;
			void *arg;
		};
		/* once it runs: what its latest park waits on
		 * (weft__park_begin_why; a string literal) and since when (its
		 * worker's stamp, stored only when it really switches out):
		 * read by weft_dump, meaningful while parked */
		struct {
			_Atomic(const char *) wait_why;
			_Atomic int64_t wait_since;
		};
	};
	/* its stack's base: size and guard are the common shape's
	 * (weft__stack_of), or with FF_STACK its cold block's; NULL until
	 * its first run (stack.c), so read and written with __atomic */
	void *stack;
	struct weft__fiber_cold *_Atomic cold; /* NULL until first needed */
	const char *file;                      /* diagnostics: the spawn site */
	weft_fiber_t parent;                   /* its spawner, 0 for a plain thread */
	_Atomic int refs;                      /* one for being alive, one for a held handle */
	_Atomic uint32_t life;                 /* FL_* and the pin */
	int line;                              /* the spawn site's, with file */
	uint32_t timer_slot;                   /* timer heap index + 1, 0 when not armed */
	/* exit status (WEFT__STATUS_UNSET until set); read once done settles */
	int status;
	uint8_t flags;        /* FF_*, set at spawn */
	uint16_t cancel_hold; /* weft_fiber_cancel_hold depth; only the fiber touches it */
};
#define WEFT__HANDLE_FREE (UINT64_C(1) << 63)
#if !defined(WEFT_SAN) && UINTPTR_MAX == UINT64_MAX
_Static_assert(sizeof(struct weft__fiber) == 128, "a fiber record is 128 bytes");
#endif

/* f's cold block, or NULL while it has none. */
static inline struct weft__fiber_cold *weft__cold(struct weft__fiber *f)
{
	return atomic_load_explicit(&f->cold, memory_order_acquire);
}
/* f's cold block, made if it has none (fibtab.c): NULL only for -ENOMEM.
 * Any thread that holds a reference to f, or f itself. */
struct weft__fiber_cold *weft__fiber_cold(struct weft__fiber *f);
/* f's name ("" when it has none). */
static inline const char *weft__fiber_name_of(struct weft__fiber *f)
{
	struct weft__fiber_cold *c = weft__cold(f);
	return c ? c->name : "";
}
/* The name of f's spawner when f was spawned ("" for none). */
static inline const char *weft__fiber_parent_name(struct weft__fiber *f)
{
	struct weft__fiber_cold *c = weft__cold(f);
	return c ? c->parent_name : "";
}
/* Copy a fiber's name (as read from another thread: perhaps changing)
 * into dst[WEFT_NAME_MAX], ended. No library call: the fault handler uses
 * it. */
static inline void weft__name_copy(char *dst, const char *src)
{
	size_t i = 0;
	for (; i < WEFT_NAME_MAX - 1 && src[i]; i++)
		dst[i] = src[i];
	dst[i] = 0;
}
/* The worker f is pinned to, plus one; 0 = none. */
static inline uint32_t weft__fiber_pin_of(struct weft__fiber *f)
{
	return FL_PIN(atomic_load_explicit(&f->life, memory_order_relaxed));
}
/* Pin f (the caller) to worker pin - 1, or unpin it (0): a CAS, since
 * others set and clear the life word's bits. */
static inline void weft__fiber_set_pin(struct weft__fiber *f, uint32_t pin)
{
	uint32_t l = atomic_load_explicit(&f->life, memory_order_relaxed);
	while (!atomic_compare_exchange_weak_explicit(
		&f->life, &l, (l & ((1u << FL_PIN_SHIFT) - 1)) | (pin << FL_PIN_SHIFT),
		memory_order_relaxed, memory_order_relaxed))
		;
}

/* f's class, the index of its queues: 1 latency-sensitive
 * (WEFT_ATTR_HIGH), 0 bulk. Every queue but the next-run slot and the
 * yielded list comes in one of each; those two hold bulk fibers only. */
static inline int weft__fiber_class(const struct weft__fiber *f)
{
	return (f->flags & FF_HIGH) ? 1 : 0;
}

/* Actions a context leaves for the next one to finish once it is off its
 * stack: a fiber is only made visible to other workers after its registers
 * are saved. */
enum { ACT_YIELD = 1, ACT_PARK, ACT_EXIT, ACT_MOVE /* to the worker it was just pinned to */ };

struct weft__worker {
	struct weft__deque dq;
	struct weft__deque dq_hi; /* latency-sensitive fibers; the owner takes
				   * the oldest, as thieves do */
	int index;
	struct weft__ctx sched;           /* the scheduler loop on the thread stack */
	struct weft__fiber *cur;          /* running fiber, NULL in the scheduler */
	struct weft__fiber *prev;         /* the context we just left ... */
	int prev_act;                     /* ... and what to finish for it */
	struct weft__fiber *yielded;      /* yielded fibers, oldest first ... */
	struct weft__fiber *yielded_tail; /* ... and the newest */
	/* fibers pinned here and runnable, oldest first, bulk [0] and
	 * latency-sensitive [1] (owner only): no other worker takes them */
	struct weft__fiber *pinned[2], *pinned_tail[2];
	unsigned hi_streak; /* latency-sensitive runs in a row while bulk work waits */
	/* the next-run slot: a fiber woken by a hand-off from a fiber running
	 * here runs next (weft__ready_next); a thief takes it only once it has
	 * sat there for RUNNEXT_GRACE_NS while this worker did not switch */
	_Atomic(struct weft__fiber *) runnext;
	unsigned runnext_streak;       /* runs in a row taken from runnext */
	unsigned rn_looks;             /* steal attempts (victims' slots every 8th) */
	struct weft__seen {            /* as a thief: each victim's slot as */
		struct weft__fiber *f; /* last seen, its switch count then, */
		uint64_t switches;     /* and when (shim_now) */
		int64_t at;
	} rn_seen[WEFT_MAX_WORKERS];
	arch_fpenv_t fpenv; /* the worker's FP control state, kept
			     * while a WEFT_ATTR_FPENV fiber runs */
	int *errno_loc;     /* the driving thread's errno (weft__set_worker) */
	/* arch_cycles() at its latest look around (every 64th look for work,
	 * and every look while its own queues are empty): the moment a park
	 * records as its start, for weft_dump's "for how long" */
	uint64_t stamp;
	unsigned tick;
	/* Timers while one is armed (timer.c, docs/decisions/timer-checks.md):
	 * looks for work left before the next reads the clock, looks since
	 * the window began, and the clock when it began */
	unsigned timer_skip, timer_looks;
	int64_t timer_seen;
	uint64_t rng;
	shim_thread_t thread;
	_Atomic uint32_t wake;     /* set by the waker of an idle worker */
	_Atomic int in_poll;       /* blocked in the reactor's poll, not the futex */
	_Atomic uint64_t switches; /* context switches made by this worker */
	uint64_t runs;             /* fibers switched in (weft_poll's count) */
	int64_t limit;             /* host loop: find no work from this time on; 0 = none */
	unsigned ncached;
	struct shim_stack cache[64]; /* default-size stacks for reuse (stack.c) */
	unsigned stack_pressure;     /* stack.c's pressure count, as last seen */
	unsigned stack_returns;      /* weft__stack_returns before its last look */
	bool starved_tried;          /* idle, it readied the starved fibers (worker.c) */
	/* fibtab.c: free fiber records (each keeps its slot), moved to and
	 * from the shared pool in batches */
	struct weft__fiber *fpool;
	unsigned nfpool;
	_Atomic uint64_t spawned;    /* fibers spawned by code running here */
	_Atomic int64_t live_credit; /* counted in weft__rt.live, not yet spawned */
	/* counters for weft_worker_stats: one writer each (this worker),
	 * relaxed; switches is above */
	_Atomic uint64_t steals; /* successful steals from a victim */
	_Atomic uint64_t parks;  /* parks that switched a fiber out */
	_Atomic uint64_t wakes;  /* fibers woken by code running here */
	/* fibers pinned here made runnable by other threads (pin.c's
	 * inbox_push), on a line of their own: the owner moves them to its
	 * pinned list when it looks for work and sees inbox_len */
	_Alignas(64) weft__lock_t inbox_lock;
	_Atomic int inbox_len;
	_Atomic int asleep; /* on the idle list, about to sleep (idle.c) */
	struct weft__fiber *inbox, *inbox_tail;
};

/* The fiber worker w runs now, or NULL: a snapshot for weft_dump and the
 * stall detector (the scheduler publishes it with an atomic store). */
static inline struct weft__fiber *weft__worker_cur(struct weft__worker *w)
{
	return __atomic_load_n(&w->cur, __ATOMIC_RELAXED);
}

/* w's deque of class c (weft__fiber_class). */
static inline struct weft__deque *weft__deque_of(struct weft__worker *w, int c)
{
	return c ? &w->dq_hi : &w->dq;
}

/* One writer per counter (its worker); readers take a relaxed snapshot. */
static inline void weft__bump(_Atomic uint64_t *c)
{
	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1,
			      memory_order_relaxed);
}

/* ---- The scheduler (sched.c) -------------------------------------------- */

struct weft__runq {
	_Alignas(64) weft__lock_t lock;
	struct weft__fiber *head, *tail;
	_Atomic int64_t len;
};

struct weft__rt {
	/* read by every spawn and scheduling pass, written at start and stop */
	_Atomic int running;
	_Atomic int stopping;
	unsigned nworkers;
	size_t stack_size;
	struct weft__worker *workers;
	bool host;                       /* no worker threads: weft_poll drives workers[0] */
	void (*fiber_main)(void *);      /* where fibers start (weft__fiber_main) */
	const struct weft__hooks *hooks; /* weft__fiber_hooks */
	_Atomic int draining;            /* weft_shutdown_grace: spawns start cancelled */
	_Atomic int64_t high_alive;      /* WEFT_ATTR_HIGH fibers alive: 0 skips their queues */
	_Atomic int64_t fp_alive;        /* WEFT_ATTR_FPENV fibers not yet off their stacks for
					  * good: 0 skips a switch's look at the FP state */
	_Atomic int irq_sweep;           /* weft_fiber_interrupt hit a parked fiber */
	/* fibers alive, on a cache line of their own: spawned and not yet
	 * finished, plus what the workers hold as credit (weft__live_inc) */
	_Alignas(64) _Atomic int64_t live;
	_Atomic int64_t services;  /* service fibers (FF_SERVICE) alive */
	_Atomic uint32_t live_seq; /* weft_run sleeps on this */
	/* idle workers */
	_Alignas(64) _Atomic uint32_t idle_epoch; /* idle workers sleep on this */
	_Atomic int nsleeping;
	_Atomic int nspinning;
	/* the global run queues: bulk [0], latency-sensitive [1] */
	struct weft__runq gq[2];
};
extern struct weft__rt weft__rt;

/* The worker running the calling code, or NULL on a plain thread. Never
 * inlined, never assumed pure: a fiber can resume on another thread after any
 * switch, so the thread-local must be read afresh every time (rt.c). */
struct weft__worker *weft__worker_self(void) WEFT_NOIPA;
/* The thread-local behind it, for the scheduler's own paths (sched.c), which
 * read it directly where no switch can come between the read and the use.
 * Initial-exec: one load from the thread pointer, no __tls_get_addr call in
 * the shared library. */
#define WEFT__TLS_IE __attribute__((tls_model("initial-exec")))
extern WEFT__TLS_IE _Thread_local struct weft__worker *weft__tls_worker;

/* The calling fiber, or the calling plain thread's stand-in. */
struct weft__fiber *weft__self(void) WEFT_NOIPA;

/* Make a fiber runnable: on the caller's worker if it is one, else on the
 * global queue, waking an idle worker if none is looking for work. */
void weft__ready(struct weft__fiber *f);
/* The same for a hand-off (a plain wake by a running fiber: a rendezvous, a
 * settle, an unlock, a message): f goes to the caller's next-run slot and
 * runs as soon as the caller blocks or yields; a fiber it displaces goes to
 * the deque. From a plain thread or the scheduler, weft__ready. */
void weft__ready_next(struct weft__fiber *f);

/* Switch the calling fiber out, leaving act for the next context. */
void weft__switch_out(struct weft__fiber *self, int act);

/* Runs on a context that has just been switched in. */
void weft__finish_switch(struct weft__worker *w);

/* weft__rt.live without a locked instruction per fiber (live.c): a
 * spawn on a worker takes from the worker's credit, taken from live
 * LIVE_BATCH at a time; an exit gives to the credit of the worker it ends
 * on; a worker out of work gives all of its credit back. live is never
 * below the fibers alive, and reaches 0 when the last one has ended and
 * every worker has looked for work since. w NULL: a plain thread's spawn. */
void weft__live_inc(struct weft__worker *w);
void weft__live_dec(struct weft__worker *w);
void weft__live_flush(struct weft__worker *w);
/* Fibers alive now (a snapshot, credits taken off). */
int64_t weft__live_count(void);
/* Wait until live is 0 or the deadline: 0, -ETIMEDOUT, -ECANCELED. */
int weft__live_wait(int64_t deadline);

/* Wake one idle worker (a new timer, new work from outside). */
void weft__kick_idle(void);
/* Wake one idle worker if nobody is already looking for work (idle.c). */
void weft__wake_one(bool even_if_spinning);
/* The same, for a caller that has made the fence itself since it queued. */
void weft__wake_one_fenced(bool even_if_spinning);
/* Wake worker w if it sleeps (idle.c), after work for it alone was queued
 * (its pinned inbox): w->asleep is read after a fence. */
void weft__wake_if_asleep(struct weft__worker *w);
/* Workers on the idle list now (a snapshot). */
int weft__idle_count(void);

/* The host loop (poll.c) borrows these: make w the calling thread's worker
 * (NULL: none), run f on it, and sleep as an idle worker until woken, the
 * earliest timer or cap (-1: none). sleep_idle returns true when a waker
 * picked w, or when it saw work and did not sleep: w then counts as
 * spinning (weft__rt.nspinning) until it looks. */
void weft__set_worker(struct weft__worker *w);
bool weft__run(struct weft__worker *w, struct weft__fiber *f); /* false: f found no stack */
bool weft__sleep_idle(struct weft__worker *w, int64_t cap);
/* Something is queued to run, by any worker: the global queue, any
 * worker's deque, next-run slot or pinned inbox. (An idle worker's last look
 * before it sleeps counts only what it may take: idle.c's queued_for.) */
bool weft__work_queued(void);
/* Move w's yielded fibers to its deque. */
void weft__flush_yielded(struct weft__worker *w);

/* Look for runnable work without sleeping (used by yield, park). */
struct weft__fiber *weft__find_work(struct weft__worker *w);

/* Put the list head .. tail of n fibers of class c on the global queue. */
void weft__gq_push_list(int c, struct weft__fiber *head, struct weft__fiber *tail, int64_t n);

/* A worker thread's body (worker.c), and asking all of them to return
 * (idle.c). */
void weft__worker_main(void *worker);
void weft__workers_stop(void);

/* ---- Pinned fibers (pin.c) ---------------------------------------------- */

/* Queue f, pinned to t, from the thread of worker w (NULL: a plain thread):
 * on t's pinned list from t itself, else in t's inbox, waking t if it
 * sleeps. Kept out of line: the common path (no pin) pays a load and a
 * branch. */
__attribute__((cold)) void weft__pinned_ready(struct weft__worker *w, struct weft__worker *t,
					      struct weft__fiber *f);
/* The owner moves its inbox to its pinned lists, oldest first. */
__attribute__((cold)) void weft__inbox_drain(struct weft__worker *w);
/* The oldest fiber of class c pinned to w and runnable, or NULL (owner
 * only). */
static inline struct weft__fiber *weft__take_pinned(struct weft__worker *w, int c)
{
	struct weft__fiber *f = w->pinned[c];
	if (f && !(w->pinned[c] = f->next))
		w->pinned_tail[c] = NULL;
	return f;
}

/* ---- Work stealing (steal.c) -------------------------------------------- */

/* Half of a random victim's bulk deque, one of it returned and the rest in
 * w's; with every one empty, a victim's next-run slot that has waited too
 * long. NULL: nothing. */
struct weft__fiber *weft__steal(struct weft__worker *w);
/* The same for the latency-sensitive class, without the slots. */
struct weft__fiber *weft__steal_high(struct weft__worker *w);

/* ---- Fibers waiting for a stack (starve.c) ------------------------------
 * Fibers whose first run found no stack (weft__stack_start) wait on the
 * starved list, still alive: each fiber that ends readies one, and an idle
 * worker (or the host loop) readies them all once before it sleeps. */
/* Read inline on every fiber's end (weft__finish_switch): hidden, so that
 * the shared library reads it directly, not through the GOT. */
extern _Atomic unsigned weft__nstarved __attribute__((visibility("hidden")));
/* Any waits. */
static inline bool weft__starved(void)
{
	return atomic_load_explicit(&weft__nstarved, memory_order_relaxed) > 0;
}
/* f's first run on w found no stack: it waits on the starved list. */
void weft__starve(struct weft__worker *w, struct weft__fiber *f);
void weft__unstarve(unsigned max);
/* Called after stacks went back (weft__stack_returns moved): readies the
 * starved fibers. With the starver's look at the count after it queued the
 * fiber (weft__starve, for every refused first run), no fiber is left
 * starved beside a stack it could have had. */
void weft__stacks_returned(void);
/* How many times a first run found no stack (for tests). */
extern _Atomic uint64_t weft__starves;

/* ---- Context switches (switch.c) ---------------------------------------- */

/* Switch from one context to another on worker w (the caller's), carrying
 * errno with each context and telling the sanitizers. dying: from will
 * never run again. Returns the worker from resumed on. */
struct weft__worker *weft__ctx_switch(struct weft__worker *w, struct weft__ctx *from,
				      struct weft__ctx *to, bool dying);
/* The same when either side may keep its own FP control state: from_fp,
 * to_fp say where (weft__fiber_fp), NULL for one that does not. */
struct weft__worker *weft__ctx_switch_fp(struct weft__worker *w, struct weft__ctx *from,
					 arch_fpenv_t *from_fp, struct weft__ctx *to,
					 arch_fpenv_t *to_fp, bool dying);
/* Where f keeps its own FP control state, or NULL (f NULL: the scheduler). */
static inline arch_fpenv_t *weft__fiber_fp(struct weft__fiber *f)
{
	if (!f || !(f->flags & FF_FPENV))
		return NULL;
	return &atomic_load_explicit(&f->cold, memory_order_relaxed)->fpenv;
}

/* First call on a new fiber's stack, completing the sanitizers' view. */
void weft__ctx_entered(struct weft__ctx *self);
void weft__ctx_create(struct weft__ctx *c, void *lo, size_t len);
void weft__ctx_destroy(struct weft__ctx *c);
void weft__ctx_adopt_thread(struct weft__ctx *c);

/* ---- Parking (park.c) --------------------------------------------------- */

/* Start a park: a new generation, state PARKING. After this the fiber may be
 * published to wakers as (self, gen). Returns the generation. */
uint32_t weft__park_begin(struct weft__fiber *self);
/* The same, naming what the park waits on for weft_dump: a string literal
 * ("sleep", "chan recv", ...). weft__park_begin says "park". */
uint32_t weft__park_begin_why(struct weft__fiber *self, const char *why);

/* Sleep until woken, the deadline, or cancellation. Returns the wake result:
 * 0 (woken), -ETIMEDOUT, -ECANCELED, or what the waker passed. */
int weft__park_end(struct weft__fiber *self, int64_t deadline);

/* Wake (f, gen) with result. Returns true if this call woke it; false if the
 * generation is stale or it was already woken. Callers must guarantee that
 * f stays allocated during the call (hold the lock f's waiter is under). */
bool weft__unpark(struct weft__fiber *f, uint32_t gen, int result);

/* ---- Cancellation (cancel.c) -------------------------------------------- */

/* A primitive that completed although park returned -ECANCELED keeps the
 * request pending for the next suspension point. */
void weft__cancel_repend(struct weft__fiber *self);

/* Request cancellation of f; wakes it if parked. */
void weft__cancel_request(struct weft__fiber *f);

/* The exit path of self, once its status is decided (weft__exit_status):
 * the fiber has ended, so a request it has not seen is spent (its status
 * says so), and a hold it forgot to release no longer protects anything.
 * What is left of its exit (destructors, the report) waits as any code
 * would, and a request made from now on interrupts it. */
static inline void weft__cancel_end(struct weft__fiber *self)
{
	self->cancel_hold = 0;
	/* Only the fiber sets the hold; a request that lands after this load
	 * is one made after the end, which stands. Most fibers have neither:
	 * no locked instruction for them. */
	if (atomic_load_explicit(&self->park, memory_order_acquire) & (PW_CANCEL | PW_HOLD))
		atomic_fetch_and_explicit(&self->park, ~(PW_CANCEL | PW_HOLD),
					  memory_order_acq_rel);
}

/* weft_fiber_interrupt left a parked fiber to wake (weft__rt.irq_sweep):
 * a worker wakes every parked fiber whose request is deliverable. Called
 * by weft__find_work when the flag is set. */
void weft__irq_sweep(void);

/* ---- Wait lists (waiter.c) ---------------------------------------------- */

void weft__waitq_push(struct weft__waiter **head, struct weft__waiter *w);
void weft__waitq_remove(struct weft__waiter **head, struct weft__waiter *w);

/* Decide whether the waker may complete w, just taken off its list (under its
 * primitive's lock). A plain waiter always; a claim waiter only if this call
 * wakes its owner: one whose park has ended another way (another case won,
 * the deadline passed, a cancellation) is dropped, and its owner, finding it
 * neither queued nor done, knows it lost. */
bool weft__waiter_claim(struct weft__waiter *w);

/* Pop the oldest waiter of head that may be completed (weft__waiter_claim),
 * dropping those that may not; NULL when none is left. */
struct weft__waiter *weft__waitq_take(struct weft__waiter **head);

/* The same, naming what it waits on (weft__park_begin_why). */
int weft__waiter_wait_why(weft__lock_t *lock, struct weft__waiter **head, struct weft__waiter *w,
			  int64_t deadline, const char *why);

/* ---- Time (time.c) ------------------------------------------------------
 * weft__now() is the runtime's clock: the shim's, or with the virtual clock
 * (WEFT_CFG_VIRTUAL_CLOCK) a counter that only moves when every worker is
 * idle, straight to the next deadline (sched.c, weft__sleep_idle). */
bool weft__vclock_on(void);
void weft__vclock_start(bool on);
/* Move the virtual clock forward to t (never back). */
void weft__vclock_set(int64_t t);

/* ---- Timers (timer.c) --------------------------------------------------- */

void weft__timer_arm(struct weft__fiber *f, uint32_t gen, int64_t deadline);
void weft__timer_disarm(struct weft__fiber *f);
/* Wake the fibers whose deadline has passed: the check for none armed
 * inline (every look for work makes it), the rest in timer.c. */
extern _Atomic int64_t weft__timer_deadline; /* the earliest armed, INT64_MAX: none */
void weft__timer_fire_due_slow(void);
static inline void weft__timer_fire_due(void)
{
	if (atomic_load_explicit(&weft__timer_deadline, memory_order_acquire) != INT64_MAX)
		weft__timer_fire_due_slow();
}
/* A look for work by w (weft__find_work): fire what is due, reading the
 * clock at every look or, where w's looks come quickly, at every 8th
 * (timer.c, docs/decisions/timer-checks.md). None armed: one load. */
void weft__timer_check(struct weft__worker *w);
static inline void weft__timer_look(struct weft__worker *w)
{
	if (atomic_load_explicit(&weft__timer_deadline, memory_order_relaxed) == INT64_MAX)
		return;
	w->timer_looks++;
	if (w->timer_skip)
		w->timer_skip--;
	else
		weft__timer_check(w);
}
/* w's next look reads the clock: a worker about to sleep, a host loop's
 * call (a timer due now is work, which a skipped look would miss). */
static inline void weft__timer_look_now(struct weft__worker *w) { w->timer_skip = 0; }
/* The earliest armed deadline, INT64_MAX when none. */
int64_t weft__timer_next(void);
/* Room in the heap for n fibers' deadlines: 0 or -ENOMEM. A spawn makes
 * room for every record there is (weft__fiber_nrecords, fibtab.c) before
 * its fiber can park; the check when there is room is one load. */
int weft__timer_reserve(size_t n);
extern _Atomic size_t weft__fiber_nrecords;
void weft__timer_reset(void);

/* ---- The reactor (reactor.c) and the helper threads (offload.c) -------- */

/* Somebody waits on a source: idle workers should poll. */
bool weft__io_pending(void);

/* Poll the shim once, up to deadline, and complete the waiters it reports.
 * idle: the calling idle worker (it can be interrupted by wake_worker), or
 * NULL for a poll that does not block. Returns false when there was nothing
 * to poll for or another worker holds the poll. */
bool weft__io_poll(int64_t deadline, struct weft__worker *idle);

/* A busy worker's look at the reactor, called every 64th look for work and
 * whenever its own queues are empty (weft__find_work): a poll that does not
 * block when fibers wait on I/O and nobody has polled for a while
 * (reactor.c), so readiness is seen under a CPU-bound load. One relaxed
 * load when nobody waits. */
void weft__io_tick(void);

void weft__io_reset(void);
void weft__offload_stop(void);

/* ---- Futures (future.c) ------------------------------------------------- */

void weft__future_init(struct weft__future *f);
int weft__future_settle(struct weft__future *f, int state, void *value, int error);
int weft__future_wait(struct weft__future *f, int64_t deadline, void **value);
/* The same, naming what it waits on for weft_dump ("future", "join"). */
int weft__future_wait_why(struct weft__future *f, int64_t deadline, void **value, const char *why);
/* A settled future's outcome: 0 and *value (value may be NULL), or its
 * rejection error. */
int weft__future_outcome(struct weft__future *f, void **value);

/* ---- Channels (chan.c), as select (select.c) sees them ------------------ */

/* The lock that guards c; held around each of the calls below. */
weft__lock_t *weft__chan_lock(weft_chan_t *c);
/* Send elem or receive into it without waiting: 0, -EPIPE, or -EAGAIN. */
int weft__chan_try(weft_chan_t *c, bool send, void *elem);
/* Queue w (w->data the element) as a sender or receiver, and take it off
 * again if no waker has (a waker that took it set it done or dropped it). */
void weft__chan_enqueue(weft_chan_t *c, bool send, struct weft__waiter *w);
void weft__chan_dequeue(weft_chan_t *c, bool send, struct weft__waiter *w);

/* ---- Fibers (fiber.c, fibtab.c, stack.c) -------------------------------- */

/* fibtab.c: a free record for a spawn on w (NULL: a plain thread), its
 * handle set, or NULL (-ENOMEM); count a spawn for weft_stats. */
struct weft__fiber *weft__fiber_record_get(struct weft__worker *w);
void weft__fiber_count_spawn(struct weft__worker *w);
void weft__fiber_unref(struct weft__fiber *f);
/* Drop n references at once. */
void weft__fiber_unref_n(struct weft__fiber *f, int n);
/* stack.c: before f first runs on w (its context's sp is NULL until then):
 * its stack, unless it has one of another size already, and its frame on
 * it, entering weft__rt.fiber_main; -ENOMEM when no stack could be had (f
 * is unchanged: the scheduler puts it on its starved list). Once f has
 * exited and is off its stack: the stack back to the pools. */
__attribute__((warn_unused_result)) int weft__stack_start(struct weft__worker *w,
							  struct weft__fiber *f);
void weft__stack_release(struct weft__worker *w, struct weft__fiber *f);
/* fiber.c: where every fiber starts (through weft__rt.fiber_main). */
void weft__fiber_main(void *arg);
/* weft_fiber_spawn_at for a fiber that will need its cold block (a
 * generator's): made at the spawn, where -ENOMEM can still be told. */
int weft__spawn_cold(weft_fiber_t *out, const weft_attr_t *attr, weft_fn fn, void *arg,
		     const char *file, int line);
/* The stacks the pools keep are of the common shape: the default size,
 * the guard of the first default-size stack the shim gave since weft_init
 * (stack.c), no tool id. A fiber's record keeps only the base of such a
 * stack. */
extern _Atomic size_t weft__stack_guard;
static inline bool weft__stack_common(const struct shim_stack *s)
{
	return s->size == weft__rt.stack_size && !s->tool_id &&
	       s->guard == atomic_load_explicit(&weft__stack_guard, memory_order_relaxed);
}
/* f's stack, whole. */
void weft__stack_of(const struct weft__fiber *f, struct shim_stack *out);
int weft__stack_get(struct weft__worker *w, size_t size, struct shim_stack *out);
/* Spawn of a default-size fiber: 0 if w's cache (with no w: the shared
 * tier) holds a stack or one could be put there, else -ENOMEM. */
int weft__stack_admit_slow(struct weft__worker *w);
static inline int weft__stack_admit(struct weft__worker *w)
{
	return w && w->ncached ? 0 : weft__stack_admit_slow(w);
}
void weft__stack_put(struct weft__worker *w, const struct shim_stack *s);
void weft__stack_cache_drain(struct weft__worker *w);
/* Called as a worker looks for work: if the shim ran out of stacks since
 * w last looked, w's cache goes to the shared tier, which is trimmed to
 * SHARED_KEEP (true: stacks went back). */
bool weft__stack_pressure(struct weft__worker *w);
/* A count that moves each time stacks go back where a first run looks for
 * one (weft__stack_cache_drain, weft__stack_trim). weft__stack_get stores
 * it in w->stack_returns before it looks beyond w's cache: a first run
 * refused while the count has moved since may find a stack now. The
 * other half is the returner's: weft__stacks_returned (starve.c). */
unsigned weft__stack_returns(void);
/* The shared tier keeps at most keep stacks; the shim gives back the pages
 * of those it pools (shim_stack_trim). */
void weft__stack_trim(unsigned keep);
/* Every worker is out of work: trim what a burst left. */
void weft__stack_idle(void);
/* weft_shutdown: every kept stack goes back to the shim. */
void weft__stack_reset(void);
size_t weft__name_fault(uintptr_t addr, char *buf, size_t cap);
void weft__fibers_reset(void);
/* A worker's cached fiber records go back to the shared pool (its thread's
 * end, or the shutdown of the host loop's worker). */
void weft__fiber_cache_drain(struct weft__worker *w);
uint64_t weft__fibers_spawned(void);
/* Call fn on every fiber that has a record (running, queued, parked, or
 * finished with a held handle), holding a reference across the call. */
void weft__fibers_each(void (*fn)(struct weft__fiber *f, void *ctx), void *ctx);
/* For the fault handler and interrupts: the record of the fiber h names
 * while it has one, or NULL. No lock, no reference, no allocation
 * (async-signal-safe), O(1). Records are never freed while the runtime
 * runs, so the result is readable, but it may be reused at any moment:
 * copy what is needed, then check its handle again (acquire). */
struct weft__fiber *weft__fiber_peek(weft_fiber_t h);
/* The fiber h names, with a reference (drop it with weft__fiber_unref), or
 * -ESRCH. owned: only while h is held (not joined or detached yet), for
 * join and detach; otherwise while the fiber is alive or finished and still
 * held (weft__fiber_named). */
int weft__fiber_lookup(weft_fiber_t h, bool owned, struct weft__fiber **out);
/* Whether f's value still names it: while its owner holds it, and for
 * anyone but the owner also while it has not finished (a joined fiber, or a
 * detached one that has finished, is gone even if its record lingers until
 * its worker lets go of it). */
static inline bool weft__fiber_named(struct weft__fiber *f, bool owned)
{
	if (atomic_load(&f->life) & FL_HELD)
		return true;
	return !owned && atomic_load_explicit(&f->done.state, memory_order_acquire) == FS_PENDING;
}
/* A weft_fiber_t is generation << WEFT__FIBER_SLOT_BITS | slot + 1. */
#define WEFT__FIBER_SLOT_BITS 23
/* Tests only: set the generation of the slot that h names, so that a
 * generation's wrap is reached without 2^40 spawns; the last generation a
 * slot may have. */
void weft__fiber_slot_age(weft_fiber_t h, uint64_t gen);
uint64_t weft__fiber_gen_last(void);

/* ---- Processes (mailbox.c) ---------------------------------------------- */

struct weft__mbox;
#define WEFT__MBOX_GONE ((struct weft__mbox *)1)
/* The exit path of fiber self, before its result settles: close and
 * unregister its mailbox, so that a send from then on fails with -ESRCH. */
void weft__mbox_exit(struct weft__fiber *self);

/* ---- Fiber context (fls.c, generator.c, supervise.c) -------------------- */

struct weft__fls;
/* The table a child spawned by parent (NULL: a plain thread) starts with,
 * by mode WEFT_FLS_*: 0 and *out (NULL = empty), or -ENOMEM. */
int weft__fls_inherit(struct weft__fiber *parent, unsigned mode, struct weft__fls **out);
/* Let go of a table (destructors of values it held last run here). */
void weft__fls_drop(struct weft__fls *t);
/* The exit path: the status self ends with (set, cancelled or ok); drops a
 * request not yet delivered and any hold, so the rest of the exit waits
 * as any code would. */
int weft__exit_status(struct weft__fiber *self);
/* The exit path: let go of self's table (its destructors run here). */
void weft__fls_exit(struct weft__fiber *self);
/* The exit path of a generator's fiber: its resumer sees the end. */
void weft__gen_exit(struct weft__fiber *self, void *result);
/* The exit path of a supervised fiber (after weft__mbox_exit): send its
 * weft_exit_t on its supervisor channel. */
void weft__supervise_exit(struct weft__fiber *self, void *result, int status);
/* chan.c: a channel's element size. */
size_t weft__chan_elem_size(weft_chan_t *c);

/* What spawn and exit run for the fiber context (hooks.c). fiber.c calls
 * it only through weft__rt.hooks, which weft_init sets, so the fiber core
 * does not depend on local storage, generators, mailboxes, supervisors and
 * channels, which depend on it (and on the scheduler, which depends on the
 * fiber core): the exit path is a table, not a circle of files. */
struct weft__hooks {
	/* attr->supervisor is a channel of weft_exit_t: 0 or -EINVAL. */
	int (*check_supervisor)(weft_chan_t *c);
	/* weft__fls_inherit and weft__fls_drop. */
	int (*fls_inherit)(struct weft__fiber *parent, unsigned mode, struct weft__fls **out);
	void (*fls_drop)(struct weft__fls *t);
	/* Everything a fiber's exit does before its result settles, in order:
	 * sets self->status, runs destructors, ends a generator, closes the
	 * mailbox, sends the supervisor report. */
	void (*exit)(struct weft__fiber *self, void *result);
};
extern const struct weft__hooks weft__fiber_hooks;

/* ---- The host loop (poll.c) --------------------------------------------- */

/* Run workers[0] on the calling plain thread: the fibers that are ready,
 * then, if none ran, wait up to deadline for some and run them. Returns the
 * number of fibers run, -EBUSY if another thread drives it. */
int weft__host_drive(int64_t deadline);

/* ---- Diagnostics (dump.c) and waking every worker (idle.c) -------------- */

/* Wake every worker from any context (an interrupt handler, a signal
 * handler): no locks, only stores and the shim's wake calls. */
void weft__kick_all(void);

/* SIGQUIT's action (shim_on_quit, installed by weft_init): weft_dump. */
void weft__dump_on_quit(void);
/* weft_init: a reference point (shim_now, arch_cycles) for converting the
 * park stamps to nanoseconds. */
void weft__dump_init(void);

/* ---- The stall detector (stall.c) ---------------------------------------
 * A monitor thread that samples each worker's running fiber, switch count
 * and look-around stamp, and reports a fiber that has held its worker for
 * threshold_ns of the worker thread's CPU time without a suspension point
 * (once per stall), to fn (NULL: the console). weft_init starts it once the
 * workers run (not with the host loop: no worker thread to sample);
 * weft_shutdown stops it before they stop. 0 or -errno. */
int weft__stall_start(int64_t threshold_ns, weft_dump_fn fn, void *ctx);
void weft__stall_stop(void);
/* Stalls reported on worker i since weft_init (weft_worker_stats). */
uint64_t weft__stall_count(unsigned i);

#endif
