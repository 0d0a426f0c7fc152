/* SPDX-License-Identifier: MIT */
/* The wrappers behind allocwrap.h: each allocation is counted while armed,
 * the chosen one fails, and blocks alive are counted all along. */
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
void __real_shim_stack_free(const struct shim_stack *s);

static _Atomic int armed;       /* count (and maybe fail) allocations now */
static _Atomic long counted;    /* allocations seen while armed */
static _Atomic long fail_at;    /* fail the counted allocation with this number; 0: none */
static _Atomic long failed;     /* how many were failed */
static _Atomic long live;       /* blocks allocated and not freed, all along */
static void *_Atomic fail_site; /* where the failed allocation was called from */

/* The blocks allocated while armed and not yet freed, with where each was
 * allocated from, for wt_alloc_report_live: open addressing on the block's
 * address, cleared at each arming. A full table drops the rest (said in
 * the report). */
#define TRACK 4096
#define GONE ((void *)1) /* a freed entry: the probe goes on past it */
static struct {
	void *p, *site;
} track[TRACK];
static atomic_flag track_lock = ATOMIC_FLAG_INIT;
static bool track_full;

static unsigned track_hash(void *p)
{
	return (unsigned)(((uintptr_t)p >> 4) * 2654435761u) % TRACK;
}

static void track_lock_take(void)
{
	while (atomic_flag_test_and_set_explicit(&track_lock, memory_order_acquire))
		;
}

static void track_add(void *p, void *site)
{
	track_lock_take();
	unsigned i = track_hash(p), n = 0;
	while (track[i].p && track[i].p != GONE && n++ < TRACK)
		i = (i + 1) % TRACK;
	if (n < TRACK) {
		track[i].p = p;
		track[i].site = site;
	} else {
		track_full = true;
	}
	atomic_flag_clear_explicit(&track_lock, memory_order_release);
}

static void track_del(void *p)
{
	track_lock_take();
	unsigned i = track_hash(p);
	for (unsigned n = 0; track[i].p && n < TRACK; n++, i = (i + 1) % TRACK)
		if (track[i].p == p) {
			track[i].p = GONE;
			break;
		}
	atomic_flag_clear_explicit(&track_lock, memory_order_release);
}

/* A block allocated by the wrapper called from site. */
static void allocated(void *p, void *site)
{
	atomic_fetch_add(&live, 1);
	if (atomic_load(&armed))
		track_add(p, site);
}

/* A C library may build one call on another (picolibc's calloc calls
 * malloc): only the outermost is counted. */
static _Thread_local int inside;

/* A failer of its own (the simulator's, wt_alloc_fail_hook): asked at each
 * allocation, armed or not, whether to fail it. */
static bool (*_Atomic fail_hook)(int stack);

static bool hooked(int stack)
{
	bool (*fn)(int) = atomic_load(&fail_hook);
	return fn && fn(stack);
}

void wt_alloc_fail_hook(bool (*fail)(int stack)) { atomic_store(&fail_hook, fail); }

/* Whether this allocation, called from site, is the one to fail. */
static bool inject_at(void *site)
{
	if (!atomic_load(&armed))
		return false;
	long k = atomic_fetch_add(&counted, 1) + 1;
	if (k != atomic_load(&fail_at))
		return false;
	atomic_store(&fail_site, site);
	atomic_fetch_add(&failed, 1);
	return true;
}
#define CALLER __builtin_return_address(0)

void *__wrap_malloc(size_t n)
{
	if (inside)
		return __real_malloc(n);
	inside = 1;
	void *p = inject_at(CALLER) || hooked(0) ? NULL : __real_malloc(n);
	if (p)
		allocated(p, CALLER);
	inside = 0;
	return p;
}

void *__wrap_calloc(size_t k, size_t n)
{
	if (inside)
		return __real_calloc(k, n);
	inside = 1;
	void *p = inject_at(CALLER) || hooked(0) ? NULL : __real_calloc(k, n);
	if (p)
		allocated(p, CALLER);
	inside = 0;
	return p;
}

