/* SPDX-License-Identifier: MIT */
/* lwIP's memory: its heap and every pool are the C library's malloc
 * (MEM_LIBC_MALLOC, MEMP_MEM_MALLOC), through here, so that weft_net_stats
 * can say what lwIP holds and what it was refused, and tests can make
 * allocations fail. lwIP handles a failed allocation everywhere but in its
 * timeouts, which come from a static pool instead (net/patches/0003). */
#include <stdlib.h>

#include "lwip.h"

#include "lwip/timeouts.h"
#include "netif/ppp/ppp_opts.h" /* PPP_NUM_TIMEOUTS, in MEMP_NUM_SYS_TIMEOUT */

/* Blocks lwIP holds now, and the allocations that failed (each dropped a
 * frame, a segment or a connection). */
static _Atomic int64_t mem_blocks;
static _Atomic uint64_t mem_failed;
/* Tests: every fail_every-th allocation fails (0: none). */
static _Atomic unsigned fail_every;
static _Atomic unsigned fail_count;

static bool injected_failure(void)
{
	unsigned every = atomic_load_explicit(&fail_every, memory_order_relaxed);
	return every &&
	       atomic_fetch_add_explicit(&fail_count, 1, memory_order_relaxed) % every == every - 1;
}

static void *counted(void *p)
{
	if (p)
		atomic_fetch_add_explicit(&mem_blocks, 1, memory_order_relaxed);
	else
		atomic_fetch_add_explicit(&mem_failed, 1, memory_order_relaxed);
	return p;
}

void *weft__lwip_malloc(size_t size) { return counted(injected_failure() ? NULL : malloc(size)); }

void *weft__lwip_calloc(size_t n, size_t size)
{
	return counted(injected_failure() ? NULL : calloc(n, size));
}

void weft__lwip_fail_every(unsigned n)
{
	atomic_store(&fail_count, 0);
	atomic_store(&fail_every, n);
}

/* lwIP's timeouts (net/patches/0003), under the lwIP lock. lwIP never arms
 * more than MEMP_NUM_SYS_TIMEOUT at once (one per cyclic timer), so running
 * out would be a broken invariant: lwIP's assertion then says so. */
static struct sys_timeo timeo_pool[MEMP_NUM_SYS_TIMEOUT];
static struct sys_timeo *timeo_free;
static bool timeo_ready;

void *weft__lwip_timeout_alloc(void)
{
	if (!timeo_ready) {
		for (size_t i = 0; i < MEMP_NUM_SYS_TIMEOUT; i++)
			weft__lwip_timeout_free(&timeo_pool[i]);
		timeo_ready = true;
	}
	struct sys_timeo *t = timeo_free;
	if (t)
		timeo_free = t->next;
	return t;
}

void weft__lwip_timeout_free(void *p)
{
	struct sys_timeo *t = p;
	t->next = timeo_free;
	timeo_free = t;
}

void weft__lwip_free(void *p)
{
	if (p)
		atomic_fetch_sub_explicit(&mem_blocks, 1, memory_order_relaxed);
	free(p);
}

void weft__lwip_mem_stats(weft_net_stats_t *out)
{
	int64_t blocks = atomic_load_explicit(&mem_blocks, memory_order_relaxed);
	out->mem_blocks = blocks > 0 ? (uint64_t)blocks : 0;
	out->mem_failed = atomic_load_explicit(&mem_failed, memory_order_relaxed);
}
