/* SPDX-License-Identifier: MIT */
/* Naming the fiber whose stack overflowed. The shim's fault handler calls
 * this with the faulting address, in signal (or trap) context: no locks, no
 * allocation, no stdio, so the message is assembled by hand. */
#include "internal.h"

struct out {
	char *p, *end;
};

static void put(struct out *o, const char *s)
{
	while (*s && o->p < o->end)
		*o->p++ = *s++;
}

static void put_num(struct out *o, uint64_t v, unsigned base)
{
	char tmp[24];
	int n = 0;
	do {
		tmp[n++] = "0123456789abcdef"[v % base];
		v /= base;
	} while (v);
	if (base == 16)
		put(o, "0x");
	while (n && o->p < o->end)
		*o->p++ = tmp[--n];
}

size_t weft__name_fault(uintptr_t addr, char *buf, size_t cap)
{
	struct weft__worker *w = weft__worker_self();
	struct weft__fiber *f = w ? w->cur : NULL;
	if (!f)
		return 0;
	uintptr_t base = (uintptr_t)f->stack.base;
	/* The guard page, or a frame large enough to jump over it. */
	if (addr >= base || addr < base - f->stack.guard - f->stack.size)
		return 0;
	struct out o = {buf, buf + cap - 1};
	put(&o, "weft: fiber ");
	put_num(&o, f->id, 10);
	put(&o, " \"");
	put(&o, f->name);
	put(&o, "\" overflowed its stack of ");
	put_num(&o, f->stack.size, 10);
	put(&o, " bytes (fault at ");
	put_num(&o, addr, 16);
	put(&o, ", stack ");
	put_num(&o, base, 16);
	put(&o, "..");
	put_num(&o, base + f->stack.size, 16);
	put(&o, ")\n  spawned at ");
	put(&o, f->file ? f->file : "?");
	put(&o, ":");
	put_num(&o, (uint64_t)f->line, 10);
	if (f->parent_id) {
		put(&o, " by fiber ");
		put_num(&o, f->parent_id, 10);
		put(&o, " \"");
		put(&o, f->parent_name);
		put(&o, "\"");
	} else {
		put(&o, " by a plain thread");
	}
	put(&o, "\n");
	*o.p = 0;
	return (size_t)(o.p - buf);
}
