/* SPDX-License-Identifier: MIT */
/* The kernel-shim's guarded stacks: sizes, reuse, guard pages that really
 * fault, and many stacks without running out of kernel mappings. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shim.h"
#include "testutil.h"

#if WT_LINUX
/* A write() from an unreadable page fails with EFAULT instead of crashing. */
static int readable(const void *p)
{
	int fds[2];
	if (pipe(fds) != 0)
		return -1;
	int ok = write(fds[1], p, 1) == 1;
	close(fds[0]);
	close(fds[1]);
	return ok;
}
#else
/* Bare metal: ask the Sv39 tables (kernel-shim/bare/vm.c). */
int shim_vm_mapped(uintptr_t va);
static int readable(const void *p) { return shim_vm_mapped((uintptr_t)p); }
#endif

static void test_alloc_bad_sizes(void **state)
{
	(void)state;
	struct shim_stack s;
	assert_int_equal(shim_stack_alloc(0, &s), -EINVAL);
	assert_int_equal(shim_stack_alloc(((size_t)1 << 30) + 1, &s), -EINVAL);
	assert_int_equal(shim_stack_alloc(4096, NULL), -EINVAL);
}

static void test_alloc_rounds_to_pages(void **state)
{
	(void)state;
	struct shim_stack s;
	assert_int_equal(shim_stack_alloc(5000, &s), 0);
	assert_int_equal(s.size, shim_stack_round(5000));
	assert_true(s.size >= 5000 && s.size % 4096 == 0);
	assert_true(s.guard >= 4096);
	shim_stack_free(&s);
}

static void test_guard_faults_stack_usable(void **state)
{
	(void)state;
	size_t sizes[] = {64 * 1024, 16 * 1024, 300 * 1024};
	for (size_t i = 0; i < 3; i++) {
		struct shim_stack s;
		assert_int_equal(shim_stack_alloc(sizes[i], &s), 0);
		memset(s.base, 0xa5, s.size); /* every byte usable */
		assert_int_equal(readable((char *)s.base + s.size - 1), 1);
		assert_int_equal(readable(s.base), 1);
		/* The page below the stack is the guard. */
		assert_int_equal(readable((char *)s.base - 1), 0);
		assert_int_equal(readable((char *)s.base - s.guard), 0);
		shim_stack_free(&s);
	}
}

static void test_stacks_disjoint_and_reused(void **state)
{
	(void)state;
	enum { N = 200 };
	struct shim_stack s[N];
	for (int i = 0; i < N; i++) {
		assert_int_equal(shim_stack_alloc(64 * 1024, &s[i]), 0);
		memset(s[i].base, i, s[i].size);
	}
	for (int i = 0; i < N; i++) {
		/* No other stack overwrote this one. */
		unsigned char *p = s[i].base;
		assert_int_equal(p[0], (unsigned char)i);
		assert_int_equal(p[s[i].size - 1], (unsigned char)i);
		for (int j = i + 1; j < N; j++) {
			char *a = (char *)s[i].base - s[i].guard,
			     *ae = (char *)s[i].base + s[i].size;
			char *b = (char *)s[j].base - s[j].guard,
			     *be = (char *)s[j].base + s[j].size;
			assert_true(ae <= b || be <= a);
		}
	}
	void *first = s[0].base;
	for (int i = 0; i < N; i++)
		shim_stack_free(&s[i]);
	/* Freed stacks are reused before new memory is mapped. */
	int reused = 0;
	for (int i = 0; i < N; i++) {
		assert_int_equal(shim_stack_alloc(64 * 1024, &s[i]), 0);
		reused |= s[i].base == first;
	}
	assert_true(reused);
	for (int i = 0; i < N; i++)
		shim_stack_free(&s[i]);
}

/* VmRSS in KiB, -1 where there is no /proc. */
static long rss_kb(void)
{
#if WT_LINUX
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kb = -1;
	while (f && fgets(line, sizeof line, f))
		if (strncmp(line, "VmRSS:", 6) == 0)
			kb = atol(line + 6);
	if (f)
		fclose(f);
	return kb;
#else
	return -1;
#endif
}

