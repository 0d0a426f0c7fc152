/* SPDX-License-Identifier: MIT */
/* The runtime's shared state (rt.c): weft__rt, the workers, and which
 * worker the calling thread drives. */
#ifndef WEFT_RT_H
#define WEFT_RT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch.h"
#include "shim.h"
#include "deque.h"
#include "lock.h"
#include "switch.h"

#if defined(__clang__)
#define WEFT_NOIPA __attribute__((noinline))
#else
#define WEFT_NOIPA __attribute__((noinline, noipa))
#endif

#define WEFT_MAX_WORKERS 16

struct weft__fiber;
struct weft__hooks;

struct weft__worker {
	struct weft__deque dq;
	struct weft__deque dq_hi; /* latency-sensitive fibers; the owner takes
				   * the oldest, as thieves do */
	int index;
	struct weft__ctx sched;           /* the scheduler loop on the thread stack */
	struct weft__fiber *cur;          /* running fiber, NULL in the scheduler */
	struct weft__fiber *prev;         /* the context we just left ... */
	int prev_act;                     /* ... and what to finish for it */
	weft__lock_t *held;               /* a wait list's lock the fiber parking
					   * with ACT_PARK_LOCKED holds across
					   * its switch (park.c) ... */
	bool io_owed;                     /* ... and an I/O look skipped for it */
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
	/* 1 + the index of the idle worker that looks at the busy workers'
	 * next-run slots every period (WEFT__MONITOR_NS up to _MAX_NS,
	 * idle.c), 0: none. While there is one, a hand-off into an empty
	 * slot wakes nobody. */
	_Atomic int monitor;
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

/* Make w the calling thread's worker (NULL: none); the host loop
 * (poll.c) borrows it. */
void weft__set_worker(struct weft__worker *w);

#endif
