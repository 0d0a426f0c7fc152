/* SPDX-License-Identifier: MIT */
/* lwIP's memory: its heap and every pool are the C library's malloc
 * (MEM_LIBC_MALLOC, MEMP_MEM_MALLOC), through here, so that weft_net_stats
 * can say what lwIP holds and what it was refused, tests can make
 * allocations fail, and lwIP holds no more than its budget of bytes
 * (WEFT_NET_MEM_KB): where lwIP and the runtime share bounded memory (bare
 * metal), a flood of connections or frames runs lwIP out of its share, not
 * the runtime out of memory. lwIP handles a failed allocation everywhere
 * but in its timeouts, which come from a static pool instead
 * (net/patches/0003). */
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "lwip.h"

#include "lwip/timeouts.h"
#include "netif/ppp/ppp_opts.h" /* PPP_NUM_TIMEOUTS, in MEMP_NUM_SYS_TIMEOUT */

/* WEFT_NET_MEM_KB's range, and the share of a bounded heap lwIP may hold
 * when it is unset (docs/decisions/lwip-memory-budget.md): a quarter of
 * what bare metal's heap and pages share. */
#define BUDGET_KB_MIN 16ul
#define BUDGET_KB_MAX (1ul << 30) /* 1 TiB */
#define HEAP_SHARE_DIV 4

/* The budget's tiers (docs/decisions/lwip-memory-budget.md, "Tiers"): a
 * received frame may take the whole budget; every other allocation
 * (segments to send, PCBs, a listener's new connection) stops an eighth
 * short of it, so lwIP can always take in the acknowledgements that free
 * its segments in flight. And a listener admits a new connection only
 * while the connections it admitted and the program has not closed number
 * fewer than three quarters of the budget over CONN_RESERVE ("Admission by
 * count"): what a connection holds in lwIP with a small message waiting
 * each way (its PCB, about 250 bytes with the header; a received segment
 * kept at its size, weft__ltcp_fit; a segment sent and not yet
 * acknowledged). The count, not the bytes held, decides, so a load the
 * stack has held is never refused for the frames and segments that
 * happen to be in flight when a connection comes; the quarter beyond the
 * reserves is for bigger messages and bursts. */
#define RX_RESERVE_DIV 8
#define ACCEPT_DIV 4
#define CONN_RESERVE 576

/* Each block starts with its size, in a header as large as malloc's
 * alignment, so that what lwIP gets is aligned as malloc's own blocks. */
#define HEAD (_Alignof(max_align_t) > sizeof(size_t) ? _Alignof(max_align_t) : sizeof(size_t))

/* Bytes lwIP holds now (its blocks and their headers), the most it held
 * since a test last asked, the budget (SIZE_MAX: none); blocks it holds,
 * and the allocations that failed (each dropped a frame, a segment or a
 * connection). */
static _Atomic size_t mem_bytes, mem_peak;
static _Atomic size_t budget = SIZE_MAX;
static _Atomic int64_t mem_blocks;
static _Atomic uint64_t mem_failed;
/* Connections admitted and not yet let go (weft__lwip_conn_admit); a test's
 * limit instead of the budget's (-1: none). */
static _Atomic long conns_admitted;
static _Atomic long conn_limit_set = -1;
/* Set while rx_main allocates a frame (the receive tier), under the lwIP
 * lock; relaxed, as every allocation is made under that lock. */
static _Atomic bool rx_alloc;
/* Tests: every fail_every-th allocation fails (0: none). */
static _Atomic unsigned fail_every;
static _Atomic unsigned fail_count;

static bool injected_failure(void)
{
	unsigned every = atomic_load_explicit(&fail_every, memory_order_relaxed);
	return every &&
	       atomic_fetch_add_explicit(&fail_count, 1, memory_order_relaxed) % every == every - 1;
}

/* Take n bytes of the budget, or refuse: the count never goes above it,
 * even for a moment, so mem_peak is what lwIP really held at most. */
static bool reserve(size_t n)
{
	size_t limit = atomic_load_explicit(&budget, memory_order_relaxed);
	if (limit != SIZE_MAX && !atomic_load_explicit(&rx_alloc, memory_order_relaxed))
		limit -= limit / RX_RESERVE_DIV;
	size_t held = atomic_load_explicit(&mem_bytes, memory_order_relaxed);
	do {
		if (held > limit || n > limit - held)
			return false;
	} while (!atomic_compare_exchange_weak_explicit(
		&mem_bytes, &held, held + n, memory_order_relaxed, memory_order_relaxed));
	size_t peak = atomic_load_explicit(&mem_peak, memory_order_relaxed);
	while (held + n > peak &&
	       !atomic_compare_exchange_weak_explicit(&mem_peak, &peak, held + n,
						      memory_order_relaxed, memory_order_relaxed))
		;
	return true;
}

