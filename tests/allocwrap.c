/* SPDX-License-Identifier: MIT */
/* The wrappers behind allocwrap.h: each allocation is counted while armed,
 * the chosen one fails, and blocks alive are counted all along. */
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>

#include "allocwrap.h"
#include "shim.h"

#if defined(__SANITIZE_ADDRESS__) && __has_include(<sanitizer/lsan_interface.h>)
#include <sanitizer/lsan_interface.h>
#define HAVE_LSAN 1
#endif

void *__real_malloc(size_t n);
void *__real_calloc(size_t k, size_t n);
void *__real_realloc(void *p, size_t n);
void *__real_aligned_alloc(size_t a, size_t n);
void __real_free(void *p);
int __real_shim_stack_alloc(size_t size, struct shim_stack *out);

static _Atomic int armed;    /* count (and maybe fail) allocations now */
static _Atomic long counted; /* allocations seen while armed */
static _Atomic long fail_at; /* fail the counted allocation with this number; 0: none */
static _Atomic long failed;  /* how many were failed */
static _Atomic long live;    /* blocks allocated and not freed, all along */

/* A C library may build one call on another (picolibc's calloc calls
 * malloc): only the outermost is counted. */
static _Thread_local int inside;

/* Whether this allocation is the one to fail. */
static bool inject(void)
{
	if (!atomic_load(&armed))
		return false;
	long k = atomic_fetch_add(&counted, 1) + 1;
	if (k != atomic_load(&fail_at))
		return false;
	atomic_fetch_add(&failed, 1);
	return true;
}

void *__wrap_malloc(size_t n)
{
	if (inside)
		return __real_malloc(n);
	inside = 1;
	void *p = inject() ? NULL : __real_malloc(n);
	if (p)
		atomic_fetch_add(&live, 1);
	inside = 0;
	return p;
}

void *__wrap_calloc(size_t k, size_t n)
{
	if (inside)
		return __real_calloc(k, n);
	inside = 1;
	void *p = inject() ? NULL : __real_calloc(k, n);
	if (p)
		atomic_fetch_add(&live, 1);
	inside = 0;
	return p;
}

void *__wrap_aligned_alloc(size_t a, size_t n)
{
	if (inside)
		return __real_aligned_alloc(a, n);
	inside = 1;
	void *p = inject() ? NULL : __real_aligned_alloc(a, n);
	if (p)
		atomic_fetch_add(&live, 1);
	inside = 0;
	return p;
}

void *__wrap_realloc(void *old, size_t n)
{
	if (inside)
		return __real_realloc(old, n);
	inside = 1;
	void *p = NULL; /* failed: old stays as it was, as realloc leaves it */
	if (!inject() && (p = __real_realloc(old, n)) && !old)
		atomic_fetch_add(&live, 1);
	inside = 0;
	return p;
}

void __wrap_free(void *p)
{
	if (inside) {
		__real_free(p);
		return;
	}
	inside = 1;
	if (p)
		atomic_fetch_sub(&live, 1);
	__real_free(p);
	inside = 0;
}

static _Atomic long stacks;    /* shim_stack_alloc calls, all along */
static _Atomic int fail_stack; /* fail the next shim_stack_alloc */

int __wrap_shim_stack_alloc(size_t size, struct shim_stack *out)
{
	atomic_fetch_add(&stacks, 1);
	if (atomic_exchange(&fail_stack, 0))
		return -ENOMEM;
	return inject() ? -ENOMEM : __real_shim_stack_alloc(size, out);
}

long wt_alloc_stacks(void) { return atomic_load(&stacks); }
void wt_alloc_fail_next_stack(void) { atomic_store(&fail_stack, 1); }

void wt_alloc_arm(long n)
{
	atomic_store(&counted, 0);
	atomic_store(&failed, 0);
	atomic_store(&fail_at, n);
	atomic_store(&armed, 1);
}

void wt_alloc_disarm(void) { atomic_store(&armed, 0); }
long wt_alloc_counted(void) { return atomic_load(&counted); }
long wt_alloc_failed(void) { return atomic_load(&failed); }
long wt_alloc_live(void) { return atomic_load(&live); }

int wt_alloc_leak_check(void)
{
#ifdef HAVE_LSAN
	return __lsan_do_recoverable_leak_check() != 0;
#else
	return 0;
#endif
}
