/* SPDX-License-Identifier: MIT */
/* The "kernel" stack's names: the host's resolver (shim_resolve), which
 * blocks, on a helper thread (weft__offload_start), waited for with the
 * caller's deadline. A caller that gives up leaves the job running: the job
 * and the caller share its state, and whichever of the two is done with it
 * last frees it, so a lookup that ends after its caller has returned
 * writes only into memory of its own. */
#include <stdlib.h>
#include <string.h>

#include "net.h"

int (*weft__kresolve_fn)(const char *name, uint32_t *ip) = shim_resolve;

struct kjob {
	_Atomic int refs; /* the caller's and the helper's */
	int err;
	uint32_t ip;
	int (*fn)(const char *name, uint32_t *ip);
	char name[];
};

static void put(struct kjob *j)
{
	if (atomic_fetch_sub(&j->refs, 1) == 1)
		free(j);
}

static void *job(void *arg)
{
	struct kjob *j = arg;
	j->err = j->fn(j->name, &j->ip);
	put(j);
	return NULL;
}

int weft__kernel_resolve(const char *name, uint32_t *ip, int64_t deadline)
{
	if (deadline == 0)
		return -ETIMEDOUT; /* a lookup cannot be tried without waiting */
	size_t n = strlen(name) + 1;
	struct kjob *j = malloc(sizeof *j + n);
	if (!j)
		return -ENOMEM;
	memcpy(j->name, name, n);
	j->err = 0;
	j->ip = 0;
	j->fn = weft__kresolve_fn;
	atomic_init(&j->refs, 2);
	weft_future_t *done;
	int err = weft__offload_start(job, j, &done);
	if (err) {
		free(j);
		return err;
	}
	err = weft_future_await(done, deadline, NULL);
	weft_future_release(done);
	if (!err) {
		err = j->err;
		*ip = j->ip;
	}
	put(j);
	return err;
}
