/* SPDX-License-Identifier: MIT */
/* malloc's contract, on every target: alignment, contents kept by realloc,
 * calloc's zeroes and its overflow, aligned allocations, refusals. On bare
 * metal the allocator is the shim's own (kernel-shim/bare/malloc.c,
 * docs/decisions/bare-malloc.md), and these tests also check its lists
 * after every step of a random workload (shim_malloc_check) and that
 * blocks freed next to each other merge; on Linux they test the C
 * library's, and those checks skip. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#if !WT_LINUX
#include <malloc.h>
int shim_malloc_check(void); /* kernel-shim/bare/malloc.c */
#define BARE 1
#else
static int shim_malloc_check(void) { return 0; }
#define BARE 0
#endif

/* Sizes no heap holds, out of the compiler's sight (it refuses them). */
static volatile size_t half_max = SIZE_MAX / 2, near_max = SIZE_MAX - 4;

static uint64_t rng = 0x9e3779b97f4a7c15u;
static uint32_t draw(uint32_t n)
{
	rng = rng * 6364136223846793005u + 1442695040888963407u;
	return (uint32_t)(rng >> 33) % n;
}

static void fill(unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)(seed + i * 7);
}

static int filled(const unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != (unsigned char)(seed + i * 7))
			return 0;
	return 1;
}

/* Every size from 0 to 2 KiB: 16-aligned, writable to its end, distinct. */
static void test_sizes_aligned(void **state)
{
	(void)state;
	enum { N = 2049 };
	static unsigned char *p[N];
	for (size_t n = 0; n < N; n++) {
		p[n] = malloc(n);
		assert_non_null(p[n]);
		assert_int_equal((uintptr_t)p[n] % 16, 0);
		fill(p[n], n, (unsigned)n);
	}
	for (size_t n = 0; n < N; n++) {
		assert_true(filled(p[n], n, (unsigned)n));
		free(p[n]);
	}
	free(NULL);
	assert_int_equal(shim_malloc_check(), 0);
}

/* realloc keeps what the block held, growing (in place when the next block
 * is free, moved when not) and shrinking; realloc(NULL) is malloc. */
static void test_realloc_keeps(void **state)
{
	(void)state;
	unsigned char *p = realloc(NULL, 40);
	assert_non_null(p);
	fill(p, 40, 1);
	for (size_t n = 64; n <= 64 * 1024; n *= 2) {
		unsigned char *q = realloc(p, n);
		assert_non_null(q);
		assert_true(filled(q, n / 2 < 40 ? 40 : n / 2, 1));
		fill(q, n, 1);
		p = q;
		/* A block right after it: the next growth must move. */
		void *wall = malloc(24);
		assert_non_null(wall);
		unsigned char *r = realloc(p, n + 100);
		assert_non_null(r);
		assert_true(filled(r, n, 1));
		free(wall);
		p = r;
		assert_int_equal(shim_malloc_check(), 0);
	}
	unsigned char *s = realloc(p, 10);
	assert_non_null(s);
	assert_true(filled(s, 10, 1));
	free(s);
	assert_int_equal(shim_malloc_check(), 0);
}

/* calloc zeroes, also in memory freed dirty; a product that overflows is
 * refused (not under a sanitizer, which reports it instead). */
static void test_calloc_zeroes(void **state)
{
	(void)state;
	unsigned char *d = malloc(4096);
	assert_non_null(d);
	memset(d, 0xa5, 4096);
	free(d);
	unsigned char *z = calloc(512, 8);
	assert_non_null(z);
	for (size_t i = 0; i < 4096; i++)
		assert_int_equal(z[i], 0);
	free(z);
	if (!wt_sanitized()) { /* a sanitizer reports the overflow and stops */
		errno = 0;
		assert_null(calloc(half_max, 4));
		assert_int_equal(errno, ENOMEM);
	}
	assert_int_equal(shim_malloc_check(), 0);
}

/* aligned_alloc and posix_memalign: the alignment asked, up to a page;
 * an alignment that is not a power of two is refused (not checked under a
 * sanitizer, which reports it instead). */
static void test_aligned(void **state)
{
	(void)state;
	void *keep[64];
	int k = 0;
	for (size_t a = 32; a <= 4096; a *= 2) {
		for (size_t n = 1; n <= 3000; n += 997) {
			unsigned char *p = aligned_alloc(a, (n + a - 1) / a * a);
			assert_non_null(p);
			assert_int_equal((uintptr_t)p % a, 0);
			fill(p, n, (unsigned)a);
			void *q = NULL;
			assert_int_equal(posix_memalign(&q, a, n), 0);
			assert_non_null(q);
			assert_int_equal((uintptr_t)q % a, 0);
			assert_true(filled(p, n, (unsigned)a));
			keep[k++] = p;
			keep[k++] = q;
			assert_int_equal(shim_malloc_check(), 0);
		}
	}
	while (k > 0)
		free(keep[--k]);
	if (!wt_sanitized()) { /* a sanitizer reports a bad alignment and stops */
		void *q = &q;
		assert_int_equal(posix_memalign(&q, 24, 10), EINVAL);
		assert_int_equal(posix_memalign(&q, 4, 10), EINVAL);
		assert_ptr_equal(q, &q); /* untouched */
	}
	assert_int_equal(shim_malloc_check(), 0);
}

