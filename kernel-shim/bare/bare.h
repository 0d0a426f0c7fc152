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

/* ---- Memory (page.c, heap.c, vm.c, stack.c, demand.c) --------------------
 * One memory lock guards the pages, the stack window's tables and the stack
 * pools: interrupts off (one hart) and a depth. Taken nested, it is held
 * until the outermost unlock. The rule for faults: a demand fault may arrive
 * with the lock held (the holder's own frame on a stack page not yet
 * mapped), and then touches nothing the holder may be changing: it takes its
 * page from page.c's reserve and writes one entry of a table that exists. */
int mem_lock(void); /* returns the interrupt state for mem_unlock */
void mem_unlock(int on);
int mem_locked(void); /* the hart holds the memory lock */

/* Give the allocator the free RAM [start, end). */
void page_init(uintptr_t start, uintptr_t end);
/* A zeroed page for a demand fault, under the memory lock: from the free
 * pages, or from the reserve if the fault interrupted a holder of the lock
 * (held). NULL when there is none. */
void *page_take_fault(int held);
/* Free pages (beyond the reserve for faults): listed, and not yet either
 * heap or page. */
size_t page_free_count(void);
/* Free pages a new stack may count on: the listed ones, and those of the
 * untouched middle beyond what is kept there for the heap. */
size_t page_stack_room(void);
/* Pages page_init was given. */
size_t page_total_count(void);

/* Grow malloc's heap up to end, into the RAM it shares with the pages
 * (page.c): 0, or -ENOMEM if that would take a page in use or leave the
 * pages less than their floor. Takes the memory lock. */
int page_heap_grow(uintptr_t end);

/* malloc's heap starts at start and may grow up to end, as far as
 * page_heap_grow lets it (the same range as page_init's). */
void heap_init(uintptr_t start, uintptr_t end);
/* Bytes sbrk has handed out. */
size_t heap_used(void);

/* WEFT_MEMSTAT_MS (memstat.c): print the memory line if it is due at now;
 * returns when the next one is (a deadline for the caller's wait), or -1
 * when none is asked for. Thread context, interrupts on. */
int64_t memstat_poll(int64_t now);

/* Build the Sv39 tables (identity RAM and MMIO) and turn translation on. */
void vm_init(uintptr_t ram_base, uintptr_t ram_end);
/* Entries of the stack window: none (a guard; touching it faults), lazy (a
 * stack page to be mapped on its first touch) or mapped. */
/* Make va's entry lazy if it is none (its tables made now). 0 or -ENOMEM. */
int vm_reserve(uintptr_t va);
/* Map a lazy va to the page pa. 0, or -EFAULT if va is not lazy. */
int vm_map(uintptr_t va, uintptr_t pa);
/* Unmap va, leaving it lazy (keep) or none; returns its page or 0. */
uintptr_t vm_unmap(uintptr_t va, int keep);
/* 1 if va is in a mapped page of the stack window (for tests). */
int vm_mapped(uintptr_t va);
/* 1 if va is a lazy page of the stack window. */
int vm_lazy(uintptr_t va);
/* Where fiber stacks live: [VM_STACK_BASE, VM_STACK_BASE + VM_STACK_SIZE). */
#define VM_STACK_BASE 0x2000000000UL /* 128 GiB */
#define VM_STACK_SIZE (1UL << 30)

/* Give the pages of every pooled stack back (stack.c); 1 if any were. */
int stack_reclaim(void);

/* A page fault at va (demand.c): if va is a lazy stack page, map a page
 * there and return 0 (the instruction runs again); -EFAULT if va is not
 * one (a guard, a wild address: fault.c reports it); -ENOMEM if no page
 * could be had. Trap context, interrupts off. */
int demand_fault(uintptr_t va);
/* Demand faults served so far (for tests and measurements). */
uint64_t demand_faults(void);

/* ---- Threads, time, traps (thread.c, clock.c, trap.c) --------------------- */

/* Make the boot context thread 0 ("main") with the given TLS block. */
void thread_init(void *tls);
/* Timer interrupt: wake sleepers, and preempt if another thread may run.
 * Returns 1 if the trap should resume in arch_preempt_resume. */
int thread_tick(void);

/* After a device interrupt: 1 if its handler woke a waiting thread, which
 * should run now (the trap then resumes in arch_preempt_resume). */
int thread_irq_woke(void);

/* Program the one timer interrupt for a shim_now() time. */
void clock_set_timer(int64_t deadline_ns); /* -1: none */

/* Trap stack set-up (sscratch, stvec). */
void trap_init(void);

/* An exception (fault.c): report it and end the run. */
_Noreturn void trap_fault(struct trap_frame *f);
/* A demand fault that found no page (fault.c): report the address and the
 * fiber whose stack it is, and end the run as an overflow does. */
_Noreturn void trap_no_page(struct trap_frame *f);

/* Claim and serve every pending external interrupt (the handlers drivers
 * registered with irq_register). Interrupts off. */
void trap_external(void);

/* ---- Console input (tty.c) ------------------------------------------------
 * I/O source 0: the console UART's received bytes, by its interrupt (or
 * polled: the fallback). */
/* Register source 0 and take the UART's interrupt (boot, after the PLIC
 * and the environment). */
void tty_init(void);
/* Up to n received bytes into buf: their count, or -EAGAIN when none
 * wait. Never waits. Any thread. read(0, ...) is this. */
long tty_read(void *buf, size_t n);
/* Let go of the console's PLIC source (0: receive polled; a test may
 * register its own handler there meanwhile) or take it again (1). */
void tty_irq_take(int on);
struct tty_stats {
	uint64_t irqs;   /* receive interrupts taken */
	uint64_t bytes;  /* bytes taken from the UART */
	uint64_t polled; /* times a poll (not the interrupt) found bytes */
};
void tty_stats(struct tty_stats *out);

#endif
