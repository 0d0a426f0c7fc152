/* SPDX-License-Identifier: MIT */
/* White-box test of the Chase-Lev deque (runtime/deque.h): order, capacity,
 * index wrap-around, and one owner against three thieves losing nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#include "deque.h"

/* The smaller sizes: under the sanitizers (about 10x slower), and under
 * full-system emulation of a Linux kernel (WT_SLOW, set by
 * qemu/run-rv-kernel.sh), where the owner and thieves' threads share two
 * emulated harts: at full size the suite took 119 s of its 120 s there on a
 * loaded machine (2026-12-02). */
static int small(void) { return wt_sanitized() || getenv("WT_SLOW") != NULL; }

/* The deque never dereferences its elements: fake, non-NULL pointers. */
#define ITEM(i) ((struct weft__fiber *)(uintptr_t)(i))
#define NUM(p) ((uintptr_t)(p))

static struct weft__deque *new_deque(void)
{
	struct weft__deque *d = aligned_alloc(64, sizeof *d);
	assert_non_null(d);
	memset(d, 0, sizeof *d);
	return d;
}

static void test_take_steal_empty(void **state)
{
	(void)state;
	struct weft__deque *d = new_deque();
	assert_null(weft__deque_take(d));
	assert_null(weft__deque_steal(d));
	assert_int_equal(weft__deque_size(d), 0);
	/* Taking from an empty deque leaves it consistent. */
	assert_null(weft__deque_take(d));
	assert_int_equal(weft__deque_size(d), 0);
	assert_true(weft__deque_push(d, ITEM(1)));
	assert_ptr_equal(weft__deque_take(d), ITEM(1));
	assert_null(weft__deque_take(d));
	assert_null(weft__deque_steal(d));
	assert_true(weft__deque_push(d, ITEM(2)));
	assert_ptr_equal(weft__deque_steal(d), ITEM(2));
	assert_null(weft__deque_steal(d));
	assert_null(weft__deque_take(d));
	assert_int_equal(weft__deque_size(d), 0);
	free(d);
}

static void test_take_lifo(void **state)
{
	(void)state;
	struct weft__deque *d = new_deque();
	enum { N = 100 };
	for (uintptr_t i = 1; i <= N; i++)
		assert_true(weft__deque_push(d, ITEM(i)));
	assert_int_equal(weft__deque_size(d), N);
	for (uintptr_t i = N; i >= 1; i--)
		assert_int_equal(NUM(weft__deque_take(d)), i);
	assert_null(weft__deque_take(d));
	assert_int_equal(weft__deque_size(d), 0);
	free(d);
}

static void test_steal_fifo(void **state)
{
	(void)state;
	struct weft__deque *d = new_deque();
	enum { N = 100 };
	for (uintptr_t i = 1; i <= N; i++)
		assert_true(weft__deque_push(d, ITEM(i)));
	for (uintptr_t i = 1; i <= N; i++)
		assert_int_equal(NUM(weft__deque_steal(d)), i);
	assert_null(weft__deque_steal(d));
	assert_int_equal(weft__deque_size(d), 0);
	free(d);
}

/* Owner and thief ends together: steal the oldest, take the newest. */
static void test_take_and_steal_ends(void **state)
{
	(void)state;
	struct weft__deque *d = new_deque();
	for (uintptr_t i = 1; i <= 6; i++)
		assert_true(weft__deque_push(d, ITEM(i)));
	assert_int_equal(NUM(weft__deque_steal(d)), 1);
	assert_int_equal(NUM(weft__deque_take(d)), 6);
	assert_int_equal(NUM(weft__deque_steal(d)), 2);
	assert_int_equal(NUM(weft__deque_take(d)), 5);
	assert_int_equal(weft__deque_size(d), 2);
	assert_true(weft__deque_push(d, ITEM(7)));
	assert_int_equal(NUM(weft__deque_steal(d)), 3);
	assert_int_equal(NUM(weft__deque_steal(d)), 4);
	assert_int_equal(NUM(weft__deque_steal(d)), 7);
	assert_null(weft__deque_take(d));
	assert_null(weft__deque_steal(d));
	free(d);
}

