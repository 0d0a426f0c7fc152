/* SPDX-License-Identifier: MIT */
/* Counting semaphore. A release with waiters hands its unit straight to the
 * oldest one (so while anyone waits the count stays 0 and no newcomer can
 * overtake them); a waiter that timed out as the unit arrived keeps it:
 * completion wins, as everywhere (waiter.c). */
#include <stdlib.h>

#include "internal.h"

struct weft_sem {
	weft__lock_t lock;
	unsigned count;
	struct weft__waiter *waiters;
};

int weft_sem_create(weft_sem_t **out, unsigned initial)
{
	if (!out || initial > WEFT_SEM_MAX)
		return -EINVAL;
	struct weft_sem *s = calloc(1, sizeof *s);
	if (!s)
		return -ENOMEM;
	s->count = initial;
	*out = s;
	return 0;
}

int weft_sem_destroy(weft_sem_t *s)
{
	if (!s)
		return 0;
	weft__lock(&s->lock);
	bool busy = s->waiters != NULL;
	weft__unlock(&s->lock);
	if (busy)
		return -EBUSY;
	free(s);
	return 0;
}

int weft_sem_acquire(weft_sem_t *s, int64_t deadline)
{
	if (!s)
		return -EINVAL;
	weft__lock(&s->lock);
	int r = 0;
	if (s->count) {
		s->count--;
	} else {
		struct weft__waiter w = {0};
		r = weft__waiter_wait_own(&s->lock, &s->waiters, &w, deadline, "semaphore");
	}
	weft__unlock(&s->lock);
	return r;
}

int weft_sem_release(weft_sem_t *s)
{
	if (!s)
		return -EINVAL;
	weft__lock(&s->lock);
	int r = 0;
	struct weft__waiter *w = weft__waitq_take(&s->waiters);
	if (w)
		weft__waiter_complete(w, 0);
	else if (s->count == WEFT_SEM_MAX)
		r = -EOVERFLOW;
	else
		s->count++;
	weft__unlock(&s->lock);
	return r;
}

unsigned weft_sem_value(weft_sem_t *s)
{
	if (!s)
		return 0;
	weft__lock(&s->lock);
	unsigned n = s->count;
	weft__unlock(&s->lock);
	return n;
}