/* Freed stacks beyond a few give their memory back when the shim is asked
 * to trim (weft's workers ask as they go to sleep): afterwards nothing is
 * due, and the stacks are usable again (bare metal maps fresh pages). On
 * x86_64 Linux, which runs natively here (qemu-user runs the other Linux
 * targets and need not pass MADV_DONTNEED on to the host), and without a
 * sanitizer or valgrind, whose own memory moves the figure, the resident
 * set drops by at least half of what the freed stacks held. */
static void test_trim_gives_pages_back(void **state)
{
	(void)state;
	enum { N = 256, TOUCH = 32 * 1024 };
	static struct shim_stack s[N];
	shim_stack_trim(); /* what earlier tests left */
	assert_false(shim_stack_trim_due());
	for (int i = 0; i < N; i++) {
		assert_int_equal(shim_stack_alloc(64 * 1024, &s[i]), 0);
		memset((char *)s[i].base + s[i].size - TOUCH, 0x5a, TOUCH);
	}
	long before = rss_kb();
	for (int i = 0; i < N; i++)
		shim_stack_free(&s[i]);
	assert_true(shim_stack_trim_due());
	shim_stack_trim();
	assert_false(shim_stack_trim_due());
	long after = rss_kb();
	for (int i = 0; i < N; i++) {
		assert_int_equal(shim_stack_alloc(64 * 1024, &s[i]), 0);
		unsigned char *top = (unsigned char *)s[i].base + s[i].size - TOUCH;
		memset(top, i & 0xff, TOUCH);
		assert_int_equal(top[0], i & 0xff);
		assert_int_equal(top[TOUCH - 1], i & 0xff);
	}
	for (int i = 0; i < N; i++)
		shim_stack_free(&s[i]);
	shim_stack_trim();
	print_message("resident: %ld KiB with %d stacks touched, %ld KiB once trimmed\n", before, N,
		      after);
#if WT_LINUX && defined(__x86_64__) && !defined(WEFT_VALGRIND)
	if (!wt_sanitized())
		assert_true(before - after >= (long)(N - 64) * (TOUCH / 1024) / 2);
#endif
}

#if WT_LINUX
static int count_mappings(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	if (!f)
		return -1;
	int n = 0, c;
	while ((c = fgetc(f)) != EOF)
		n += c == '\n';
	fclose(f);
	return n;
}

/* 100,000 guarded stacks must not run into vm.max_map_count (65,530): with
 * MADV_GUARD_INSTALL they cost a few dozen mappings. Where only the mprotect
 * fallback works (qemu-user ignores the madvise) each stack costs two, so the
 * count is not checked there and the test says so. */
static void test_many_stacks_few_mappings(void **state)
{
	(void)state;
	struct shim_stack probe;
	assert_int_equal(shim_stack_alloc(64 * 1024, &probe), 0);
	shim_stack_free(&probe);
	int madvise = strcmp(shim_stack_guard_method(), "madvise") == 0;
	int n = madvise && !wt_sanitized() ? 100000 : 20000;
	struct shim_stack *s = calloc((size_t)n, sizeof *s);
	assert_non_null(s);
	int before = count_mappings();
	for (int i = 0; i < n; i++) {
		assert_int_equal(shim_stack_alloc(64 * 1024, &s[i]), 0);
		*((volatile char *)s[i].base + s[i].size - 1) = 1; /* touch the top page */
	}
	int after = count_mappings();
	assert_int_equal(readable((char *)s[n / 2].base - 1), 0);
	for (int i = 0; i < n; i++)
		shim_stack_free(&s[i]);
	free(s);
	if (!madvise) {
		print_message("guard method is %s here: %d stacks, mapping count not checked\n",
			      shim_stack_guard_method(), n);
		skip();
	}
	assert_true(after - before < 1000);
}
#else
static void test_many_stacks_few_mappings(void **state)
{
	(void)state;
	print_message("bare metal: stacks are Sv39 pages, no kernel mappings to count\n");
	skip();
}
#endif

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_alloc_bad_sizes),
		cmocka_unit_test(test_alloc_rounds_to_pages),
		cmocka_unit_test(test_guard_faults_stack_usable),
		cmocka_unit_test(test_stacks_disjoint_and_reused),
		cmocka_unit_test(test_trim_gives_pages_back),
		cmocka_unit_test(test_many_stacks_few_mappings),
	};
	return WT_MAIN("stack", tests, NULL, NULL);
}
