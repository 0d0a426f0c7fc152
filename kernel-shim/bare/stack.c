/* SPDX-License-Identifier: MIT */
/* Guarded fiber stacks on bare metal. Each stack gets fresh addresses in the
 * Sv39 stack window with a guard of unmapped addresses below it (ARCH_STACK_GUARD
 * by default, shim_stack_guard_set; it costs window, not memory). Its pages
 * are lazy: each is mapped on its first touch (demand.c), so a stack costs
 * the pages its deepest call reached. A freed stack keeps its top TOP_KEEP
 * pages (what the next fiber on it touches first) and gives the rest back;
 * pooled beyond TRIM_KEEP, shim_stack_trim takes those too, and when RAM
 * runs low every pooled stack gives its pages back and keeps only its
 * addresses. A new stack is refused (-ENOMEM) while fewer than LOW_WATER
 * pages are free for stacks (shim_page_stack_room: not counting what page.c
 * keeps for the heap): running low refuses new fibers before the ones that
 * run find no page for their stacks or no memory for their buffers.
 *
 * A stack's pool node comes with its addresses: malloc'd with fresh ones
 * (a failed malloc refuses the stack), or the node that pooled them. It
 * waits on the spare list while the stack is out, so freeing a stack
 * allocates nothing and its addresses are never lost to a failed malloc. */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "arch_cpu.h"
#include "bare.h"
#include "shim.h"

#define MAX_STACK ((size_t)1 << 30)
#define NCLASS 8
#define TOP_KEEP 2    /* pages a freed stack keeps */
#define LOW_WATER 128 /* free pages (512 KiB) below which no stack is handed out */

struct pooled {
	struct pooled *next;
	uintptr_t base;
	int backed;          /* may have pages mapped */
	unsigned long epoch; /* fence.c's when its pages were last unmapped */
};

struct size_class {
	size_t size, guard;
	struct pooled *free;
};

static struct size_class classes[NCLASS];
/* One node for each stack handed out and not yet freed, taken when its
 * addresses were: a freed stack's addresses go back to their pool without
 * an allocation, so a malloc that fails at that moment loses nothing. */
static struct pooled *spare;
/* Pooled stacks whose pages are still mapped; shim_stack_trim leaves
 * TRIM_KEEP of them. */
#define TRIM_KEEP 16
static _Atomic unsigned nbacked;
static uintptr_t next_va = VM_STACK_BASE;
static size_t guard_bytes; /* for new stacks; 0 = ARCH_STACK_GUARD */

int shim_stack_guard_set(size_t bytes)
{
	if (bytes > SHIM_STACK_GUARD_MAX)
		return -EINVAL;
	guard_bytes = (bytes + PAGE_SIZE - 1) & ~(PAGE_SIZE - 1);
	return 0;
}

static size_t guard_now(void)
{
	return guard_bytes ? guard_bytes : (ARCH_STACK_GUARD + PAGE_SIZE - 1) & ~(PAGE_SIZE - 1);
}

size_t shim_stack_round(size_t size) { return (size + PAGE_SIZE - 1) & ~(PAGE_SIZE - 1); }

const char *shim_stack_guard_method(void) { return "sv39"; }

/* Give back the pages mapped in [base, base + size); the entries stay lazy
 * (keep) or become none. The pages go back once no other hart's TLB can
 * hold them (fence.c). */
static void unmap_range(uintptr_t base, size_t size, int keep)
{
	int on = shim_mem_lock();
	for (uintptr_t va = base; va < base + size; va += PAGE_SIZE) {
		uintptr_t pa = shim_vm_unmap(va, keep);
		if (pa)
			shim_fence_defer(pa);
	}
	shim_mem_unlock(on);
}

/* The bytes at the top of a stack of size that keep their pages as it is
 * freed: below them a pooled stack has none mapped (shim_stack_free gave
 * them back, and nothing touches a pooled stack). */
static size_t kept_bytes(size_t size)
{
	return TOP_KEEP * PAGE_SIZE < size ? TOP_KEEP * PAGE_SIZE : size;
}

/* Give back the pages of the pooled stacks beyond the first keep that
 * have them; 1 if any were freed. Only each stack's kept top is walked:
 * walking whole stacks held the shim lock, interrupts off, for over 10 s
 * with thousands of 1 MiB stacks pooled on 4 emulated harts (test_runtime,
 * QEMU_SMP=4), and the other harts' wait for it ended the run. */
static int reclaim_beyond(unsigned keep)
{
	int any = 0;
	unsigned seen = 0;
	int on = shim_mem_lock();
	for (int i = 0; i < NCLASS; i++)
		for (struct pooled *p = classes[i].free; p; p = p->next)
			if (p->backed && seen++ >= keep) {
				size_t top = kept_bytes(classes[i].size);
				unmap_range(p->base + classes[i].size - top, top, 1);
				p->backed = 0;
				p->epoch = shim_fence_epoch();
				atomic_fetch_sub_explicit(&nbacked, 1, memory_order_relaxed);
				any = 1;
			}
	shim_mem_unlock(on);
	return any;
}

