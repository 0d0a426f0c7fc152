/* SPDX-License-Identifier: MIT */
/* Inside the bare-metal kernel-shim: what its files share. Built on the
 * board contract (board/board_contract.h) and the arch's (arch_bare.h);
 * what drivers may use of it is driver.h, included here. */
#ifndef WEFT_BARE_H
#define WEFT_BARE_H

#include <stddef.h>
#include <stdint.h>

#include "arch_bare.h"
#include "board_contract.h"
#include "driver.h" /* pages, device interrupts, I/O sources */
#include "fdt.h"    /* the device tree and the command line */

/* ---- Memory (page.c, heap.c, vm.c) --------------------------------------- */

/* Give the allocator the free RAM [start, end). */
void page_init(uintptr_t start, uintptr_t end);

/* Reserve [start, start + size) for malloc's sbrk. */
void heap_init(uintptr_t start, size_t size);

/* Build the Sv39 tables (identity RAM and MMIO) and turn translation on. */
void vm_init(uintptr_t ram_base, uintptr_t ram_end);
/* Map one 4 KiB page of the stack window. 0 or -ENOMEM. */
int vm_map(uintptr_t va, uintptr_t pa);
/* Unmap a page of the stack window; returns its physical address or 0. */
uintptr_t vm_unmap(uintptr_t va);
/* 1 if va is in a mapped page of the stack window (for tests). */
int vm_mapped(uintptr_t va);
/* Where fiber stacks live: [VM_STACK_BASE, VM_STACK_BASE + VM_STACK_SIZE). */
#define VM_STACK_BASE 0x2000000000UL /* 128 GiB */
#define VM_STACK_SIZE (1UL << 30)

/* ---- Threads, time, traps (thread.c, clock.c, trap.c) --------------------- */

/* Make the boot context thread 0 ("main") with the given TLS block. */
void thread_init(void *tls);
/* Timer interrupt: wake sleepers, and preempt if another thread may run.
 * Returns 1 if the trap should resume in arch_preempt_resume. */
int thread_tick(void);

/* Program the one timer interrupt for a shim_now() time. */
void clock_set_timer(int64_t deadline_ns); /* -1: none */

/* Trap stack set-up (sscratch, stvec). */
void trap_init(void);

/* An exception (fault.c): report it and end the run. */
_Noreturn void trap_fault(struct trap_frame *f);

/* Claim and serve every pending external interrupt (the handlers drivers
 * registered with irq_register). Interrupts off. */
void trap_external(void);

/* Print without stdio or locks (trap context). */
void bare_puts(const char *s);
void bare_put_hex(uint64_t v);
void bare_put_dec(uint64_t v);

#endif
