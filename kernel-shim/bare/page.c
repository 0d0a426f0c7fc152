/* SPDX-License-Identifier: MIT */
/* The physical page allocator: every 4 KiB page of RAM above the image and
 * the heap. Pages never handed out are taken from the bottom of that range
 * (boot touches none of them); freed ones go on a free list threaded through
 * the pages themselves (RAM is identity-mapped) and are used first. One hart:
 * turning interrupts off is the lock. */
#include <string.h>

#include "bare.h"

struct free_page {
	struct free_page *next;
};

static struct free_page *free_list;
static uintptr_t fresh, fresh_end; /* never handed out yet */

void page_init(uintptr_t start, uintptr_t end)
{
	fresh = (start + PAGE_SIZE - 1) & ~(PAGE_SIZE - 1);
	fresh_end = end & ~(PAGE_SIZE - 1);
}

void *page_alloc(void)
{
	int on = irq_save();
	struct free_page *p = free_list;
	if (p) {
		free_list = p->next;
	} else if (fresh < fresh_end) {
		p = (struct free_page *)fresh;
		fresh += PAGE_SIZE;
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
	irq_restore(on);
}
