/* SPDX-License-Identifier: MIT */
/* The kernel-shim contract: everything the runtime needs from a kernel.
 * kernel-shim/linux/ implements it with syscalls; a bare-metal shim implements
 * it on arch/ and board/. The runtime calls nothing OS-specific but these. */
#ifndef WEFT_SHIM_H
#define WEFT_SHIM_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* ---- Guarded stacks ----------------------------------------------------
 * A stack is [base, base + size), with an inaccessible guard region of at
 * least one page directly below base: an overflow faults instead of
 * corrupting memory. Stacks of one size are carved from large slabs so that
 * many thousands of them cost a handful of kernel mappings. */
struct shim_stack {
	void *base;
	size_t size;
	size_t guard; /* bytes of guard below base */
};

/* Round a requested stack size up to what shim_stack_alloc would give. */
size_t shim_stack_round(size_t size);

/* Any thread. Returns 0, -EINVAL (size 0 or above 1 GiB), -ENOMEM. */
int shim_stack_alloc(size_t size, struct shim_stack *out);

/* Any thread. The stack goes back to a pool of its size for reuse. */
void shim_stack_free(const struct shim_stack *s);

/* How guard pages are made here, for diagnostics and tests: "madvise" (no
 * extra kernel mappings), "mprotect" (two mappings per stack), or another
 * shim's word. Valid after the first shim_stack_alloc. */
const char *shim_stack_guard_method(void);

/* ---- Time --------------------------------------------------------------- */

/* Monotonic nanoseconds since an arbitrary origin; never negative. */
int64_t shim_now(void);

/* ---- Threads and waiting ------------------------------------------------ */

typedef struct shim_thread *shim_thread_t;

/* Number of CPUs (harts) the process may run on, at least 1. */
unsigned shim_cpu_count(void);

/* Start fn(arg) on a new thread. 0, -EAGAIN, -ENOMEM. */
int shim_thread_start(shim_thread_t *out, void (*fn)(void *), void *arg);

/* Wait for the thread to return and free it. */
void shim_thread_join(shim_thread_t t);

/* Give the CPU to another thread for a moment. */
void shim_thread_yield(void);

/* Sleep while *word == expected, until shim_wake or the absolute deadline
 * (shim_now() time; -1 forever). Returns 0 when woken or when *word differed,
 * -ETIMEDOUT at the deadline. May return 0 spuriously: callers re-check. */
int shim_wait(_Atomic uint32_t *word, uint32_t expected, int64_t deadline);

/* Wake up to n threads sleeping in shim_wait on word. */
void shim_wake(_Atomic uint32_t *word, int n);

/* ---- Environment, console, faults --------------------------------------- */

/* The value of a configuration variable, or NULL. */
const char *shim_getenv(const char *name);

/* Write to the diagnostic console (stderr). Async-signal-safe. */
void shim_console_write(const char *s, size_t n);

/* Called from the fault handler (no locks, no allocation, no stdio) with the
 * faulting address. Writes a description of the overflowing fiber into buf
 * and returns its length, or returns 0 if addr is not in a guard region. */
typedef size_t (*shim_fault_namer)(uintptr_t addr, char *buf, size_t cap);

/* Install the overflow handler once per process. 0 or -errno. */
int shim_fault_init(shim_fault_namer namer);

/* Give the calling thread its own fault-handling stack. 0 or -errno. */
int shim_fault_thread_init(void);

/* Release the calling thread's fault-handling stack (before it exits). */
void shim_fault_thread_fini(void);

#endif
