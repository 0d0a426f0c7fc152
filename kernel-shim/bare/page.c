/* SPDX-License-Identifier: MIT */
/* The physical page allocator and the memory lock. Pages are every 4 KiB
 * page of RAM above the image and the heap. Pages never handed out are taken
 * from the bottom of that range (boot touches none of them); freed ones go on
 * a free list threaded through the pages themselves (RAM is identity-mapped)
 * and are used first.
 *
 * The memory lock guards the pages, the stack window's tables (vm.c) and the
 * stack pools (stack.c). One hart: it is interrupts off, plus a depth that
 * says the hart holds it. A demand fault (demand.c) can arrive while it is
 * held: the critical section's own frame may sit on a stack page not mapped
 * yet. Such a fault must not touch the free list the holder is changing, and
 * can wait for nobody, so it takes a page from a small reserve that only
 * those faults use and that the lock's holders keep full. */
#include <string.h>

#include "bare.h"

struct free_page {
	struct free_page *next;
};

static struct free_page *free_list;
static size_t nlisted;             /* pages on free_list */
static uintptr_t fresh, fresh_end; /* never handed out yet */
static size_t ntotal;              /* pages page_init was given */
static unsigned depth;             /* the memory lock's holders, nested */

/* Pages for faults taken inside the memory lock. A critical section's frame
 * spans at most two pages, so a holder can fault at most twice. */
#define RESERVE 4
static void *reserve[RESERVE];
static unsigned nreserve;

int mem_lock(void)
{
	int on = irq_save();
	depth++;
	return on;
}

void mem_unlock(int on)
{
	depth--;
	irq_restore(on);
}

int mem_locked(void) { return depth != 0; }

/* A free page, not zeroed, or NULL. Under the memory lock. */
static void *take(void)
{
	struct free_page *p = free_list;
	if (p) {
		free_list = p->next;
		nlisted--;
	} else if (fresh < fresh_end) {
		p = (struct free_page *)fresh;
		fresh += PAGE_SIZE;
	}
	return p;
}

/* Top the fault reserve up. Under the memory lock. */
static void refill(void)
{
	void *p;
	while (nreserve < RESERVE && (p = take()))
		reserve[nreserve++] = p;
}

void page_init(uintptr_t start, uintptr_t end)
{
	fresh = (start + PAGE_SIZE - 1) & ~(PAGE_SIZE - 1);
	fresh_end = end & ~(PAGE_SIZE - 1);
	ntotal = fresh_end > fresh ? (fresh_end - fresh) / PAGE_SIZE : 0;
	int on = mem_lock();
	refill();
	mem_unlock(on);
}

void *page_alloc(void)
{
	int on = mem_lock();
	refill();
	void *p = take();
	mem_unlock(on);
	if (p)
		memset(p, 0, PAGE_SIZE);
	return p;
}

void page_free(void *v)
{
	struct free_page *p = v;
	int on = mem_lock();
	if (nreserve < RESERVE) {
		reserve[nreserve++] = p;
	} else {
		p->next = free_list;
		free_list = p;
		nlisted++;
	}
	mem_unlock(on);
}

/* Zero a page with 64-bit stores, eight to a turn: picolibc's memset, built
 * for size, stores a byte at a time, and a fault's cost was its zeroing
 * (16,000 of 16,700 instructions on qemu-virt). The attribute keeps gcc
 * from turning the loop back into a memset call. */
__attribute__((optimize("no-tree-loop-distribute-patterns"))) static void zero(void *page)
{
	uint64_t *w = page;
	for (size_t i = 0; i < PAGE_SIZE / 8; i += 8) {
		w[i] = 0;
		w[i + 1] = 0;
		w[i + 2] = 0;
		w[i + 3] = 0;
		w[i + 4] = 0;
		w[i + 5] = 0;
		w[i + 6] = 0;
		w[i + 7] = 0;
	}
}

void *page_take_fault(int held)
{
	void *p;
	if (held)
		p = nreserve ? reserve[--nreserve] : NULL;
	else
		p = take();
	if (p)
		zero(p);
	return p;
}

size_t page_free_count(void)
{
	int on = mem_lock();
	size_t n = nlisted + (fresh_end - fresh) / PAGE_SIZE;
	mem_unlock(on);
	return n;
}

size_t page_total_count(void) { return ntotal; }