static void test_push_full(void **state)
{
	(void)state;
	struct weft__deque *d = new_deque();
	for (uintptr_t i = 1; i <= WEFT_DEQUE_CAP; i++)
		assert_true(weft__deque_push(d, ITEM(i)));
	assert_int_equal(weft__deque_size(d), WEFT_DEQUE_CAP);
	assert_false(weft__deque_push(d, ITEM(9999)));
	assert_false(weft__deque_push(d, ITEM(9999)));
	assert_int_equal(weft__deque_size(d), WEFT_DEQUE_CAP);
	/* One take makes room for one push. */
	assert_int_equal(NUM(weft__deque_take(d)), WEFT_DEQUE_CAP);
	assert_true(weft__deque_push(d, ITEM(1000)));
	assert_false(weft__deque_push(d, ITEM(9999)));
	/* So does one steal (the slot freed is at the other end of the ring). */
	assert_int_equal(NUM(weft__deque_steal(d)), 1);
	assert_true(weft__deque_push(d, ITEM(1001)));
	assert_false(weft__deque_push(d, ITEM(9999)));
	assert_int_equal(weft__deque_size(d), WEFT_DEQUE_CAP);
	/* The full ring holds 2..CAP-1, 1000, 1001 in order. */
	for (uintptr_t i = 2; i < WEFT_DEQUE_CAP; i++)
		assert_int_equal(NUM(weft__deque_steal(d)), i);
	assert_int_equal(NUM(weft__deque_steal(d)), 1000);
	assert_int_equal(NUM(weft__deque_take(d)), 1001);
	assert_null(weft__deque_take(d));
	assert_null(weft__deque_steal(d));
	free(d);
}

static void test_size_tracks_contents(void **state)
{
	(void)state;
	struct weft__deque *d = new_deque();
	int64_t n = 0;
	for (uintptr_t i = 1; i <= 50; i++) {
		assert_true(weft__deque_push(d, ITEM(i)));
		assert_int_equal(weft__deque_size(d), ++n);
	}
	for (int i = 0; i < 20; i++) {
		assert_non_null(weft__deque_take(d));
		assert_int_equal(weft__deque_size(d), --n);
		assert_non_null(weft__deque_steal(d));
		assert_int_equal(weft__deque_size(d), --n);
	}
	while (weft__deque_take(d))
		n--;
	assert_int_equal(n, 0);
	assert_int_equal(weft__deque_size(d), 0);
	assert_null(weft__deque_take(d));
	assert_int_equal(weft__deque_size(d), 0); /* a failed take restores it */
	free(d);
}

/* Millions of operations: the indices pass the ring's end thousands of times
 * at every fill level, and the order stays right. */
static void test_indices_wrap(void **state)
{
	(void)state;
	struct weft__deque *d = new_deque();
	long rounds = small() ? 2000 : 20000; /* small(): 10x fewer */
	uintptr_t next = 1;
	long ops = 0;
	for (long r = 0; r < rounds; r++) {
		/* Fill to a level cycling through 1..CAP, then drain from both
		 * ends, checking the order. */
		int k = (int)(r % WEFT_DEQUE_CAP) + 1;
		uintptr_t first = next;
		for (int i = 0; i < k; i++)
			assert_true(weft__deque_push(d, ITEM(next++)));
		assert_int_equal(weft__deque_size(d), k);
		uintptr_t lo = first, hi = next - 1;
		while (lo <= hi) {
			if ((lo + hi + (uintptr_t)r) & 1) {
				assert_int_equal(NUM(weft__deque_take(d)), hi);
				hi--;
			} else {
				assert_int_equal(NUM(weft__deque_steal(d)), lo);
				lo++;
			}
		}
		assert_null(weft__deque_take(d));
		ops += 2 * k;
		/* A push/take pair leaves the indices where they were; a
		 * push/steal pair moves both ends one slot on. */
		for (int i = 0; i < 64; i++) {
			assert_true(weft__deque_push(d, ITEM(next)));
			assert_int_equal(NUM(weft__deque_take(d)), next);
			next++;
			assert_true(weft__deque_push(d, ITEM(next)));
			assert_int_equal(NUM(weft__deque_steal(d)), next);
			next++;
		}
		ops += 256;
	}
	assert_int_equal(weft__deque_size(d), 0);
	assert_true(ops > (small() ? 500000 : 5000000));
	/* Both ends went round the ring at least once per round. */
	assert_true(atomic_load(&d->top) / WEFT_DEQUE_CAP >= rounds / 4);
	assert_int_equal(atomic_load(&d->top), atomic_load(&d->bottom));
	free(d);
}

