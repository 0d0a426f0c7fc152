/* SPDX-License-Identifier: MIT */
/* The physical page allocator, malloc's share of the same RAM, and the
 * memory lock. Heap and pages are one budget: the free RAM above the image
 * is one range, malloc's heap grows up from its bottom (sbrk, heap.c,
 * through shim_page_heap_grow) and pages never handed out are taken from its
 * top (boot touches none of them), so neither has a fixed share and either
 * may have all but the other's use. Freed pages go on a free list threaded
 * through the pages themselves (RAM is identity-mapped) and are used
 * first; one freed at the edge of the untouched middle goes back to it,
 * where the heap can have it too, and the heap, short of room, takes back
 * the listed pages just above its edge. The heap stops HEAP_FLOOR pages
 * short of the end of the pages, so the fibers that run still find pages
 * for their stacks; new stacks are refused sooner (stack.c's LOW_WATER,
 * counted by shim_page_stack_room), while the middle still holds heap_keep
 * pages, so the heap has room left for the work already running (lwIP's
 * receive buffers): a page in use just above the heap's edge is a wall the
 * free pages elsewhere cannot move.
 *
 * The memory lock guards the pages, the heap's edge, the stack window's
 * tables (vm.c) and the stack pools (stack.c): it is the shim lock
 * (lock.c), which a hart holds with interrupts off. A demand fault
 * (demand.c) can arrive while its own hart holds it: the critical
 * section's own frame may sit on a stack page not mapped yet. Such a fault
 * must not touch the free list the holder is changing, and can wait for
 * nobody, so it takes a page from a small reserve that only those faults
 * use and that the lock's holders keep full. A fault on another hart is
 * not the holder's: it waits for the lock like any caller. */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "bare.h"

struct free_page {
	struct free_page *next;
};

static struct free_page *free_list;
static size_t nlisted; /* pages on free_list */
/* [fresh, fresh_end): neither heap nor page yet. The heap's edge is fresh
 * (page-aligned; sbrk's own end may be below it), pages come off the top. */
static uintptr_t fresh, fresh_end;
static uintptr_t range_end; /* the top of the range shim_page_init was given */
static size_t ntotal;       /* pages shim_page_init was given */

/* Pages the heap leaves to the stacks of the fibers that run (256 KiB):
 * malloc fails before they run out. */
#define HEAP_FLOOR 64
/* Pages of the middle new stacks leave to the heap: a sixteenth of the
 * RAM, at least 2 MiB (shim_page_init). */
#define HEAP_KEEP_MIN 512
static size_t heap_keep;

/* Pages for faults taken inside the memory lock. A critical section's frame
 * spans at most two pages, so a holder can fault at most twice. */
#define RESERVE 4
static void *reserve[RESERVE];
static unsigned nreserve;

int shim_mem_lock(void) { return shim_big_lock(); }

void shim_mem_unlock(int on) { shim_big_unlock(on); }

int shim_mem_locked(void) { return shim_big_held(); }

/* A free page, not zeroed, or NULL. Under the memory lock. */
static void *take(void)
{
	struct free_page *p = free_list;
	if (p) {
		free_list = p->next;
		nlisted--;
	} else if (fresh < fresh_end) {
		fresh_end -= PAGE_SIZE;
		p = (struct free_page *)fresh_end;
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

void shim_page_init(uintptr_t start, uintptr_t end)
{
	fresh = (start + PAGE_SIZE - 1) & ~(PAGE_SIZE - 1);
	fresh_end = range_end = end & ~(PAGE_SIZE - 1);
	ntotal = fresh_end > fresh ? (fresh_end - fresh) / PAGE_SIZE : 0;
	heap_keep = ntotal / 16 > HEAP_KEEP_MIN ? ntotal / 16 : HEAP_KEEP_MIN;
	int on = shim_mem_lock();
	refill();
	shim_mem_unlock(on);
}

void *shim_page_alloc(void)
{
	int on = shim_mem_lock();
	refill();
	void *p = take();
	shim_mem_unlock(on);
	if (p)
		memset(p, 0, PAGE_SIZE);
	return p;
}

void shim_page_free(void *v)
{
	struct free_page *p = v;
	int on = shim_mem_lock();
	if (nreserve < RESERVE) {
		reserve[nreserve++] = p;
	} else if ((uintptr_t)p == fresh_end) {
		fresh_end += PAGE_SIZE; /* back to the middle, for heap or pages */
	} else {
		p->next = free_list;
		free_list = p;
		nlisted++;
	}
	shim_mem_unlock(on);
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

void *shim_page_take_fault(int held)
{
	void *p;
	if (held) {
		p = nreserve ? reserve[--nreserve] : NULL;
	} else {
		refill();
		p = take();
	}
	if (p)
		zero(p);
	return p;
}

/* Under the memory lock: take the listed pages of [fresh_end, end) off
 * the free list and back into the middle, if all of them are listed (a
 * page in use there keeps the heap below it); true if they were. Two walks
 * of the list: only the heap's growth past the middle comes here. */
static bool take_back(uintptr_t end)
{
	size_t want = (end - fresh_end) / PAGE_SIZE, found = 0;
	for (struct free_page *p = free_list; p && found < want; p = p->next)
		if ((uintptr_t)p >= fresh_end && (uintptr_t)p < end)
			found++;
	if (found < want)
		return false;
	for (struct free_page **pp = &free_list; *pp;) {
		uintptr_t a = (uintptr_t)*pp;
		if (a >= fresh_end && a < end) {
			*pp = (*pp)->next;
			nlisted--;
		} else {
			pp = &(*pp)->next;
		}
	}
	fresh_end = end;
	return true;
}

static size_t free_count(void) { return nlisted + (fresh_end - fresh) / PAGE_SIZE; }

int shim_page_heap_grow(uintptr_t end)
{
	end = (end + PAGE_SIZE - 1) & ~(PAGE_SIZE - 1);
	int on = shim_mem_lock();
	int r = 0;
	if (end > fresh) {
		if (end > range_end) {
			r = -ENOMEM;
		} else if (end > fresh_end && !take_back(end) &&
			   !(shim_stack_reclaim() && take_back(end))) {
			r = -ENOMEM;
		} else if (free_count() - (end - fresh) / PAGE_SIZE < HEAP_FLOOR) {
			r = -ENOMEM;
		} else {
			fresh = end;
		}
	}
	shim_mem_unlock(on);
	return r;
}

size_t shim_page_free_count(void)
{
	shim_fence_release(); /* those pages are free but for the fence */
	int on = shim_mem_lock();
	size_t n = free_count();
	shim_mem_unlock(on);
	return n;
}

size_t shim_page_total_count(void) { return ntotal; }

size_t shim_page_stack_room(void)
{
	int on = shim_mem_lock();
	size_t middle = (fresh_end - fresh) / PAGE_SIZE;
	size_t n = nlisted + (middle > heap_keep ? middle - heap_keep : 0);
	shim_mem_unlock(on);
	return n;
}
