/* SPDX-License-Identifier: MIT */
/* Naming the fiber whose stack overflowed. The shim's fault handler calls
 * this with the faulting address, in signal (or trap) context: no locks, no
 * allocation, no stdio, so the message is assembled by hand. */
#include <string.h>

#include "internal.h"

/* Spawners named above the fiber, as weft_dump (dump.c) names them. */
#define MAX_CHAIN 8

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

/* Is addr in f's guard (reach 0), below it within a frame's reach (1), or
 * in the stack itself (2: a page the shim found no memory for)? */
static bool in_guard(const struct weft__fiber *f, uintptr_t addr, int reach)
{
	if (!f)
		return false;
	struct shim_stack s;
	weft__stack_of(f, &s);
	uintptr_t base = (uintptr_t)s.base;
	uintptr_t lo = base - s.guard - (reach == 1 ? s.size : 0);
	return addr < base + (reach == 2 ? s.size : 0) && addr >= lo;
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
	for (int reach = 0; reach < 3 && !f; reach++)
		for (int i = 0; i < 2 && !f; i++)
			if (in_guard(cands[i], addr, reach))
				f = cands[i];
	if (!f)
		return 0;
	struct shim_stack stk;
	weft__stack_of(f, &stk);
	uintptr_t base = (uintptr_t)stk.base;
	struct out o = {buf, buf + cap - 1};
	put(&o, "weft: fiber ");
	put_num(&o, f->handle, 10);
	put(&o, " \"");
	put(&o, weft__fiber_name_of(f));
	put(&o, addr < base ? "\" overflowed its stack of " : "\" got no memory for its stack of ");
	put_num(&o, stk.size, 10);
	put(&o, " bytes (fault at ");
	put_num(&o, addr, 16);
	put(&o, ", stack ");
	put_num(&o, base, 16);
	put(&o, "..");
	put_num(&o, base + stk.size, 16);
	put(&o, ")\n  spawned at ");
	put(&o, f->file ? f->file : "?");
	put(&o, ":");
	put_num(&o, (uint64_t)f->line, 10);
	/* The chain of spawners up to the first plain thread, as weft_dump
	 * prints it, each found in the fiber table without its lock. */
	weft_fiber_t pid = f->parent;
	char pname[WEFT_NAME_MAX];
	weft__name_copy(pname, weft__fiber_parent_name(f));
	if (!pid)
		put(&o, " by a plain thread");
	for (int depth = 0; pid && depth < MAX_CHAIN; depth++) {
		pname[WEFT_NAME_MAX - 1] = 0;
		put(&o, depth ? " <- fiber " : " by fiber ");
		put_num(&o, pid, 10);
		put(&o, " \"");
		put(&o, pname);
		put(&o, "\"");
		struct weft__fiber *p = weft__fiber_peek(pid);
		weft_fiber_t next = p ? p->parent : 0;
		if (p)
			weft__name_copy(pname, weft__fiber_parent_name(p));
		if (!p || atomic_load_explicit(&p->handle, memory_order_acquire) != pid) {
			put(&o, " (gone)");
			break;
		}
		if (!next) {
			put(&o, " <- a plain thread");
			break;
		}
		if (depth == MAX_CHAIN - 1)
			put(&o, " <- ...");
		pid = next;
	}
	put(&o, "\n");
	*o.p = 0;
	return (size_t)(o.p - buf);
}