/* Indices far from zero (white-box: set both ends): the masking still works. */
static void test_large_indices(void **state)
{
	(void)state;
	struct weft__deque *d = new_deque();
	int64_t start = ((int64_t)1 << 40) - 3;
	atomic_store(&d->top, start);
	atomic_store(&d->bottom, start);
	assert_int_equal(weft__deque_size(d), 0);
	assert_null(weft__deque_take(d));
	assert_null(weft__deque_steal(d));
	for (uintptr_t i = 1; i <= WEFT_DEQUE_CAP; i++)
		assert_true(weft__deque_push(d, ITEM(i)));
	assert_false(weft__deque_push(d, ITEM(9999)));
	assert_int_equal(weft__deque_size(d), WEFT_DEQUE_CAP);
	for (uintptr_t i = 1; i <= 10; i++)
		assert_int_equal(NUM(weft__deque_steal(d)), i);
	for (uintptr_t i = WEFT_DEQUE_CAP; i > 10; i--)
		assert_int_equal(NUM(weft__deque_take(d)), i);
	assert_null(weft__deque_take(d));
	assert_null(weft__deque_steal(d));
	free(d);
}

/* ---- One owner, three thieves ------------------------------------------- */

enum { THIEVES = 3 };

struct shared {
	struct weft__deque *d;
	size_t n;
	_Atomic unsigned char *count; /* times item i was obtained, [1, n] */
	_Atomic int owner_done;
	_Atomic int thieves_started;
	_Atomic int out_of_range;
};

struct thief {
	struct shared *s;
	long stolen;
	long empty;
	int not_increasing; /* a thief's steals come in push order */
	int timed_out;
};

static void obtain(struct shared *s, struct weft__fiber *p)
{
	uintptr_t v = NUM(p);
	if (v < 1 || v > s->n) {
		atomic_fetch_add(&s->out_of_range, 1);
		return;
	}
	atomic_fetch_add_explicit(&s->count[v], 1, memory_order_relaxed);
}

static void *thief_main(void *arg)
{
	struct thief *t = arg;
	struct shared *s = t->s;
	uintptr_t last = 0;
	int64_t limit = wt_ms(60000);
	atomic_fetch_add(&s->thieves_started, 1);
	for (unsigned long i = 0;; i++) {
		struct weft__fiber *p = weft__deque_steal(s->d);
		if (p) {
			/* Non-NULL means an item: it must be one that was pushed. */
			obtain(s, p);
			if (NUM(p) <= last)
				t->not_increasing++;
			last = NUM(p);
			t->stolen++;
			continue;
		}
		t->empty++;
		if (atomic_load(&s->owner_done) && weft__deque_size(s->d) == 0)
			break;
		if ((i & 1023) == 0 && weft_now() > limit) {
			t->timed_out = 1;
			break;
		}
	}
	return NULL;
}

struct owner {
	struct shared *s;
	long taken;
	long full;
};

