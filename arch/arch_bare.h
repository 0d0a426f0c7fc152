/* SPDX-License-Identifier: MIT */
/* The bare-metal arch contract: what arch/<cpu>/bare/ gives the bare
 * kernel-shim and the boards when there is no kernel, beside arch.h's
 * context switch (and arch.h's arch_relax() for spin loops). The build
 * puts arch/<cpu>/bare/ on the include path, so <arch_bare_cpu.h> is the
 * CPU's own inline helpers and trap frame. */
#ifndef WEFT_ARCH_BARE_H
#define WEFT_ARCH_BARE_H

#include <stdint.h>

/*
 * From <arch_bare_cpu.h>, inline, callable from any context (a trap
 * handler too):
 *
 *   int irq_save(void)         interrupts off on this hart; returns whether
 *                              they were on
 *   void irq_restore(int on)   back on if on (what irq_save returned)
 *   void wfi(void)             wait for an interrupt (it may return early)
 *   void dma_mb(void)          every earlier memory and device access before
 *                              every later one (descriptors, then the
 *                              register write that tells the device)
 *   void dma_wmb(void)         earlier memory stores before later ones
 *   void dma_rmb(void)         earlier memory loads before later ones
 *   uint32_t mmio_read32(uintptr_t a)          a device register's 32-bit
 *   void mmio_write32(uintptr_t a, uint32_t v)   read and write, in program
 *                              order with other device accesses (a driver's
 *                              every register access goes through these: a
 *                              host-side model of the device stands in for
 *                              them in tests/)
 *   DMA_CACHE_LINE             the data cache's line, in bytes
 *   void dma_cache_clean(const void *p, size_t n)   write back the lines
 *                              covering [p, p + n): a device then reads
 *                              what the CPU wrote (before giving it memory)
 *   void dma_cache_inval(void *p, size_t n)   drop the lines covering
 *                              [p, p + n): the CPU then reads what a device
 *                              wrote (after taking memory back); what the
 *                              CPU wrote there and did not clean is lost
 *   void dma_cache_flush(void *p, size_t n)   both, clean then drop
 *                              Each completes (riscv64 C906: th.sync.s)
 *                              before it returns. No-ops where devices
 *                              see the caches (qemu-virt); the C906 of the
 *                              Milk-V Duo is not coherent (board.mk:
 *                              BOARD_DMA_CACHE := thead). The rule for a
 *                              driver: whatever a device reads or writes
 *                              (descriptors, buffers) starts on a
 *                              DMA_CACHE_LINE boundary and owns its lines
 *                              whole, so that no line holds both bytes the
 *                              CPU writes and bytes the device writes
 *   uint64_t rdtime(void)      the free-running time counter, in ticks of
 *                              the board's BOARD_TIMEBASE_HZ
 *   uint64_t fp_csr_read(void) the FPU's control and status (rounding mode,
 *   void fp_csr_write(uint64_t)  exception flags), a thread's own: the
 *                              shim's thread switch keeps it; 0 without FPU
 *   struct trap_frame          what arch_trap_entry saves: every integer
 *                              register and the trap's cause, address and
 *                              status; TRAP_FRAME_SIZE bytes, 16-aligned
 *
 * and the CPU's firmware calls (riscv64: sbi.h, the SBI into OpenSBI).
 */
#include <arch_bare_cpu.h>

/*
 * _start, the image's entry point (start.S, first in .text by the linker
 * script): entered by firmware in supervisor mode with the hart id and the
 * device tree's address (riscv64: a0, a1). The first hart to enter boots:
 * sets up what C needs (global pointer, a boot stack, the FPU on,
 * interrupts off, .bss cleared) and calls shim_boot, which never returns.
 * Any other hart that firmware sends here touches nothing and stops itself
 * (riscv64: SBI HSM hart_stop), for shim_boot to start it as it starts the
 * rest.
 */
void shim_boot(unsigned long hartid, const void *dtb);
/*
 * arch_hart_entry, where a secondary hart starts (start.S; riscv64: given
 * to SBI HSM's hart_start): entered in supervisor mode, translation and
 * interrupts off, with its hart id and an opaque pointer whose first word
 * is the top of the stack it is to boot on. Sets up what C needs and calls
 * shim_hart_boot(hartid, opaque), which never returns.
 */
void arch_hart_entry(void);
void shim_hart_boot(unsigned long hartid, void *opaque);
/* The time counter (rdtime) read by _start's first instruction. */
extern uint64_t arch_boot_entry;
/* The CPU's status word as the firmware handed it over (riscv64: sstatus
 * at _start's entry), for the boot line. */
extern uint64_t arch_boot_sstatus;

/*
 * The trap vector from _start's (and arch_hart_entry's) first instructions
 * until the shim installs arch_trap_entry (trap.S): nothing may be set up
 * (stack, global pointer), so it takes a stack of its own, saves a struct
 * trap_frame there and calls shim_early_trap(frame), which reports the
 * trap and must not return.
 */
void arch_early_trap(void);
_Noreturn void shim_early_trap(struct trap_frame *f);

/*
 * The trap vector (trap.S): the shim points the CPU's trap base at it
 * (riscv64: stvec, with the top of the trap stack in sscratch). It takes
 * every interrupt and exception on the trap stack, never on the interrupted
 * one (which may be the guard page that faulted); one taken inside the
 * handler (a demand-paging fault) goes below the handler's own frames on
 * the trap stack, and returns to it. It saves a struct
 * trap_frame there and calls shim_trap(frame); when that returns it
 * restores the frame, as the handler may have changed it, and resumes.
 */
void arch_trap_entry(void);
void shim_trap(struct trap_frame *f);

/*
 * Where a preempted thread continues (trap.S): shim_trap copies the frame
 * onto the thread's own stack and makes the trap return here with the
 * stack pointer and the first argument register at that copy, interrupts
 * off. It saves the FP registers, switches away like a thread that waits,
 * and when switched back restores everything and returns to the
 * interrupted instruction.
 */
void arch_preempt_resume(void);

#endif