void *__wrap_aligned_alloc(size_t a, size_t n)
{
	if (inside)
		return __real_aligned_alloc(a, n);
	inside = 1;
	void *p = inject_at(CALLER) || hooked(0) ? NULL : __real_aligned_alloc(a, n);
	if (p)
		allocated(p, CALLER);
	inside = 0;
	return p;
}

void *__wrap_realloc(void *old, size_t n)
{
	if (inside)
		return __real_realloc(old, n);
	inside = 1;
	void *p = NULL; /* failed: old stays as it was, as realloc leaves it */
	if (!inject_at(CALLER) && !hooked(0) && (p = __real_realloc(old, n))) {
		if (!old)
			allocated(p, CALLER);
		else if (p != old && atomic_load(&armed)) {
			track_del(old);
			track_add(p, CALLER);
		}
	}
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
	if (p) {
		atomic_fetch_sub(&live, 1);
		if (atomic_load(&armed))
			track_del(p);
	}
	__real_free(p);
	inside = 0;
}

static _Atomic long stacks;                /* shim_stack_alloc calls, all along */
static _Atomic int fail_stack;             /* fail the next shim_stack_alloc */
static _Atomic long stacks_out;            /* given by the shim and not freed */
static _Atomic long stacks_cap = -1;       /* refused beyond this many out; -1: none */
static void (*_Atomic refused_fn)(void *); /* called at each refusal for the cap */
static void *_Atomic refused_arg;

int __wrap_shim_stack_alloc(size_t size, struct shim_stack *out)
{
	atomic_fetch_add(&stacks, 1);
	if (atomic_exchange(&fail_stack, 0))
		return -ENOMEM;
	/* Its place among those out is taken first: two threads cannot
	 * both have the last one. */
	long was = atomic_fetch_add(&stacks_out, 1);
	long cap = atomic_load(&stacks_cap);
	bool full = cap >= 0 && was >= cap;
	int r = full || inject_at(CALLER) || hooked(1) ? -ENOMEM
						       : __real_shim_stack_alloc(size, out);
	if (r)
		atomic_fetch_sub(&stacks_out, 1);
	void (*fn)(void *) = full ? atomic_load(&refused_fn) : NULL;
	if (fn)
		fn(atomic_load(&refused_arg));
	return r;
}

void __wrap_shim_stack_free(const struct shim_stack *s)
{
	atomic_fetch_sub(&stacks_out, 1);
	__real_shim_stack_free(s);
}

long wt_alloc_stacks(void) { return atomic_load(&stacks); }

void wt_alloc_on_stack_refused(void (*fn)(void *), void *arg)
{
	atomic_store(&refused_arg, arg);
	atomic_store(&refused_fn, fn);
}
void wt_alloc_fail_next_stack(void) { atomic_store(&fail_stack, 1); }

void wt_alloc_stack_room(long n)
{
	atomic_store(&stacks_cap, n < 0 ? -1 : atomic_load(&stacks_out) + n);
}

void wt_alloc_arm(long n)
{
	track_lock_take();
	memset(track, 0, sizeof track);
	track_full = false;
	atomic_flag_clear_explicit(&track_lock, memory_order_release);
	atomic_store(&counted, 0);
	atomic_store(&failed, 0);
	atomic_store(&fail_site, NULL);
	atomic_store(&fail_at, n);
	atomic_store(&armed, 1);
}

void wt_alloc_disarm(void) { atomic_store(&armed, 0); }
long wt_alloc_counted(void) { return atomic_load(&counted); }
long wt_alloc_failed(void) { return atomic_load(&failed); }
long wt_alloc_live(void) { return atomic_load(&live); }
void *wt_alloc_failed_site(void) { return atomic_load(&fail_site); }

void wt_alloc_report_live(void)
{
	track_lock_take();
	for (unsigned i = 0; i < TRACK; i++)
		if (track[i].p && track[i].p != GONE)
			printf("  block %p, allocated from %p, still live\n", track[i].p,
			       track[i].site);
	if (track_full)
		printf("  (more: the table of %d was full)\n", TRACK);
	atomic_flag_clear_explicit(&track_lock, memory_order_release);
}

int wt_alloc_leak_check(void)
{
#ifdef HAVE_LSAN
	return __lsan_do_recoverable_leak_check() != 0;
#else
	return 0;
#endif
}
