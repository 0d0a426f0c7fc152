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

/* What a point or a draw is, for the schedule's digest. */
enum weft__sim_kind {
	SIM_FIND_WORK = 1, /* sched.c, weft__find_work's entry */
	SIM_WAIT,          /* a shim_wait that sleeps */
	SIM_YIELD,         /* shim_thread_yield */
	SIM_WAKE_TIMEOUT,  /* every actor waits: the earliest deadline ends */
	SIM_SELECT_SEED,   /* select.c's generator seeded (once per thread) */
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

/* weft_init with a seed: the next shim_thread_start threads are actors, the
 * clock is the simulator's. */
void weft__sim_start(uint64_t seed);

/* The shim's calls, as the simulator runs them (each is the shim's own
 * while no simulation runs). */
int weft__sim_wait(_Atomic uint32_t *word, uint32_t expected, int64_t deadline);
void weft__sim_wake(_Atomic uint32_t *word, int n);
int64_t weft__sim_now(void);
int weft__sim_thread_start(shim_thread_t *out, void (*fn)(void *), void *arg);
void weft__sim_thread_join(shim_thread_t t);
void weft__sim_thread_yield(void);
#define shim_wait weft__sim_wait
#define shim_wake weft__sim_wake
#define shim_now weft__sim_now
#define shim_thread_start weft__sim_thread_start
#define shim_thread_join weft__sim_thread_join
#define shim_thread_yield weft__sim_thread_yield

#else

#define WEFT__SIM_BUILD 0
#define SIM_POINT(kind) ((void)0)
#define SIM_DRAW(n, kind, dflt) (dflt)
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
