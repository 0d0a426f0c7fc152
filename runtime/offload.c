/* SPDX-License-Identifier: MIT */
/* Helper threads for work that must block in the kernel. A job is queued
 * with a future; up to MAX_HELPERS threads (started on demand, kept until
 * weft_shutdown) take jobs and settle the futures. The caller waits through
 * the future, so a fiber parks and its worker runs others meanwhile. */
#include <limits.h>
#include <stdlib.h>

#include "internal.h"

#define MAX_HELPERS 4

struct job {
	struct job *next;
	weft_fn fn;
	void *arg;
	weft_future_t *done;
};

static weft__lock_t q_lock = WEFT__LOCK_INIT;
static struct job *q_head, *q_tail;
static int nhelpers, nidle;
static bool stopping;
static _Atomic uint32_t q_seq; /* helpers sleep on this */
static shim_thread_t helpers[MAX_HELPERS];

static void helper_main(void *unused)
{
	(void)unused;
	for (;;) {
		weft__lock(&q_lock);
		struct job *j = q_head;
		if (j) {
			q_head = j->next;
			if (!q_head)
				q_tail = NULL;
		} else if (stopping) {
			weft__unlock(&q_lock);
			return;
		} else {
			nidle++;
		}
		uint32_t seq = atomic_load(&q_seq);
		weft__unlock(&q_lock);
		if (!j) {
			shim_wait(&q_seq, seq, -1);
			weft__lock(&q_lock);
			nidle--;
			weft__unlock(&q_lock);
			continue;
		}
		void *r = j->fn(j->arg);
		weft_future_resolve(j->done, r);
		weft_future_release(j->done);
		free(j);
	}
}

int weft__offload_start(weft_fn fn, void *arg, weft_future_t **out)
{
	if (!fn || !out)
		return -EINVAL;
	if (!atomic_load(&weft__rt.running))
		return -ESRCH;
	struct job *j = malloc(sizeof *j);
	if (!j)
		return -ENOMEM;
	weft_future_t *done;
	int err = weft_future_create(&done);
	if (err) {
		free(j);
		return err;
	}
	*j = (struct job){.fn = fn, .arg = arg, .done = weft_future_retain(done)};

	weft__lock(&q_lock);
	if (nidle == 0 && nhelpers < MAX_HELPERS) {
		err = shim_thread_start(&helpers[nhelpers], helper_main, NULL);
		if (!err)
			nhelpers++;
		else if (nhelpers > 0)
			err = 0; /* the ones there will get to it */
	}
	if (err) {
		weft__unlock(&q_lock);
		weft_future_release(done);
		weft_future_release(done);
		free(j);
		return err;
	}
	if (q_tail)
		q_tail->next = j;
	else
		q_head = j;
	q_tail = j;
	atomic_fetch_add(&q_seq, 1);
	weft__unlock(&q_lock);
	shim_wake(&q_seq, 1);
	*out = done;
	return 0;
}

int weft_offload(weft_fn fn, void *arg, void **result)
{
	weft_future_t *done;
	int err = weft__offload_start(fn, arg, &done);
	if (err)
		return err;
	/* Wait it out: the job cannot be recalled, and arg must outlive it. */
	bool cancelled = false;
	void *r = NULL;
	while ((err = weft_future_await(done, -1, &r)) == -ECANCELED)
		cancelled = true;
	if (cancelled)
		weft__cancel_repend(weft__self());
	weft_future_release(done);
	if (result)
		*result = r;
	return err;
}

void weft__offload_stop(void)
{
	weft__lock(&q_lock);
	stopping = true;
	int n = nhelpers;
	atomic_fetch_add(&q_seq, 1);
	weft__unlock(&q_lock);
	shim_wake(&q_seq, INT_MAX);
	for (int i = 0; i < n; i++)
		shim_thread_join(helpers[i]);
	weft__lock(&q_lock);
	nhelpers = 0;
	stopping = false;
	weft__unlock(&q_lock);
}