static void *owner_main(void *arg)
{
	struct owner *o = arg;
	struct shared *s = o->s;
	int64_t limit = wt_ms(10000);
	while (atomic_load(&s->thieves_started) < THIEVES && weft_now() < limit)
		wt_thread_yield();
	for (uintptr_t i = 1; i <= s->n; i++) {
		/* On a loaded machine the owner could do it all in one time
		 * slice: give the thieves a chance to run alongside. */
		if (i % 4096 == 0)
			wt_thread_yield();
		while (!weft__deque_push(s->d, ITEM(i))) {
			/* Full: make room from our end. */
			o->full++;
			struct weft__fiber *p = weft__deque_take(s->d);
			if (p) {
				obtain(s, p);
				o->taken++;
			}
		}
		if (i % 3 == 0) {
			struct weft__fiber *p = weft__deque_take(s->d);
			if (p) {
				obtain(s, p);
				o->taken++;
			}
		}
	}
	/* Drain what the thieves have not taken, racing them for it. */
	struct weft__fiber *p;
	while ((p = weft__deque_take(s->d))) {
		obtain(s, p);
		o->taken++;
	}
	atomic_store(&s->owner_done, 1);
	return NULL;
}

static void run_concurrent(size_t n, int verbose)
{
	struct shared s = {.d = new_deque(), .n = n};
	s.count = calloc(n + 1, sizeof *s.count);
	assert_non_null(s.count);
	struct thief t[THIEVES];
	wt_thread_t th[THIEVES], oth;
	struct owner o = {.s = &s};
	for (int i = 0; i < THIEVES; i++) {
		t[i] = (struct thief){.s = &s};
		th[i] = wt_thread_start(thief_main, &t[i]);
	}
	oth = wt_thread_start(owner_main, &o);
	wt_thread_join(oth);
	long stolen = 0;
	int not_increasing = 0, timed_out = 0;
	for (int i = 0; i < THIEVES; i++) {
		wt_thread_join(th[i]);
		stolen += t[i].stolen;
		not_increasing += t[i].not_increasing;
		timed_out += t[i].timed_out;
	}
	size_t lost = 0, dup = 0;
	for (size_t i = 1; i <= n; i++) {
		unsigned c = atomic_load(&s.count[i]);
		if (c == 0)
			lost++;
		else if (c > 1)
			dup++;
	}
	if (verbose)
		print_message("%zu items: owner took %ld (full %ld times), thieves stole %ld\n", n,
			      o.taken, o.full, stolen);
	assert_int_equal(timed_out, 0);
	assert_int_equal(atomic_load(&s.out_of_range), 0);
	assert_int_equal(lost, 0);
	assert_int_equal(dup, 0);
	assert_int_equal((size_t)(o.taken + stolen), n);
	assert_int_equal(not_increasing, 0);
	assert_int_equal(weft__deque_size(s.d), 0);
	assert_null(weft__deque_steal(s.d));
	free(s.count);
	free(s.d);
}

static void test_concurrent_owner_and_thieves(void **state)
{
	(void)state;
	/* small(): 200,000 items and 2 runs instead of 1,000,000 and 4. */
	size_t n = small() ? 200000 : 1000000;
	int runs = small() ? 2 : 4;
	for (int r = 0; r < runs; r++)
		run_concurrent(n, 1);
}

/* Small n, many runs: the last-element race between take and steal. */
static void test_concurrent_small_runs(void **state)
{
	(void)state;
	int runs = small() ? 20 : 200; /* small(): 10x fewer */
	for (int r = 0; r < runs; r++)
		run_concurrent(1000 + (size_t)r, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_take_steal_empty),
		cmocka_unit_test(test_take_lifo),
		cmocka_unit_test(test_steal_fifo),
		cmocka_unit_test(test_take_and_steal_ends),
		cmocka_unit_test(test_push_full),
		cmocka_unit_test(test_size_tracks_contents),
		cmocka_unit_test(test_indices_wrap),
		cmocka_unit_test(test_large_indices),
		cmocka_unit_test(test_concurrent_owner_and_thieves),
		cmocka_unit_test(test_concurrent_small_runs),
	};
	return WT_MAIN("deque", tests, NULL, NULL);
}
