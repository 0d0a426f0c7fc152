/* SPDX-License-Identifier: MIT */
/* Invariants of the runtime's own records that no public call shows: the
 * worker array's alignment, and that a handle is never issued twice, even
 * when a slot's 32-bit generation would wrap (reached through a test hook
 * instead of 2^32 spawns). */
#include <string.h>

#include "internal.h"
#include "testutil.h"

/* The deque's fields are aligned to 64 bytes (a cache line each, against
 * false sharing): every worker record must be too. */
static void test_workers_aligned(void **state)
{
	(void)state;
	assert_non_null(weft__rt.workers);
	for (unsigned i = 0; i < weft__rt.nworkers; i++) {
		uintptr_t a = (uintptr_t)&weft__rt.workers[i];
		print_message("worker %u at %#lx (%lu mod 64)\n", i, (unsigned long)a,
			      (unsigned long)(a % 64));
		assert_int_equal(a % 64, 0);
		assert_int_equal((uintptr_t)&weft__rt.workers[i].dq.bottom % 64, 0);
	}
}

static weft_sem_t *gate;

static void *wait_gate(void *arg)
{
	(void)arg;
	weft_sem_acquire(gate, -1);
	return NULL;
}

#define KEEP 64

/* A slot whose generation is about to wrap is retired: the handle its next
 * generation would give (the first one that slot ever gave) names nothing,
 * and no later fiber gets that slot. */
static void test_stale_handle_after_generation_wrap(void **state)
{
	(void)state;
	weft_attr_t attr = {.stack_size = 16 * 1024};
	weft_fiber_t f, kept[KEEP];
	assert_int_equal(weft_sem_create(&gate, 0), 0);
	assert_int_equal(weft_fiber_spawn(&f, &attr, wait_gate, NULL), 0);
	/* The last generation: when f is freed, the next would be 0. */
	weft__fiber_slot_age(f, weft__fiber_gen_last());
	const uint64_t mask = (UINT64_C(1) << WEFT__FIBER_SLOT_BITS) - 1;
	uint64_t slot = f & mask;
	weft_fiber_t stale = slot; /* generation 0 in that slot */
	assert_int_equal(weft_sem_release(gate), 0);
	assert_int_equal(weft_fiber_join(f, -1, NULL, NULL), 0);
	/* f's record is freed by the worker just after join returns: keep
	 * spawning (and keep them alive) so its slot would be taken. */
	int reused = 0, same = 0;
	for (int i = 0; i < KEEP; i++) {
		assert_int_equal(weft_fiber_spawn(&kept[i], &attr, wait_gate, NULL), 0);
		reused += (kept[i] & mask) == slot;
		same += kept[i] == stale;
	}
	/* Checked once all are released, so a failure does not leave fibers
	 * blocked for the teardown to wait on. */
	int joined = weft_fiber_join(stale, 0, NULL, NULL);
	for (int i = 0; i < KEEP; i++)
		assert_int_equal(weft_sem_release(gate), 0);
	for (int i = 0; i < KEEP; i++)
		assert_int_equal(weft_fiber_join(kept[i], -1, NULL, NULL), 0);
	assert_int_equal(weft_sem_destroy(gate), 0);
	print_message("slot reused %d times, stale handle reissued %d times, join: %d\n", reused,
		      same, joined);
	assert_int_equal(same, 0);
	assert_int_equal(joined, -ESRCH);
	assert_int_equal(reused, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_workers_aligned),
		cmocka_unit_test(test_stale_handle_after_generation_wrap),
	};
	return WT_MAIN("internals", tests, wt_start, wt_stop);
}
