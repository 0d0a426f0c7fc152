/* SPDX-License-Identifier: MIT */
/* TLB shootdown for the stack window, in batches. A page unmapped from a
 * stack (stack.c) may still be in another hart's TLB: neither the page nor
 * its address may be used again until every hart has fenced. One SBI RFENCE is a round of IPIs
 * through the firmware, and a stack freed is a fence; so the pages wait
 * on a list (threaded through themselves: RAM is identity-mapped) and one
 * fence of the whole window frees them all, once BATCH of them wait or
 * whenever pages are wanted (shim_stack_reclaim: the fault path, the heap's
 * growth, a new stack short of room; and shim_page_free_count). The addresses
 * wait with the pooled stack they belong to: a pooled stack records the
 * epoch of its unmapping, and is handed out again only after a fence that
 * came later (shim_fence_after). With one hart there is nothing to fence and a
 * page is free at once. */
#include "bare.h"

#define BATCH 256 /* pages (1 MiB) */

static uintptr_t waiting; /* the first page of the list, 0 for none */
static unsigned nwaiting;
static unsigned long epoch; /* fences done that freed pages */

unsigned long shim_fence_epoch(void) { return epoch; }

int shim_fence_release(void)
{
	int on = shim_mem_lock();
	uintptr_t p = waiting;
	int any = p != 0;
	if (any) {
		/* This hart too: the pages may have been unmapped by another
		 * (shim_vm_unmap fences only the hart that unmaps). */
		__asm__ volatile("sfence.vma zero, zero" ::: "memory");
		shim_hart_fence_others(VM_STACK_BASE, VM_STACK_SIZE);
		epoch++;
	}
	waiting = 0;
	nwaiting = 0;
	while (p) {
		uintptr_t next = *(uintptr_t *)p;
		shim_page_free((void *)p);
		p = next;
	}
	shim_mem_unlock(on);
	return any;
}

void shim_fence_after(unsigned long e)
{
	int on = shim_mem_lock();
	if (epoch == e)
		shim_fence_release(); /* what was unmapped by then waits still */
	shim_mem_unlock(on);
}

void shim_fence_defer(uintptr_t pa)
{
	int on = shim_mem_lock();
	if (shim_hart_count == 1) {
		shim_page_free((void *)pa);
	} else {
		*(uintptr_t *)pa = waiting;
		waiting = pa;
		if (++nwaiting >= BATCH)
			shim_fence_release();
	}
	shim_mem_unlock(on);
}
