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

/* ---- The shim lock (lock.c; shim_big_lock and shim_big_unlock are in driver.h) ---- */
/* 1 if this hart holds the shim lock. */
int shim_big_held(void);
/* Its nesting on the holding hart: a thread switch keeps the switching
 * thread's (thread.c). */
unsigned shim_big_depth(void);
void shim_big_depth_set(unsigned d);
/* Let go of it whatever the nesting (returned), and take it back with it. */
unsigned shim_big_drop(void);
void shim_big_retake(unsigned d);

/* ---- Harts (hart.c) --------------------------------------------------------
 * The boot hart is shim_harts[0]; secondary harts started through SBI HSM
 * follow, shim_hart_count in all. */
struct shim_thread;
struct hart {
	void *boot_sp; /* first: arch_hart_entry's stack top */
	unsigned index;
	unsigned long hartid;     /* the SBI's */
	struct shim_thread *idle; /* its idle context (thread.c) */
	int64_t slice_end;        /* when the running thread's slice ends */
	int asleep;               /* in its idle wfi, not kicked yet: under the shim lock */
	void *trap_top;           /* the top of its trap stack */
};
extern struct hart shim_harts[BOARD_HARTS_MAX];
extern unsigned shim_hart_count;
/* The hart the caller runs on (thread.c: through the running thread). */
struct hart *shim_hart_self(void);
/* The running thread (thread.c). */
struct shim_thread *shim_thread_cur(void);
/* Record the boot hart (before anything takes the shim lock). */
void shim_hart_boot_init(unsigned long hartid);
/* Start the secondary harts (memory and the runtime's environment ready). */
void shim_harts_start(void);
/* Wake hart h from its idle wfi (an IPI). */
void shim_hart_kick(struct hart *h);
/* sfence.vma for [va, va + size) on every other hart that runs with
 * translation on; done when it returns. */
void shim_hart_fence_others(uintptr_t va, size_t size);

/* ---- Memory (page.c, heap.c, vm.c, stack.c, demand.c) --------------------
 * The shim lock guards the pages, the stack window's tables and the stack
 * pools; shim_mem_lock is that lock. The rule for faults: a demand fault may
 * arrive while its own hart holds the lock (the holder's own frame on a
 * stack page not yet mapped), and then touches nothing the holder may be
 * changing: it takes its page from page.c's reserve and writes one entry
 * of a table that exists. A fault on another hart waits for the lock. */
int shim_mem_lock(void); /* returns the interrupt state for shim_mem_unlock */
void shim_mem_unlock(int on);
int shim_mem_locked(void); /* this hart holds the lock */

/* Give the allocator the free RAM [start, end). */
void shim_page_init(uintptr_t start, uintptr_t end);
/* A zeroed page for a demand fault, under the memory lock: from the free
 * pages, or from the reserve if the fault interrupted a holder of the lock
 * (held). NULL when there is none. */
void *shim_page_take_fault(int held);
/* Free pages (beyond the reserve for faults): listed, and not yet either
 * heap or page. */
size_t shim_page_free_count(void);
/* Free pages a new stack may count on: the listed ones, and those of the
 * untouched middle beyond what is kept there for the heap. */
size_t shim_page_stack_room(void);
/* Pages shim_page_init was given. */
size_t shim_page_total_count(void);

/* Grow malloc's heap up to end, into the RAM it shares with the pages
 * (page.c): 0, or -ENOMEM if that would take a page in use or leave the
 * pages less than their floor. Takes the memory lock. */
int shim_page_heap_grow(uintptr_t end);

/* malloc's heap starts at start and may grow up to end, as far as
 * shim_page_heap_grow lets it (the same range as shim_page_init's). */
void shim_heap_init(uintptr_t start, uintptr_t end);
/* Bytes sbrk has handed out. */
size_t shim_heap_used(void);
/* malloc.c's check of its lists and counts, for tests: the faults found. */
int shim_malloc_check(void);

/* WEFT_MEMSTAT_MS (memstat.c): print the memory line if it is due at now;
 * returns when the next one is (a deadline for the caller's wait), or -1
 * when none is asked for. Thread context, interrupts on. */
int64_t shim_memstat_poll(int64_t now);

/* Build the Sv39 tables (identity RAM and MMIO) and turn translation on. */
void shim_vm_init(uintptr_t ram_base, uintptr_t ram_end);
/* Turn translation on with the same tables on a secondary hart. */
void shim_vm_hart_init(void);
/* Entries of the stack window: none (a guard; touching it faults), lazy (a
 * stack page to be mapped on its first touch) or mapped. */
/* Make va's entry lazy if it is none (its tables made now). 0 or -ENOMEM. */
int shim_vm_reserve(uintptr_t va);
/* Map a lazy va to the page pa. 0, or -EFAULT if va is not lazy. */
int shim_vm_map(uintptr_t va, uintptr_t pa);
/* Unmap va, leaving it lazy (keep) or none; returns its page or 0. Fences
 * this hart only: the caller fences the others (shim_hart_fence_others) before
 * the page is used again. */
uintptr_t shim_vm_unmap(uintptr_t va, int keep);
/* 1 if va is in a mapped page of the stack window (for tests). */
int shim_vm_mapped(uintptr_t va);
/* 1 if va is a lazy page of the stack window. */
int shim_vm_lazy(uintptr_t va);
/* Where fiber stacks live: [VM_STACK_BASE, VM_STACK_BASE + VM_STACK_SIZE),
 * whole GiB (vm.c: its tables are made as stacks come). */
