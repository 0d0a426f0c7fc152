/* SPDX-License-Identifier: MIT */
/* Deterministic simulation (sim.c, docs/decisions/simulation.md): the only
 * place in runtime/ and net/ that looks at WEFT_SIM, a build switch (not an
 * OS or CPU one). libweft.a is built without it: SIM_POINT is nothing,
 * SIM_DRAW is the expression the code had, and the shim's calls are the
 * shim's, so its objects are the same instructions as before. libweft-sim.a
 * is built from the same sources with -DWEFT_SIM=1: the shim's thread,
 * wait and clock calls go to sim.c, which runs every worker and every
 * shim_thread_start thread as an actor on the one calling OS thread and
 * draws, from one seed, which actor runs at each point. */
#ifndef WEFT_SIM_H
#define WEFT_SIM_H

#include <stdatomic.h>
#include <stdint.h>

#include "shim.h"
#include "sim_shim.h"

/* What a point or a draw is, for the schedule's digest. */
enum weft__sim_kind {
	SIM_FIND_WORK = 1, /* sched.c, weft__find_work's entry */
	SIM_WAIT,          /* a shim_wait that sleeps */
	SIM_YIELD,         /* shim_thread_yield */
	SIM_WAKE_TIMEOUT,  /* every actor waits: the earliest deadline ends */
	SIM_SELECT_SEED,   /* select.c's generator seeded (once per thread) */
	/* Slice 2's points and draws (the table of simulation.md). */
	SIM_READY,        /* sched.c weft__ready: published, before the wake */
	SIM_READY_NEXT,   /* sched.c weft__ready_next: published, before the wake */
	SIM_FINISH_PARK,  /* sched.c finish_switch: before PARKING -> PARKED */
	SIM_FINISH_YIELD, /* sched.c finish_switch: queued, before the idle look */
	SIM_IDLE_JOINED,  /* idle.c weft__sleep_idle: on the idle list */
	SIM_IDLE_LOOK,    /* idle.c weft__sleep_idle: before work_visible */
	SIM_IDLE_WAIT,    /* idle.c weft__sleep_idle: before the wait */
	SIM_WAKE_ONE,     /* idle.c weft__wake_one_fenced: after its reads */
	SIM_UNPARK,       /* park.c weft__unpark: before the CAS */
	SIM_THREAD_PARK,  /* park.c thread_park: read PARKING, before the wait */
	SIM_STARVE,       /* starve.c weft__starve: listed, before the look */
	SIM_STACKS_BACK,  /* starve.c weft__stacks_returned: before the fence */
	SIM_INBOX_PUSH,   /* pin.c inbox_push: pushed, before the wake */
	SIM_TIMER_ARM,    /* timer.c weft__timer_arm: armed, before the kick */
	SIM_SPIN_END,     /* worker.c: the spin ended empty, before the baton */
	SIM_LOOK_AROUND,  /* draw, sched.c find_bulk: an extra look_around */
	SIM_STREAK,       /* draw, sched.c find_bulk: the next-run streak goes on */
	SIM_PINNED_FIRST, /* draw, sched.c look_around: pinned before global */
	SIM_GRACE,        /* draw, steal.c steal_runnext: the grace has not passed */
	SIM_SLOT_LOOK,    /* draw, steal.c weft__steal: not a slot look */
	SIM_SPIN,         /* draw, worker.c: the spin looks again */
	SIM_STEAL_SEED,   /* draw, worker.c: the worker's steal generator */
	SIM_TIMER_ORDER,  /* draw, timer.c fire_heap: which of a due instant's first */
};

#if WEFT_SIM

/* 1: this is libweft-sim.a. */
#define WEFT__SIM_BUILD 1