/* A size no heap holds is refused with ENOMEM, and the heap is whole
 * after it. (Not under a sanitizer, whose allocator reports such a size
 * instead of returning NULL.) */
static void test_too_big(void **state)
{
	(void)state;
	if (wt_sanitized())
		skip();
	errno = 0;
	assert_null(malloc(half_max));
	assert_int_equal(errno, ENOMEM);
	errno = 0;
	assert_null(malloc(near_max));
	assert_int_equal(errno, ENOMEM);
	errno = 0;
	assert_null(aligned_alloc(half_max / 2 + 1, 64)); /* 2^62: the room it needs */
	assert_int_equal(errno, ENOMEM);
	unsigned char *p = malloc(100);
	assert_non_null(p);
	fill(p, 100, 3);
	unsigned char *volatile kept = p; /* realloc's refusal leaves it the caller's */
	errno = 0;
	assert_null(realloc(p, near_max));
	assert_int_equal(errno, ENOMEM);
	assert_true(filled(kept, 100, 3));
	free(kept);
	assert_int_equal(shim_malloc_check(), 0);
}

/* A random workload of 20,000 steps over 512 slots (sizes from 1 byte to
 * 6 KiB, most small, as lwIP's are; malloc, free and realloc), each
 * block's contents checked when it goes, and on bare metal the lists after
 * every 97 steps. */
static void test_random_workload(void **state)
{
	(void)state;
	enum { SLOTS = 512, STEPS = 20000 };
	static unsigned char *p[SLOTS];
	static size_t len[SLOTS];
	for (unsigned i = 0; i < STEPS; i++) {
		unsigned s = draw(SLOTS);
		if (p[s]) {
			assert_true(filled(p[s], len[s], s));
			if (draw(4) == 0) {
				size_t n = 1 + draw(draw(8) ? 300 : 6000);
				unsigned char *q = realloc(p[s], n);
				assert_non_null(q);
				assert_true(filled(q, n < len[s] ? n : len[s], s));
				fill(q, n, s);
				p[s] = q;
				len[s] = n;
			} else {
				free(p[s]);
				p[s] = NULL;
			}
		} else {
			len[s] = 1 + draw(draw(8) ? 300 : 6000);
			p[s] = malloc(len[s]);
			assert_non_null(p[s]);
			assert_int_equal((uintptr_t)p[s] % 16, 0);
			fill(p[s], len[s], s);
		}
		if (i % 97 == 0)
			assert_int_equal(shim_malloc_check(), 0);
	}
	for (unsigned s = 0; s < SLOTS; s++) {
		if (p[s]) {
			assert_true(filled(p[s], len[s], s));
			free(p[s]);
			p[s] = NULL;
		}
	}
	assert_int_equal(shim_malloc_check(), 0);
}

/* Bare metal: blocks freed next to each other merge, so after 4,000 blocks
 * of mixed sizes are freed in a shuffled order the free blocks are no more
 * than before (plus the one a growth of the heap may add), and a block as
 * large as all of them together comes without the heap growing. */
static void test_freed_neighbours_merge(void **state)
{
	(void)state;
#if BARE
	enum { N = 4000 };
	static void *p[N];
	static unsigned order[N];
	struct mallinfo before = mallinfo();
	size_t total = 0;
	for (unsigned i = 0; i < N; i++) {
		size_t n = 16 + draw(400);
		p[i] = malloc(n);
		assert_non_null(p[i]);
		total += n;
		order[i] = i;
	}
	struct mallinfo grown = mallinfo();
	for (unsigned i = N - 1; i > 0; i--) {
		unsigned j = draw(i + 1), t = order[i];
		order[i] = order[j];
		order[j] = t;
	}
	for (unsigned i = 0; i < N; i++)
		free(p[order[i]]);
	struct mallinfo after = mallinfo();
	assert_int_equal(shim_malloc_check(), 0);
	assert_true(after.ordblks <= before.ordblks + 1);
	assert_int_equal(after.uordblks, before.uordblks);
	void *big = malloc(total / 2); /* without merging, 400 B at most */
	assert_non_null(big);
	assert_int_equal(mallinfo().arena, grown.arena);
	free(big);
	assert_int_equal(shim_malloc_check(), 0);
#else
	skip(); /* the C library's allocator: its merging is its own */
#endif
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sizes_aligned),
		cmocka_unit_test(test_realloc_keeps),
		cmocka_unit_test(test_calloc_zeroes),
		cmocka_unit_test(test_aligned),
		cmocka_unit_test(test_too_big),
		cmocka_unit_test(test_random_workload),
		cmocka_unit_test(test_freed_neighbours_merge),
	};
	return WT_MAIN("malloc", tests, NULL, NULL);
}