#define VM_STACK_BASE 0x2000000000UL /* 128 GiB */
#define VM_STACK_SIZE (16UL << 30)

/* Give the pages of every pooled stack back (stack.c), and those waiting
 * for the other harts' fence; 1 if any were. */
int shim_stack_reclaim(void);
/* The nodes of the stack pools (stack.c), each malloc'd and kept for good:
 * one for each stack pooled or handed out, so as many as the most stacks
 * ever out at once. */
size_t shim_stack_pooled(void);

/* A page unmapped from the stack window (fence.c): free once every other
 * hart has fenced its TLB: at once with one hart, else with the next batch
 * (shim_fence_release, which frees the waiting pages now: 1 if there were
 * any). Either takes the memory lock. */
void shim_fence_defer(uintptr_t pa);
int shim_fence_release(void);
/* The fence count now (under the memory lock), and: make sure a fence has
 * come since it was e (before addresses unmapped at e are used again). */
unsigned long shim_fence_epoch(void);
void shim_fence_after(unsigned long e);

/* A page fault at va (demand.c; fetch: an instruction fetch): if va is a
 * lazy stack page, map a page there and return 0 (the instruction runs
 * again); a load or store on a stack page mapped already (this hart's TLB
 * was stale) is fenced and returns 0; -EFAULT if va is neither (a guard, a
 * wild address: fault.c reports it); -ENOMEM if no page could be had. Trap
 * context, interrupts off. */
int shim_demand_fault(uintptr_t va, int fetch);
/* Demand faults served so far (for tests and measurements). */
uint64_t shim_demand_faults(void);

/* ---- Threads, time, traps (thread.c, clock.c, trap.c) --------------------- */

/* Make the boot context thread 0 ("main") with the given TLS block, on
 * shim_harts[0]. */
void shim_thread_init(void *tls);
/* Make hart h's idle context: on a stack of its own (own_stack: the boot
 * hart's, switched to when it has nothing to run), or on the stack the hart
 * boots on (shim_thread_idle_run). 0 or -ENOMEM. */
int shim_thread_idle_new(struct hart *h, int own_stack);
/* A secondary hart, set up: run threads. Never returns. */
_Noreturn void shim_thread_idle_run(struct hart *h);
/* Timer interrupt: wake sleepers, and preempt if another thread may run.
 * Returns 1 if the trap should resume in arch_preempt_resume. */
int shim_thread_tick(void);

/* After a device interrupt: 1 if its handler woke a waiting thread, which
 * should run now (the trap then resumes in arch_preempt_resume). */
int shim_thread_irq_woke(void);

/* Program the one timer interrupt for a shim_now() time. */
void shim_clock_set_timer(int64_t deadline_ns); /* -1: none */

/* Trap stack set-up (sscratch, stvec): the boot hart's, and a secondary
 * hart's on a trap stack whose top is given. */
void shim_trap_init(void);
void shim_trap_hart_init(void *trap_top);

/* The early boot's words (early.c), on the board's console with no lock:
 * the boot line, first thing in shim_boot (it asks the SBI for its
 * version and the hart's mvendorid, kept in shim_boot_mvendorid: 0 if the SBI
 * has no base extension), and the MMU line once satp is set, with the RAM
 * the shim took (from the device tree, from_tree, or board.h's default). */
extern uint64_t shim_boot_mvendorid;
void shim_boot_line(unsigned long hartid, const void *dtb);
void shim_mmu_line(uintptr_t ram_base, uintptr_t ram_end, int from_tree);
/* An exception's name ("illegal instruction"; fault.c). */
const char *shim_trap_cause_name(uint64_t cause);

/* An exception (fault.c): report it and end the run. */
_Noreturn void shim_trap_fault(struct trap_frame *f);
/* A demand fault that found no page (fault.c): report the address and the
 * fiber whose stack it is, and end the run as an overflow does. */
_Noreturn void shim_trap_no_page(struct trap_frame *f);

/* Claim and serve every pending external interrupt (the handlers drivers
 * registered with shim_irq_register). Interrupts off. */
void shim_trap_external(void);

/* ---- Console input (tty.c) ------------------------------------------------
 * I/O source 0: the console UART's received bytes, by its interrupt (or
 * polled: the fallback). */
/* Register source 0 and take the UART's interrupt (boot, after the PLIC
 * and the environment). */
void shim_tty_init(void);
/* Up to n received bytes into buf: their count, or -EAGAIN when none
 * wait. Never waits. Any thread. read(0, ...) is this. */
long shim_tty_read(void *buf, size_t n);
/* Let go of the console's PLIC source (0: receive polled; a test may
 * register its own handler there meanwhile) or take it again (1). */
void shim_tty_irq_take(int on);
struct shim_tty_stats {
	uint64_t irqs;   /* receive interrupts taken */
	uint64_t bytes;  /* bytes taken from the UART */
	uint64_t polled; /* times a poll (not the interrupt) found bytes */
};
void shim_tty_stats(struct shim_tty_stats *out);

/* ---- Self-tests (netdev.c) ------------------------------------------------
 * WEFT_SELFTEST=eth on the command line: boot.c runs the network device's
 * self-test instead of main (drivers/dwmac.c, dwmac_selftest) and exits
 * with 0 (pass) or 1. 0 pass, -ENODEV no such self-test on this board, or
 * the test's error. */
int shim_selftest(const char *what);

#endif
