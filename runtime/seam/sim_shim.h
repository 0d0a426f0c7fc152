/* SPDX-License-Identifier: MIT */
/* The shim's threads, waits and clock as the deterministic simulator runs
 * them (runtime/sim.c, docs/decisions/simulation.md), for runtime/ (through
 * runtime/sim.h) and for net/, which includes runtime/seam/ but never
 * runtime/sim.h. Every file that calls these shim functions in
 * libweft-sim.a must see this mapping after shim.h: lock.h's spin yields
 * through it, so a lock held by an actor the simulator switched out is
 * waited for by running that actor, not by the OS's sched_yield on the
 * simulation's one thread, which would spin for ever.
 *
 * Like sim.h, this looks at WEFT_SIM, a build switch (not an OS or CPU
 * one): in libweft.a it is empty (tests/sim/zero-cost.sh). Each call is
 * the shim's own while no simulation runs. */
#ifndef WEFT_SEAM_SIM_SHIM_H
#define WEFT_SEAM_SIM_SHIM_H

#include <stdatomic.h>
#include <stdint.h>

#include "shim.h"

#if WEFT_SIM
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
#endif

#endif
