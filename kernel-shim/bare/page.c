/* SPDX-License-Identifier: MIT */
/* The physical page allocator: every 4 KiB page of RAM above the image and
 * the heap, kept on a free list threaded through the pages themselves (RAM is
 * identity-mapped). One hart: turning interrupts off is the lock. */
#include <string.h>

#include "bare.h"

struct free_page {
	struct free_page *next;
};

static struct free_page *free_list;
static size_t nfree;

void page_init(uintptr_t start, uintptr_t end)
{
	start = (start + PAGE_SIZE - 1) & ~(PAGE_SIZE - 1);
	end &= ~(PAGE_SIZE - 1);
	/* Highest first, so allocation starts at the bottom. */
	for (uintptr_t p = end; p > start; p -= PAGE_SIZE)
		page_free((void *)(p - PAGE_SIZE));
}

void *page_alloc(void)
{
	int on = irq_save();
	struct free_page *p = free_list;
	if (p) {
		free_list = p->next;
		nfree--;
	}
	irq_restore(on);
	if (p)
		memset(p, 0, PAGE_SIZE);
	return p;
}

void page_free(void *v)
{
	struct free_page *p = v;
	int on = irq_save();
	p->next = free_list;
	free_list = p;
	nfree++;
	irq_restore(on);
}

size_t page_free_count(void) { return nfree; }
