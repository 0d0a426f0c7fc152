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
int (*weft__kresolve6_fn)(const char *name, uint8_t ip6[16], uint32_t *scope) = shim_resolve6;

struct kjob {
	_Atomic int refs; /* the caller's and the helper's */
	int err;
	int pref;
	weft_addr_t addr;
	int (*fn)(const char *name, uint32_t *ip);
	int (*fn6)(const char *name, uint8_t ip6[16], uint32_t *scope);
	char name[];
};

static void put(struct kjob *j)
{
	if (atomic_fetch_sub(&j->refs, 1) == 1)
		free(j);
}

static int look4(struct kjob *j)
{
	j->addr = (weft_addr_t){0};
	return j->fn(j->name, &j->addr.ip);
}

static int look6(struct kjob *j)
{
	j->addr = (weft_addr_t){.family = WEFT_AF_INET6};
	return j->fn6(j->name, j->addr.ip6, &j->addr.scope);
}

/* One family, or the preferred one and the other when the name has no
 * address of the first (-ENOENT): two lookups, as the resolver is asked
 * for one family at a time. */
static void *job(void *arg)
{
	struct kjob *j = arg;
	switch (j->pref) {
	case WEFT_RESOLVE_INET:
		j->err = look4(j);
		break;
	case WEFT_RESOLVE_INET6:
		j->err = look6(j);
		break;
	case WEFT_RESOLVE_INET6_FIRST:
		j->err = look6(j);
		if (j->err == -ENOENT)
			j->err = look4(j);
		break;
	default:
		j->err = look4(j);
		if (j->err == -ENOENT)
			j->err = look6(j);
		break;
	}
	put(j);
	return NULL;
}

int weft__kernel_resolve(const char *name, int pref, weft_addr_t *out, int64_t deadline)
{
	if (deadline == 0)
		return -ETIMEDOUT; /* a lookup cannot be tried without waiting */
	size_t n = strlen(name) + 1;
	struct kjob *j = malloc(sizeof *j + n);
	if (!j)
		return -ENOMEM;
	memcpy(j->name, name, n);
	j->err = 0;
	j->pref = pref;
	j->addr = (weft_addr_t){0};
	j->fn = weft__kresolve_fn;
	j->fn6 = weft__kresolve6_fn;
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
		if (!err)
			*out = j->addr;
	}
	put(j);
	return err;
}
