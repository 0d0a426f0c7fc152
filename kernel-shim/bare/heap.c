/* SPDX-License-Identifier: MIT */
/* malloc's memory: malloc (malloc.c) grows through sbrk, which here moves
 * the heap's edge up into the RAM it shares with the page allocator
 * (page.c's shim_page_heap_grow says whether there is room: one budget, no
 * fixed share). */
#include <errno.h>
#include <stdint.h>
#include <unistd.h>

#include "bare.h"
#include "shim.h"

static uintptr_t heap_start, heap_cur, heap_max;

void shim_heap_init(uintptr_t start, uintptr_t end)
{
	heap_start = heap_cur = start;
	heap_max = end;
}

size_t shim_heap_size(void) { return heap_max - heap_start; }

size_t shim_heap_used(void) { return heap_cur - heap_start; }

/* picolibc's name: it leaves libweft.a (default visibility, the Makefile). */
__attribute__((visibility("default"))) void *sbrk(ptrdiff_t incr)
{
	int on = shim_mem_lock();
	uintptr_t old = heap_cur;
	int err = 0;
	if (incr > 0 && (uintptr_t)incr > heap_max - heap_cur)
		err = ENOMEM;
	else if (incr < 0 && (uintptr_t)-incr > heap_cur - heap_start)
		err = ENOMEM;
	else if (incr > 0 && shim_page_heap_grow(heap_cur + (uintptr_t)incr) != 0)
		err = ENOMEM;
	if (!err)
		heap_cur += (uintptr_t)incr;
	shim_mem_unlock(on);
	if (err) {
		errno = err;
		return (void *)-1;
	}
	return (void *)old;
}
