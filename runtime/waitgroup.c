/* SPDX-License-Identifier: MIT */
/* Wait group, as Go's sync.WaitGroup: a counter that waiters wait to see at
 * zero. Reaching zero completes every waiter under the lock, so each of them
 * returns 0 even if the counter rises again before it runs. */
#include <stdlib.h>

#include "internal.h"

struct weft_waitgroup {
	weft__lock_t lock;
	int64_t count;
	struct weft__waiter *waiters;
};

int weft_waitgroup_create(weft_waitgroup_t **out)
{
	if (!out)
		return -EINVAL;
	struct weft_waitgroup *wg = calloc(1, sizeof *wg);
	if (!wg)
		return -ENOMEM;
	*out = wg;
	return 0;
}

int weft_waitgroup_destroy(weft_waitgroup_t *wg)
{
	if (!wg)
		return 0;
	weft__lock(&wg->lock);
	bool busy = wg->waiters != NULL;
	weft__unlock(&wg->lock);
	if (busy)
		return -EBUSY;
	free(wg);
	return 0;
}

int weft_waitgroup_add(weft_waitgroup_t *wg, int64_t delta)
{
	if (!wg)
		return -EINVAL;
	weft__lock(&wg->lock);
	int r = 0;
	if (delta < 0 && (delta == INT64_MIN || wg->count < -delta))
		r = -EINVAL;
	else if (delta > 0 && wg->count > INT64_MAX - delta)
		r = -EOVERFLOW;
	else if ((wg->count += delta) == 0) {
		struct weft__waiter *w;
		while ((w = weft__waitq_take(&wg->waiters)))
			weft__waiter_complete(w, 0);
	}
	weft__unlock(&wg->lock);
	return r;
}

int weft_waitgroup_done(weft_waitgroup_t *wg) { return weft_waitgroup_add(wg, -1); }

int weft_waitgroup_wait(weft_waitgroup_t *wg, int64_t deadline)
{
	if (!wg)
		return -EINVAL;
	weft__lock(&wg->lock);
	int r = 0;
	if (wg->count) {
		struct weft__waiter w = {0};
		r = weft__waiter_wait_own(&wg->lock, &wg->waiters, &w, deadline, "waitgroup");
	}
	weft__unlock(&wg->lock);
	return r;
}
