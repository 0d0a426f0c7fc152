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

/* Is addr in f's guard (exact), or below it within a frame's reach (reach)? */
static bool in_guard(const struct weft__fiber *f, uintptr_t addr, bool reach)
{
	if (!f)
		return false;
	uintptr_t base = (uintptr_t)f->stack.base;
	uintptr_t lo = base - f->stack.guard - (reach ? f->stack.size : 0);
	return addr < base && addr >= lo;
}

size_t weft__name_fault(uintptr_t addr, char *buf, size_t cap)
{
	struct weft__worker *w = weft__worker_self();
	if (!w)
		return 0;
	/* During a switch the worker already names the incoming fiber as
	 * current while the outgoing one (prev, until weft__finish_switch)
	 * still pushes its registers on its own stack: an overflow there is
	 * the outgoing fiber's. A hit in a guard itself names its owner;
	 * only then is a frame that jumped past a guard considered. */
	struct weft__fiber *cands[2] = {w->cur, w->prev}, *f = NULL;
	for (int reach = 0; reach < 2 && !f; reach++)
		for (int i = 0; i < 2 && !f; i++)
			if (in_guard(cands[i], addr, reach))
				f = cands[i];
	if (!f)
		return 0;
	uintptr_t base = (uintptr_t)f->stack.base;
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
