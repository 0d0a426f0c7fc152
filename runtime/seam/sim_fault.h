/* SPDX-License-Identifier: MIT */
/* The simulator's faults (runtime/sim_fault.c, docs/decisions/simulation.md),
 * the part net/ sees: net/ includes runtime/seam/, never runtime/sim.h, and
 * the simulated wire (net/sim_wire.c) draws its drops, duplicates,
 * delays and partitions here. runtime/sim.h includes this for the runtime's side.
 *
 * Like sim.h, this looks at WEFT_SIM, a build switch (not an OS or CPU
 * one): in libweft.a WEFT__SIM_WIRE is 0, so net/'s `if (WEFT__SIM_WIRE
 * ...)` is folded away and its objects are the same instructions as
 * without the wire (tests/sim/zero-cost.sh); net/sim_wire.c is left out of
 * libweft.a by the Makefile, as runtime/sim.c is. */
#ifndef WEFT_SEAM_SIM_FAULT_H
#define WEFT_SEAM_SIM_FAULT_H

#include <stdbool.h>
#include <stdint.h>

/* WEFT_SIM_FAULTS (weft_config_t.sim_faults): each fault's rate, per mille,
 * parsed by weft_init in every build (libweft.a to refuse them). Each fault
 * draws from a stream of its own, split from the seed, so turning one on
 * does not shift the schedule's draws or another fault's. */
enum weft__sim_fault {
	SIM_FAULT_ALLOC,  /* malloc and the rest fail (tests/allocwrap.c's hook) */
	SIM_FAULT_STACK,  /* shim_stack_alloc refuses (the same hook) */
	SIM_FAULT_CANCEL, /* weft_fiber_cancel to a live fiber, at a point */
	SIM_FAULT_INTR,   /* weft_fiber_interrupt to a live fiber, at a point */
	SIM_FAULT_DROP,   /* a frame on lwIP's loop netif is lost (net/sim_wire.c) */
	SIM_FAULT_DUP,    /* a frame is delivered twice */
	SIM_FAULT_DELAY,  /* a frame is held 1 to 20 ms (later ones overtake it) */
	SIM_FAULT_PART,   /* a pair of simulated hosts is cut for a while */
	SIM_FAULT_KINDS,
};
#define SIM_FAULT_WIRE_FIRST SIM_FAULT_DROP
#define SIM_FAULT_NAME(k)                     \
	((k) == SIM_FAULT_ALLOC    ? "alloc"  \
	 : (k) == SIM_FAULT_STACK  ? "stack"  \
	 : (k) == SIM_FAULT_CANCEL ? "cancel" \
	 : (k) == SIM_FAULT_INTR   ? "intr"   \
	 : (k) == SIM_FAULT_DROP   ? "drop"   \
	 : (k) == SIM_FAULT_DUP    ? "dup"    \
	 : (k) == SIM_FAULT_DELAY  ? "delay"  \
				   : "part")
#define SIM_FAULT_RATE_MAX 1000
struct weft__sim_faults {
	uint16_t rate[SIM_FAULT_KINDS]; /* per mille; 0: off */
};

#if WEFT_SIM

/* 1: this is libweft-sim.a, whose net/ has the simulated wire. */
#define WEFT__SIM_WIRE 1

/* Fault k's rate (per mille) while faults are armed (from weft_init's
 * return to the run's end), else 0: with drop, dup, delay or part above 0
 * the loopback queues' frames go through the simulated wire. */
unsigned weft__sim_fault_rate(enum weft__sim_fault k);
/* Whether fault k fires now: a draw from k's stream when its rate is set
 * and faults are armed (weft_init has returned), counted for the run's
 * faults line; a rate of 0 draws nothing. */
bool weft__sim_fault_fire(enum weft__sim_fault k);
/* A value below n (n > 0) from fault k's stream (what a fault that fired
 * does: a delay's length). */
uint64_t weft__sim_fault_value(enum weft__sim_fault k, uint64_t n);
/* What fault k did once more (a partition: a frame it cut), for the run's
 * faults line. */
void weft__sim_fault_note(enum weft__sim_fault k);
/* Nonzero under a seed: a value derived from it, the same at each call
 * (lwIP's generator's seed); 0 when no simulation runs. */
uint64_t weft__sim_net_seed(void);

#else

#define WEFT__SIM_WIRE 0
#define weft__sim_fault_rate(k) ((void)(k), 0u)
#define weft__sim_fault_fire(k) ((void)(k), false)
#define weft__sim_fault_value(k, n) ((void)(k), (uint64_t)0 * (n))
#define weft__sim_fault_note(k) ((void)(k))
#define weft__sim_net_seed() ((uint64_t)0)

#endif

#endif
