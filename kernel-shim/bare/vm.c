/* SPDX-License-Identifier: MIT */
/* Sv39 page tables. RAM and the board's device window are identity-mapped
 * with 1 GiB pages, so the shim and the runtime use physical addresses as
 * they are. Fiber stacks live in a separate window (VM_STACK_SIZE, 16 GiB:
 * 131,072 stacks of the default size with their guards) mapped with 4 KiB
 * pages, whose entries are in one of three states: none (a guard, or
 * addresses never handed out: touching it is a page fault that fault.c
 * reports), lazy (a page of a stack that has no memory yet: V clear and a
 * software bit set; the first touch faults and demand.c maps a page) or
 * mapped. The tables under a stack are made when its addresses are handed
 * out, so mapping a lazy page later writes one entry and allocates nothing
 * but the page. The tables of each GiB of the window are made when its
 * first stack is: a level-1 table (a page) for the GiB, a leaf table (a
 * page) for each 2 MiB, 16 stacks of 64 KiB with their 64 KiB guards. Until
 * issue 34 the window was one GiB, 8,192 such stacks: fewer than the
 * fibers of one page each that 64 MiB holds. Everything here is under the
 * memory lock (page.c). */
#include <errno.h>

#include "bare.h"

#define PTE_V (1ull << 0)
#define PTE_R (1ull << 1)
#define PTE_W (1ull << 2)
#define PTE_X (1ull << 3)
#define PTE_G (1ull << 5)
#define PTE_A (1ull << 6)
#define PTE_D (1ull << 7)
#define PTE_LAZY (1ull << 8) /* RSW: with V clear, a stack page to map on first touch */
#define PTE_PPN_MASK (((1ull << 44) - 1) << 10)
#define GIGA (1ull << 30)
#define SATP_SV39 (8ull << 60)

static uint64_t root[512] __attribute__((aligned(4096)));

static uint64_t pte_of(uintptr_t pa, uint64_t flags) { return (uint64_t)(pa >> 12) << 10 | flags; }
static uint64_t *table_of(uint64_t pte)
{
	return (uint64_t *)(uintptr_t)(((pte & PTE_PPN_MASK) >> 10) << 12);
}

static void sfence(uintptr_t va) { __asm__ volatile("sfence.vma %0, zero" ::"r"(va) : "memory"); }

static void satp_set(void)
{
	__asm__ volatile("sfence.vma zero, zero" ::: "memory");
	csr_write(satp, SATP_SV39 | ((uintptr_t)root >> 12));
	__asm__ volatile("sfence.vma zero, zero" ::: "memory");
}

void shim_vm_hart_init(void) { satp_set(); }

void shim_vm_init(uintptr_t ram_base, uintptr_t ram_end)
{
	/* A (accessed) and D (dirty) are set up front: the C906 does not set
	 * them in hardware and faults instead. */
	const uint64_t common = PTE_V | PTE_A | PTE_D | PTE_G;
	for (uintptr_t g = BOARD_MMIO_BASE; g < BOARD_MMIO_BASE + BOARD_MMIO_SIZE; g += GIGA)
		root[g / GIGA] = pte_of(g, common | PTE_R | PTE_W) | board_pte_bits(1);
	for (uintptr_t g = ram_base & ~(GIGA - 1); g < ram_end; g += GIGA)
		root[g / GIGA] = pte_of(g, common | PTE_R | PTE_W | PTE_X) | board_pte_bits(0);
	satp_set();
}

/* The table below the valid non-leaf entry *e, made (zeroed: every entry
 * none) if e is not valid yet and create says so; NULL if not. A hart that
 * cached e invalid faults on the stack page it then touches, and
 * demand.c's local fence drops that entry. */
static uint64_t *below(uint64_t *e, int create)
{
	if (!(*e & PTE_V)) {
		if (!create)
			return NULL;
		void *t = shim_page_alloc();
		if (!t)
			return NULL;
		*e = pte_of((uintptr_t)t, PTE_V);
	}
	return table_of(*e);
}

static uint64_t *leaf(uintptr_t va, int create)
{
	if (va < VM_STACK_BASE || va >= VM_STACK_BASE + VM_STACK_SIZE)
		return NULL;
	uint64_t *l1 = below(&root[(va >> 30) & 511], create);
	uint64_t *l0 = l1 ? below(&l1[(va >> 21) & 511], create) : NULL;
	return l0 ? &l0[(va >> 12) & 511] : NULL;
}

int shim_vm_reserve(uintptr_t va)
{
	int on = shim_mem_lock();
	uint64_t *pte = leaf(va, 1);
	if (pte && *pte == 0)
		*pte = PTE_LAZY;
	shim_mem_unlock(on);
	return pte ? 0 : -ENOMEM;
}

int shim_vm_map(uintptr_t va, uintptr_t pa)
{
	int on = shim_mem_lock();
	uint64_t *pte = leaf(va, 0);
	int lazy = pte && *pte == PTE_LAZY;
	if (lazy)
		*pte = pte_of(pa, PTE_V | PTE_R | PTE_W | PTE_A | PTE_D | PTE_G) |
		       board_pte_bits(0);
	shim_mem_unlock(on);
	if (!lazy)
		return -EFAULT;
	/* An invalid entry may be cached too (the privileged spec lets a
	 * hart keep one): the fence makes the new one seen. */
	sfence(va);
	return 0;
}

uintptr_t shim_vm_unmap(uintptr_t va, int keep)
{
	int on = shim_mem_lock();
	uint64_t *pte = leaf(va, 0);
	uintptr_t pa = 0;
	if (pte && (*pte & PTE_V))
		pa = (uintptr_t)(((*pte & PTE_PPN_MASK) >> 10) << 12);
	if (pte && *pte)
		*pte = keep ? PTE_LAZY : 0;
	shim_mem_unlock(on);
	if (pa)
		sfence(va);
	return pa;
}

static int state(uintptr_t va, uint64_t want)
{
	int on = shim_mem_lock();
	uint64_t *pte = leaf(va, 0);
	int r = pte && (want == PTE_V ? (*pte & PTE_V) != 0 : *pte == want);
	shim_mem_unlock(on);
	return r;
}

int shim_vm_mapped(uintptr_t va)
{
	if (va < VM_STACK_BASE || va >= VM_STACK_BASE + VM_STACK_SIZE)
		return 1; /* identity-mapped RAM and devices (or nothing: not ours to say) */
	return state(va, PTE_V);
}

int shim_vm_lazy(uintptr_t va) { return state(va, PTE_LAZY); }
