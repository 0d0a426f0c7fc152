/* SPDX-License-Identifier: MIT */
/* Counting and failing allocations, for the suites linked with --wrap for
 * malloc, calloc, realloc, aligned_alloc, free and shim_stack_alloc (the
 * Makefile's ALLOC_WRAP): every allocation the runtime makes, lwIP's
 * included (net/lwip_mem.c calls malloc), goes through tests/allocwrap.c.
 * Any thread may allocate; the calls below are for the test's own thread. */
#ifndef WEFT_TESTS_ALLOCWRAP_H
#define WEFT_TESTS_ALLOCWRAP_H

#include <stdbool.h>

/* Count the allocations made from now on, from every thread, and fail the
 * one numbered fail_at (from 1; 0: none). */
void wt_alloc_arm(long fail_at);
/* Stop counting; the counts stay for the calls below. */
void wt_alloc_disarm(void);
/* Allocations seen while armed, and how many of them were failed (0 or 1). */
long wt_alloc_counted(void);
long wt_alloc_failed(void);
/* Where the failed allocation was called from (a return address: addr2line
 * names the site), or NULL. */
void *wt_alloc_failed_site(void);
/* Print the blocks allocated while last armed that are still live, with
 * where each was allocated from: a leak report's first clue. */
void wt_alloc_report_live(void);
/* Stacks asked of the shim (shim_stack_alloc), counted since the process
 * started, armed or not. */
long wt_alloc_stacks(void);
/* Fail the next stack asked of the shim, whoever asks. */
void wt_alloc_fail_next_stack(void);
/* From now on the shim gives a stack only while fewer than n more than now
 * are out (given and not freed), as memory that n stacks fill would; -1
 * lifts the limit. */
void wt_alloc_stack_room(long n);
/* Call fn(arg) on each thread the shim refuses a stack to for want of that
 * room, before the refusal returns, so that a test can hold the thread
 * there while another one moves (NULL: none). */
void wt_alloc_on_stack_refused(void (*fn)(void *), void *arg);
/* Ask fail(0) at each allocation (malloc, calloc, realloc, aligned_alloc),
 * fail(1) at each shim_stack_alloc, armed or not, and fail those it says
 * to (NULL: none). The simulator's faults (runtime/sim_fault.c, the rates
 * of WEFT_SIM_FAULTS) call it: fail must not allocate. */
void wt_alloc_fail_hook(bool (*fail)(int stack));
/* Blocks allocated and not yet freed, counted since the process started. */
long wt_alloc_live(void);
/* Under ASan, LeakSanitizer's check now (it prints what it finds): 1 if a
 * block is unreachable, else 0; 0 without ASan. Sound only where no fiber
 * is alive (LeakSanitizer does not scan fiber stacks). */
int wt_alloc_leak_check(void);

#endif
