/* SPDX-License-Identifier: MIT */
/* Time as the API shows it: the clock, deadlines, sleeping. */
#include "internal.h"

int64_t weft_now(void) { return shim_now(); }

int64_t weft_deadline_in(int64_t ns)
{
	if (ns < 0)
		return -1;
	int64_t now = shim_now();
	return ns > INT64_MAX - now ? INT64_MAX : now + ns;
}

int weft_sleep_until(int64_t deadline)
{
	if (deadline < 0)
		return -EINVAL;
	struct weft__fiber *self = weft__self();
	weft__park_begin(self);
	/* Nobody wakes a sleeper but its timer or a cancellation. */
	int r = weft__park_end(self, deadline);
	return r == -ETIMEDOUT ? 0 : r;
}
