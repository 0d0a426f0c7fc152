/* SPDX-License-Identifier: MIT */
/* Time as the API shows it: the clock, deadlines, sleeping; and the virtual
 * clock. A virtual clock starts at the shim's reading when the runtime
 * starts and moves only when every worker is idle, straight to the earliest
 * deadline (sched.c decides when, under its lock): a timeout of N ns then
 * ends exactly N ns later and takes no wall time. */
#include "internal.h"

static _Atomic int vclock_on;
static _Atomic int64_t vnow;

int64_t weft__now(void)
{
	if (atomic_load_explicit(&vclock_on, memory_order_acquire))
		return atomic_load_explicit(&vnow, memory_order_acquire);
	return shim_now();
}

bool weft__vclock_on(void) { return atomic_load_explicit(&vclock_on, memory_order_relaxed); }

void weft__vclock_start(bool on)
{
	if (on)
		atomic_store(&vnow, shim_now());
	atomic_store(&vclock_on, on);
}

void weft__vclock_set(int64_t t)
{
	int64_t cur = atomic_load_explicit(&vnow, memory_order_relaxed);
	while (cur < t && !atomic_compare_exchange_weak_explicit(
				  &vnow, &cur, t, memory_order_acq_rel, memory_order_relaxed))
		;
}

int64_t weft_now(void) { return weft__now(); }

int64_t weft_deadline_in(int64_t ns)
{
	if (ns < 0)
		return -1;
	int64_t now = weft__now();
	return ns > INT64_MAX - now ? INT64_MAX : now + ns;
}

int weft_sleep_until(int64_t deadline)
{
	deadline = weft__deadline_norm(deadline);
	struct weft__fiber *self = weft__self();
	weft__park_begin_why(self, "sleep");
	/* Nobody wakes a sleeper but its timer or a cancellation. */
	int r = weft__park_end(self, deadline);
	return r == -ETIMEDOUT ? 0 : r;
}
