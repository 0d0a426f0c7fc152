/* SPDX-License-Identifier: MIT */
/* Guarded fiber stacks on bare metal. Each stack gets fresh addresses in the
 * Sv39 stack window with a guard of unmapped addresses below it (ARCH_STACK_GUARD
 * by default, shim_stack_guard_set; it costs window, not memory), and its
 * own physical pages mapped eagerly (a fault inside the trap handler could not
 * allocate a page safely). Freed stacks keep their pages in a pool of their
 * size; when RAM runs out, pooled stacks give their pages back and keep only
 * their addresses. */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "arch_cpu.h"
#include "bare.h"
#include "shim.h"

#define MAX_STACK ((size_t)1 << 30)
#define NCLASS 8

struct pooled {
	struct pooled *next;
	uintptr_t base;
	int backed; /* pages still mapped */
};

struct size_class {
	size_t size, guard;
	struct pooled *free;
};

static struct size_class classes[NCLASS];
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

static void unmap_range(uintptr_t base, size_t size)
{
	for (uintptr_t va = base; va < base + size; va += PAGE_SIZE) {
		uintptr_t pa = vm_unmap(va);
		if (pa)
			page_free((void *)pa);
	}
}

/* Give back the pages of the pooled stacks beyond the first keep that
 * have them; 1 if any were freed. */
static int reclaim_beyond(unsigned keep)
{
	int any = 0;
	unsigned seen = 0;
	int on = irq_save();
	for (int i = 0; i < NCLASS; i++)
		for (struct pooled *p = classes[i].free; p; p = p->next)
			if (p->backed && seen++ >= keep) {
				unmap_range(p->base, classes[i].size);
				p->backed = 0;
				atomic_fetch_sub_explicit(&nbacked, 1, memory_order_relaxed);
				any = 1;
			}
	irq_restore(on);
	return any;
}

/* Give back the pages of every pooled stack; 1 if any were freed. */
static int reclaim(void) { return reclaim_beyond(0); }

bool shim_stack_trim_due(void)
{
	return atomic_load_explicit(&nbacked, memory_order_relaxed) > TRIM_KEEP;
}

void shim_stack_trim(void)
{
	if (shim_stack_trim_due())
		reclaim_beyond(TRIM_KEEP);
}

static int map_range(uintptr_t base, size_t size)
{
	for (uintptr_t va = base; va < base + size; va += PAGE_SIZE) {
		void *pg = page_alloc();
		if (!pg && reclaim())
			pg = page_alloc();
		if (!pg || vm_map(va, (uintptr_t)pg) != 0) {
			if (pg)
				page_free(pg);
			unmap_range(base, va - base);
			return -ENOMEM;
		}
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

/* Put a stack's addresses (and its pages, if backed) in its size's pool. */
static void pool_put(uintptr_t base, size_t size, size_t guard, int backed)
{
	struct pooled *p = malloc(sizeof *p);
	int on = irq_save();
	struct size_class *c = class_of(size, guard, 1);
	if (p && c) {
		p->base = base;
		p->backed = backed;
		p->next = c->free;
		c->free = p;
		p = NULL;
		if (backed)
			atomic_fetch_add_explicit(&nbacked, 1, memory_order_relaxed);
	}
	irq_restore(on);
	if (p || !c) {
		/* No pool for it: its pages go back, its addresses stay reserved. */
		free(p);
		if (backed)
			unmap_range(base, size);
	}
}

int shim_stack_alloc(size_t size, struct shim_stack *out)
{
	if (size == 0 || size > MAX_STACK || !out)
		return -EINVAL;
	size = shim_stack_round(size);
	int on = irq_save();
	size_t guard = guard_now();
	struct size_class *c = class_of(size, guard, 0);
	struct pooled *p = c ? c->free : NULL;
	if (p)
		c->free = p->next;
	uintptr_t base = 0;
	if (!p && next_va + guard + size <= VM_STACK_BASE + VM_STACK_SIZE) {
		base = next_va + guard;
		next_va = base + size;
	}
	irq_restore(on);
	int backed = 0;
	if (p) {
		base = p->base;
		backed = p->backed;
		if (backed)
			atomic_fetch_sub_explicit(&nbacked, 1, memory_order_relaxed);
		free(p);
	} else if (!base) {
		return -ENOMEM; /* the stack window's addresses are used up */
	}
	if (!backed && map_range(base, size) != 0) {
		pool_put(base, size, guard, 0);
		return -ENOMEM;
	}
	out->base = (void *)base;
	out->size = size;
	out->guard = guard;
	out->tool_id = 0;
	return 0;
}

void shim_stack_free(const struct shim_stack *s)
{
	pool_put((uintptr_t)s->base, s->size, s->guard, 1);
}