int shim_stack_reclaim(void)
{
	int any = reclaim_beyond(0);
	return shim_fence_release() | any;
}

size_t shim_stack_pooled(void)
{
	size_t n = 0;
	int on = shim_mem_lock();
	for (int i = 0; i < NCLASS; i++)
		for (struct pooled *p = classes[i].free; p; p = p->next)
			n++;
	for (struct pooled *p = spare; p; p = p->next)
		n++;
	shim_mem_unlock(on);
	return n;
}

bool shim_stack_trim_due(void)
{
	return atomic_load_explicit(&nbacked, memory_order_relaxed) > TRIM_KEEP;
}

void shim_stack_trim(void)
{
	if (shim_stack_trim_due())
		reclaim_beyond(TRIM_KEEP);
}

/* Make the entries of new addresses lazy; on failure (no page for a
 * table) they are none again. 0 or -ENOMEM. */
static int reserve_range(uintptr_t base, size_t size)
{
	for (uintptr_t va = base; va < base + size; va += PAGE_SIZE)
		if (shim_vm_reserve(va) != 0) {
			unmap_range(base, va - base, 0);
			return -ENOMEM;
		}
	return 0;
}

static struct size_class *class_of(size_t size, size_t guard, int create)
{
	for (int i = 0; i < NCLASS; i++) {
		if (classes[i].size == size && classes[i].guard == guard)
			return &classes[i];
		if (create && classes[i].size == 0) {
			classes[i].size = size;
			classes[i].guard = guard;
			return &classes[i];
		}
	}
	return NULL;
}

/* Put a stack's addresses, and the pages it kept, in its size's pool, in
 * the node its shim_stack_alloc set aside. */
static void pool_put(uintptr_t base, size_t size, size_t guard)
{
	int on = shim_mem_lock();
	struct size_class *c = class_of(size, guard, 1);
	struct pooled *p = spare;
	if (p)
		spare = p->next;
	if (p && c) {
		p->base = base;
		p->backed = 1;
		p->epoch = shim_fence_epoch();
		p->next = c->free;
		c->free = p;
		atomic_fetch_add_explicit(&nbacked, 1, memory_order_relaxed);
	}
	shim_mem_unlock(on);
	/* No pool for it (eight sizes already have one), or not a stack
	 * shim_stack_alloc handed out: its node goes, its pages go back, its
	 * addresses are never used again (their entries are none: a touch
	 * faults). */
	if (!p || !c) {
		free(p);
		unmap_range(base, size, 0);
	}
}

/* Fresh addresses for a stack of size below a guard, with the node its
 * pool_put will take (n, put aside here); 0 when the window is used up. */
static uintptr_t fresh_range(size_t size, size_t guard, struct pooled *n)
{
	uintptr_t base = 0;
	int on = shim_mem_lock();
	if (next_va + guard + size <= VM_STACK_BASE + VM_STACK_SIZE) {
		base = next_va + guard;
		next_va = base + size;
		n->next = spare;
		spare = n;
	}
	shim_mem_unlock(on);
	return base;
}

/* A node shim_stack_alloc set aside for a stack it then did not hand out. */
static void spare_drop(void)
{
	int on = shim_mem_lock();
	struct pooled *n = spare;
	if (n)
		spare = n->next;
	shim_mem_unlock(on);
	free(n);
}

int shim_stack_alloc(size_t size, struct shim_stack *out)
{
	if (size == 0 || size > MAX_STACK || !out)
		return -EINVAL;
	size = shim_stack_round(size);
	if (shim_page_stack_room() < LOW_WATER &&
	    (!shim_stack_reclaim() || shim_page_stack_room() < LOW_WATER))
		return -ENOMEM;
	int on = shim_mem_lock();
	size_t guard = guard_now();
	struct size_class *c = class_of(size, guard, 0);
	struct pooled *p = c ? c->free : NULL;
	uintptr_t base = 0;
	if (p) {
		c->free = p->next;
		if (p->backed)
			atomic_fetch_sub_explicit(&nbacked, 1, memory_order_relaxed);
		shim_fence_after(p->epoch); /* no hart's TLB holds its old pages */
		/* Read before the node goes on the spare list: from there any
		 * hart's pool_put may take it for another stack's addresses. */
		base = p->base;
		p->next = spare; /* for this stack's pool_put */
		spare = p;
	}
	shim_mem_unlock(on);
	if (!p) {
		struct pooled *n = malloc(sizeof *n);
		if (!n)
			return -ENOMEM;
		base = fresh_range(size, guard, n);
		if (!base) {
			free(n);
			return -ENOMEM; /* the stack window's addresses are used up */
		}
		if (reserve_range(base, size) != 0) {
			spare_drop();
			return -ENOMEM; /* no page for a table: these addresses stay unused */
		}
	}
	out->base = (void *)base;
	out->size = size;
	out->guard = guard;
	out->tool_id = 0;
	return 0;
}

void shim_stack_free(const struct shim_stack *s)
{
	uintptr_t base = (uintptr_t)s->base;
	unmap_range(base, s->size - kept_bytes(s->size), 1);
	pool_put(base, s->size, s->guard);
}
