/* SPDX-License-Identifier: MIT */
/* Per-worker caches of default-size stacks in front of the shim's pools, so
 * a steady stream of spawns and exits on a worker touches no lock and makes
 * no system call. */
#include "internal.h"

int weft__stack_get(struct weft__worker *w, size_t size, struct shim_stack *out)
{
	if (w && size == weft__rt.stack_size && w->ncached) {
		*out = w->cache[--w->ncached];
		return 0;
	}
	return shim_stack_alloc(size, out);
}

void weft__stack_put(struct weft__worker *w, const struct shim_stack *s)
{
	unsigned cap = sizeof w->cache / sizeof w->cache[0];
	if (w && s->size == weft__rt.stack_size && w->ncached < cap) {
		w->cache[w->ncached++] = *s;
		return;
	}
	shim_stack_free(s);
}

void weft__stack_cache_drain(struct weft__worker *w)
{
	while (w->ncached)
		shim_stack_free(&w->cache[--w->ncached]);
}
