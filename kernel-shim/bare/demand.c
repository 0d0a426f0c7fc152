/* SPDX-License-Identifier: MIT */
/* Demand paging of stacks: a stack is addresses in the Sv39 window whose
 * entries are lazy (vm.c) until touched. The first touch is a page fault,
 * taken on the hart's trap stack with interrupts off (trap.S, trap.c); here
 * it gets a zeroed page, the entry is mapped, and the trap returns to the
 * faulting instruction, which runs again. A fiber that uses 6 KiB of its
 * 64 KiB costs two pages.
 *
 * The fault may have interrupted a holder of the memory lock (page.c): then
 * its page comes from the reserve and nothing else is touched. Otherwise it
 * takes the lock like any caller, and when no page is free it first takes
 * back the pages of the stacks pooled in stack.c. With none to be had it
 * says so (-ENOMEM) and fault.c ends the run, naming the fiber.
 *
 * With several harts, a load or store may fault on a page that is mapped
 * already: this hart's TLB kept the entry from before another hart mapped
 * it (the privileged spec lets a hart cache an invalid entry; shim_vm_map
 * fences only the hart that maps). A local fence and the instruction runs
 * again. */
#include <errno.h>

#include "bare.h"

static uint64_t served;

uint64_t shim_demand_faults(void) { return served; }

int shim_demand_fault(uintptr_t va, int fetch)
{
	if (!shim_vm_lazy(va)) {
		if (fetch || va < VM_STACK_BASE || va >= VM_STACK_BASE + VM_STACK_SIZE ||
		    !shim_vm_mapped(va))
			return -EFAULT;
		__asm__ volatile("sfence.vma %0, zero" ::"r"(va) : "memory");
		return 0;
	}
	int held = shim_mem_locked();
	int on = shim_mem_lock();
	void *pg = shim_page_take_fault(held);
	if (!pg && !held && shim_stack_reclaim())
		pg = shim_page_take_fault(0);
	int r = -ENOMEM;
	if (pg) {
		r = shim_vm_map(va & ~(PAGE_SIZE - 1), (uintptr_t)pg);
		if (r != 0)
			shim_page_free(pg); /* not reached: va was lazy under the same lock */
		else
			served++;
	}
	shim_mem_unlock(on);
	return r;
}