/* size bytes for lwIP, zeroed if zero is set; NULL (counted) when a test
 * says so, the budget is spent or malloc has nothing. */
static void *take(size_t size, bool zero)
{
	size_t n = HEAD + size;
	char *b = NULL;
	if (size <= SIZE_MAX - HEAD && !injected_failure() && reserve(n)) {
		b = zero ? calloc(1, n) : malloc(n);
		if (!b)
			atomic_fetch_sub_explicit(&mem_bytes, n, memory_order_relaxed);
	}
	if (!b) {
		atomic_fetch_add_explicit(&mem_failed, 1, memory_order_relaxed);
		return NULL;
	}
	memcpy(b, &n, sizeof n);
	atomic_fetch_add_explicit(&mem_blocks, 1, memory_order_relaxed);
	return b + HEAD;
}

void *weft__lwip_malloc(size_t size) { return take(size, false); }

void *weft__lwip_calloc(size_t n, size_t size)
{
	if (size && n > SIZE_MAX / size) {
		atomic_fetch_add_explicit(&mem_failed, 1, memory_order_relaxed);
		return NULL;
	}
	return take(n * size, true);
}

void weft__lwip_free(void *p)
{
	if (!p)
		return;
	char *b = (char *)p - HEAD;
	size_t n;
	memcpy(&n, b, sizeof n);
	atomic_fetch_sub_explicit(&mem_bytes, n, memory_order_relaxed);
	atomic_fetch_sub_explicit(&mem_blocks, 1, memory_order_relaxed);
	free(b);
}

int weft__lwip_mem_config(void)
{
	const char *s = shim_getenv("WEFT_NET_MEM_KB");
	size_t limit = SIZE_MAX;
	if (s && *s) {
		unsigned long kb;
		if (weft__parse_ulong(s, BUDGET_KB_MIN, BUDGET_KB_MAX, &kb))
			return weft__lwip_refuse(-EINVAL,
						 "WEFT_NET_MEM_KB=%.40s: not a whole number from "
						 "%lu to %lu (KiB)",
						 s, (unsigned long)BUDGET_KB_MIN,
						 (unsigned long)BUDGET_KB_MAX);
		limit = (size_t)kb * 1024;
	} else if (shim_heap_size()) {
		limit = shim_heap_size() / HEAP_SHARE_DIV;
	}
	atomic_store(&budget, limit);
	return 0;
}

void weft__lwip_fail_every(unsigned n)
{
	atomic_store(&fail_count, 0);
	atomic_store(&fail_every, n);
}

size_t weft__lwip_budget(void) { return atomic_load(&budget); }

void weft__lwip_set_budget(size_t bytes) { atomic_store(&budget, bytes); }

void weft__lwip_mem_rx(bool on) { atomic_store_explicit(&rx_alloc, on, memory_order_relaxed); }

long weft__lwip_conn_limit(void)
{
	long set = atomic_load_explicit(&conn_limit_set, memory_order_relaxed);
	if (set >= 0)
		return set;
	size_t limit = atomic_load_explicit(&budget, memory_order_relaxed);
	if (limit == SIZE_MAX)
		return LONG_MAX;
	size_t n = (limit - limit / ACCEPT_DIV) / CONN_RESERVE;
	return n > LONG_MAX ? LONG_MAX : (long)n;
}

void weft__lwip_set_conn_limit(long n) { atomic_store(&conn_limit_set, n); }

bool weft__lwip_conn_admit(void)
{
	long n = atomic_load_explicit(&conns_admitted, memory_order_relaxed);
	if (n < weft__lwip_conn_limit()) {
		atomic_store_explicit(&conns_admitted, n + 1, memory_order_relaxed);
		return true;
	}
	atomic_fetch_add_explicit(&mem_failed, 1, memory_order_relaxed);
	return false;
}

void weft__lwip_conn_gone(void)
{
	atomic_fetch_sub_explicit(&conns_admitted, 1, memory_order_relaxed);
}

long weft__lwip_conns_admitted(void) { return atomic_load(&conns_admitted); }

size_t weft__lwip_block_bytes(const void *p)
{
	size_t n;
	memcpy(&n, (const char *)p - HEAD, sizeof n);
	return n;
}

size_t weft__lwip_mem_held(size_t *peak)
{
	size_t now = atomic_load(&mem_bytes);
	if (peak)
		*peak = atomic_exchange(&mem_peak, now);
	return now;
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

void weft__lwip_mem_stats(weft_net_stats_t *out)
{
	int64_t blocks = atomic_load_explicit(&mem_blocks, memory_order_relaxed);
	out->mem_blocks = blocks > 0 ? (uint64_t)blocks : 0;
	out->mem_failed = atomic_load_explicit(&mem_failed, memory_order_relaxed);
}
