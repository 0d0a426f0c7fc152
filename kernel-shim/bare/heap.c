/* SPDX-License-Identifier: MIT */
/* malloc's memory: picolibc's malloc grows through sbrk, which here hands out
 * a region reserved at boot (a quarter of the free RAM). */
#include <errno.h>
#include <stdint.h>
#include <unistd.h>

#include "bare.h"
#include "shim.h"

static uintptr_t heap_start, heap_cur, heap_end;

void heap_init(uintptr_t start, size_t size)
{
	heap_start = heap_cur = start;
	heap_end = start + size;
}

size_t shim_heap_size(void) { return heap_end - heap_start; }

size_t heap_used(void) { return heap_cur - heap_start; }

void *sbrk(ptrdiff_t incr)
{
	int on = irq_save();
	uintptr_t old = heap_cur;
	if ((incr > 0 && (uintptr_t)incr > heap_end - heap_cur) ||
	    (incr < 0 && (uintptr_t)-incr > heap_cur - heap_start)) {
		irq_restore(on);
		errno = ENOMEM;
		return (void *)-1;
	}
	heap_cur += (uintptr_t)incr;
	irq_restore(on);
	return (void *)old;
}
