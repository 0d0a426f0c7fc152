/* SPDX-License-Identifier: MIT */
/* Inside the bare-metal kernel-shim: what its files share, and the board
 * contract (board/<target>/board.c and board.h) they are built on. */
#ifndef WEFT_BARE_H
#define WEFT_BARE_H

#include <stddef.h>
#include <stdint.h>

#include "board.h"
#include "fdt.h" /* the device tree and the command line */
#include "arch_bare.h"

#define PAGE_SIZE 4096UL

/* ---- The board contract (board/<target>/) --------------------------------
 * board.h defines BOARD_RAM_BASE, BOARD_LOAD_ADDR,
 * BOARD_RAM_SIZE_DEFAULT, BOARD_RAM_END_MAX, BOARD_MMIO_BASE/SIZE (whole
 * gigapage-aligned window), BOARD_UART_BASE/SHIFT/CLOCK/BAUD,
 * BOARD_TIMEBASE_HZ and BOARD_PLIC_BASE/NDEV/CONTEXT(hart); a board with
 * virtio-mmio transports also BOARD_VIRTIO_MMIO_BASE/STRIDE/SLOTS/IRQ(slot). */

/* Set up the console (before anything prints). */
void board_console_init(void);
/* Write one byte to the console, waiting for room. */
void board_console_putc(char c);
/* End the run with status (0 passes). Never returns. */
_Noreturn void board_exit(int status);
/* Extra PTE bits for RAM (mmio = 0) or device memory (mmio = 1): the C906's
 * memory attributes when its MAEE mode is on, 0 elsewhere. */
uint64_t board_pte_bits(int mmio);

/* ---- Memory (page.c, heap.c, vm.c) --------------------------------------- */

/* Give the allocator the free RAM [start, end). */
void page_init(uintptr_t start, uintptr_t end);
/* One zeroed 4 KiB page, or NULL. */
void *page_alloc(void);
void page_free(void *p);

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

/* ---- Device interrupts (trap.c, board/common/plic.c) ----------------------
 * External interrupts come through the board's PLIC (board.h: BOARD_PLIC_*).
 * A handler runs with interrupts off, either on the trap stack or in the
 * idle loop of thread.c (which takes pending interrupts itself: it waits with
 * interrupts off). It must not wait, allocate or use stdio; it may call
 * io_report and shim_wake. */
typedef void (*irq_handler)(void *arg);
/* Route PLIC source irq to fn(arg) and enable it. 0, -EINVAL, -EBUSY. */
int irq_register(unsigned irq, irq_handler fn, void *arg);
/* Disable source irq and forget its handler. */
void irq_unregister(unsigned irq);
/* Claim and serve every pending external interrupt. Interrupts off. */
void trap_external(void);

/* ---- I/O sources (io.c): the bare half of the shim's I/O readiness --------
 * A driver makes a device an I/O source: the small int that shim_io_arm and
 * shim_io_poll know it by (the first one registered is 0). ready(arg) says
 * what the device is ready for right now (SHIM_IO_IN | OUT | ERR); it is
 * called with interrupts off when the source is armed or polled, so a
 * readiness that came before the arming is not lost. */
/* The new source's number, or -EMFILE when all are taken. */
int io_source_add(unsigned (*ready)(void *arg), void *arg);
/* Forget src (disarms it and drops what it reported). */
void io_source_remove(int src);
/* The device behind src is ready for events: if src is armed for any of
 * them (ERR always counts), queue one report, disarm src and wake the
 * poller. From an interrupt handler or a thread, interrupts on or off. */
void io_report(int src, unsigned events);

/* Print without stdio or locks (trap context). */
void bare_puts(const char *s);
void bare_put_hex(uint64_t v);
void bare_put_dec(uint64_t v);

#endif