/* The simulator may run another actor here. */
void weft__sim_point(enum weft__sim_kind kind);
/* A value below n drawn from the seed (the simulation is on), else dflt. */
uint64_t weft__sim_draw(uint64_t n, enum weft__sim_kind kind, uint64_t dflt);
#define SIM_POINT(kind) weft__sim_point(kind)
#define SIM_DRAW(n, kind, dflt) weft__sim_draw((n), (kind), (dflt))
/* A point of a worker's (NULL: a plain thread's) path, skipped while a
 * fiber parking on it holds its wait list's lock (w->held): the real code
 * makes that stretch up to the release without a look elsewhere
 * mattering, and an actor switched out there leaves every other actor
 * that wants the lock spinning (SIM_FIND_WORK's rule). */
#define SIM_POINT_UNHELD(w, kind)                        \
	do {                                             \
		const struct weft__worker *sim_w_ = (w); \
		if (!sim_w_ || !sim_w_->held)            \
			weft__sim_point(kind);           \
	} while (0)
/* sim_expr in a simulation build, dflt in the plain one. */
#define SIM_CHOOSE(sim_expr, dflt) (sim_expr)
/* A generator's state (never 0) seeded from the seed, else left as it is. */
#define SIM_SEED(var, kind) ((var) = weft__sim_draw(UINT64_MAX, (kind), (var)-1) + 1)
/* The actors' per-thread state (sim.c carries it at each switch): a plain
 * thread's stand-in fiber (park.c) and select.c's generator, one per
 * actor; outside a simulation the thread's own. tests/sim/tls.sh fails
 * when a _Thread_local of runtime/ or net/ is not carried. */
struct weft__fiber *weft__sim_thread_self(struct weft__fiber *tls);
uint64_t *weft__sim_select_rng(uint64_t *tls);
#define SIM_THREAD_SELF(tls) weft__sim_thread_self(tls)
#define SIM_SELECT_RNG(tls) weft__sim_select_rng(tls)

/* Whether an actor that is no worker (a plain thread: the one that called
 * weft_init, a shim_thread_start thread) is runnable, that is between two
 * of its waits: busy, as a worker with a fiber is, so the virtual clock
 * must not move (idle.c). False without a simulation. */
bool weft__sim_threads_run(void);

/* weft_init with a seed: the next shim_thread_start threads are actors, the
 * clock is the simulator's. */
void weft__sim_start(uint64_t seed);

/* The shim's threads, waits and clock as the simulator runs them: in
 * seam/sim_shim.h, which net/ reaches too (lock.h's yield). */

#else

#define WEFT__SIM_BUILD 0
#define SIM_POINT(kind) ((void)0)
#define SIM_DRAW(n, kind, dflt) (dflt)
#define SIM_POINT_UNHELD(w, kind) ((void)0)
#define SIM_CHOOSE(sim_expr, dflt) (dflt)
#define SIM_SEED(var, kind) ((void)0)
#define SIM_THREAD_SELF(tls) (tls)
#define SIM_SELECT_RNG(tls) (tls)
#define weft__sim_start(seed) ((void)(seed))

#endif

/* ---- Faults (slice 4; sim_fault.c) -------------------------------------
 * The faults' kinds, names and rates, and the draws the simulated wire
 * (net/sim_wire.c) makes, are in seam/sim_fault.h, which net/ reaches. */
#include "sim_fault.h"

#if WEFT_SIM
/* weft_init with a seed, before it sets anything up: the rates and each
 * fault's stream. -EINVAL when an allocation or stack rate is set in a
 * program not linked with tests/allocwrap.c's hook. */
int weft__sim_fault_start(uint64_t seed, const struct weft__sim_faults *f);
/* weft_init's last step with a seed: the faults fire from now on (what
 * weft_init allocated itself, its workers' stacks too, is spared). */
void weft__sim_fault_arm(void);
/* At a point of the schedule (sim.c's weft__sim_point): the cancellation
 * and interrupt actor. */
void weft__sim_fault_point(enum weft__sim_kind kind);
/* The rates set, "alloc=1,stack=10" ("" for none), into buf. */
void weft__sim_fault_words(char *buf, size_t size);
/* The run ended: no more faults, and a line of how many fired. */
void weft__sim_fault_stop(void);
#else
#define weft__sim_fault_start(seed, f) ((void)(seed), (void)(f), 0)
#define weft__sim_fault_arm() ((void)0)
#endif

#endif
