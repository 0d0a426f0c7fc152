/* SPDX-License-Identifier: MIT */
/* The bare-metal board contract: what board/<target>/ gives the bare
 * kernel-shim. Constants in the board's board.h, known
 * when the shim is compiled (the linker script and mk/check-image.sh read
 * the memory map too); the drivers to build in its board.mk (BOARD_DRIVERS,
 * files of drivers/, and BOARD_CONSOLE); six hooks in its board.c, four of
 * them the console's unless BOARD_CONSOLE names a console the shim drives.
 * A board's own files include this header and the arch's (arch_bare.h),
 * never the shim's or a driver's: the Makefile compiles them without
 * the shim's folders or drivers/ on the include path. board/template/ is a board
 * to copy. */
#ifndef WEFT_BOARD_CONTRACT_H
#define WEFT_BOARD_CONTRACT_H

#include <stdint.h>

#include "board.h" /* board/<target>/board.h */

/* ---- Memory ----------------------------------------------------------------
 * BOARD_RAM_BASE          where RAM starts; a device tree's /memory node is
 *                         used only if it starts here
 * BOARD_LOAD_ADDR         where firmware loads and enters the image: link.ld's
 *                         LOAD_ADDR, checked by mk/check-image.sh
 * BOARD_RAM_SIZE_DEFAULT  RAM's size when no device tree says it
 * BOARD_RAM_END_MAX       RAM ends here at most, whatever the device tree
 *                         says; a device-tree pointer outside
 *                         [BOARD_RAM_BASE, BOARD_RAM_END_MAX) is ignored
 * BOARD_MMIO_BASE, BOARD_MMIO_SIZE
 *                         the device window, identity-mapped with 1 GiB pages
 *                         (gigapage-aligned) */
#if !defined(BOARD_RAM_BASE) || !defined(BOARD_LOAD_ADDR) || !defined(BOARD_RAM_SIZE_DEFAULT) || \
	!defined(BOARD_RAM_END_MAX)
#error "board.h: BOARD_RAM_BASE, BOARD_LOAD_ADDR, BOARD_RAM_SIZE_DEFAULT and BOARD_RAM_END_MAX are required"
#endif
#if !defined(BOARD_MMIO_BASE) || !defined(BOARD_MMIO_SIZE)
#error "board.h: BOARD_MMIO_BASE and BOARD_MMIO_SIZE are required"
#endif

/* ---- Time ------------------------------------------------------------------
 * BOARD_TIMEBASE_HZ       ticks per second of the time counter (rdtime) */
#ifndef BOARD_TIMEBASE_HZ
#error "board.h: BOARD_TIMEBASE_HZ is required"
#endif

/* ---- Harts ---------------------------------------------------------------
 * BOARD_HARTS_MAX         how many harts the shim runs on at most: the boot
 *                         hart and those among hart ids 0..BOARD_HARTS_MAX-1
 *                         that SBI HSM starts (1: the boot hart alone) */
#if !defined(BOARD_HARTS_MAX) || BOARD_HARTS_MAX < 1 || BOARD_HARTS_MAX > 64
#error "board.h: BOARD_HARTS_MAX (1..64) is required"
#endif

/* ---- Interrupt controller: a RISC-V PLIC (drivers/plic.c) ----------------
 * BOARD_PLIC_BASE         its registers
 * BOARD_PLIC_NDEV         its highest source number (the tree's riscv,ndev)
 * BOARD_PLIC_CONTEXT(h)   the context of hart h's S-mode */
#if !defined(BOARD_PLIC_BASE) || !defined(BOARD_PLIC_NDEV) || !defined(BOARD_PLIC_CONTEXT)
#error "board.h: BOARD_PLIC_BASE, BOARD_PLIC_NDEV and BOARD_PLIC_CONTEXT(hart) are required"
#endif

/* ---- Console ---------------------------------------------------------------
 * With BOARD_CONSOLE := ns16550 in board.mk the shim drives the console
 * (the bare shim's console_ns16550.c on drivers/ns16550.c), from:
 * BOARD_UART_BASE         the UART's registers
 * BOARD_UART_SHIFT        registers 1 << SHIFT bytes apart (0: byte-wide,
 *                         else 32-bit words)
 * BOARD_UART_CLOCK        its input clock in Hz; 0 keeps the line settings
 *                         the firmware left
 * BOARD_UART_BAUD         with CLOCK: the baud rate, 8N1
 * Without BOARD_CONSOLE, board.c defines the four console hooks below. */

/* ---- Console input (optional) --------------------------------------------
 * BOARD_CONSOLE_IRQ       the PLIC source the console UART interrupts on:
 *                         its receive interrupt fills the shim's console
 *                         input (I/O source 0, read(0)). Without it the
 *                         console input is polled (the bare shim's tty.c). */
#if defined(BOARD_CONSOLE_IRQ) && (BOARD_CONSOLE_IRQ < 1 || BOARD_CONSOLE_IRQ > BOARD_PLIC_NDEV)
#error "board.h: BOARD_CONSOLE_IRQ must be a PLIC source, 1..BOARD_PLIC_NDEV"
#endif

/* ---- Network device (optional) -------------------------------------------
 * BOARD_VIRTIO_MMIO_BASE, _STRIDE, _SLOTS, BOARD_VIRTIO_MMIO_IRQ(slot)
 *                         virtio-mmio transports, slot i at BASE + i * STRIDE
 *                         interrupting on PLIC source IRQ(i): the shim's
 *                         "virtio" network device is the first virtio-net
 *                         among them. Without BASE there is none (-ENODEV).
 * BOARD_DWMAC_BASE, BOARD_DWMAC_IRQ
 *                         a Synopsys DWMAC 3.x (drivers/dwmac.c; the board
 *                         names dwmac and dwmac_selftest, which
 *                         WEFT_SELFTEST=eth runs, in BOARD_DRIVERS) and its PLIC
 *                         source: the shim's "dwmac" network device.
 * BOARD_CV1800B_EPHY_BASE, BOARD_CV1800B_EFUSE_BASE,
 * BOARD_CV1800B_PINMUX_BASE, BOARD_CV1800B_RTCIO_BASE
 *                         with BOARD_DWMAC_BASE: the CV1800B's internal PHY,
 *                         brought up (drivers/cv1800b_ephy.c, in
 *                         BOARD_DRIVERS) before the MAC is opened.
 *
 * A board may define constants of its own for its board.c (the UART's
 * address, a test device); the shim reads only the ones above. */

/* ---- Hooks (board.c; the console's from the shim with BOARD_CONSOLE) -------
 * Called by the shim on the boot hart. The console hooks run before and
 * after everything else, in trap context too: no locks, no allocation. */

/* Make the console usable (before anything prints). */
void board_console_init(void);

/* Write one byte to the console, waiting for room. The shim sends "\r\n"
 * for a newline. */
void board_console_putc(char c);

/* A byte the console received (0..255), or -1 when none waits. Never
 * waits. Called with interrupts off, from the console's interrupt handler
 * too. */
int board_console_getc(void);

/* Let the console interrupt on BOARD_CONSOLE_IRQ while received bytes wait
 * (on), or not. Interrupts off. */
void board_console_rx_irq(int on);

/* End the run with status (0 passes): _exit, a fatal trap and a failed boot
 * all end here. Never returns. */
_Noreturn void board_exit(int status);

/* Extra page-table entry bits for RAM (mmio = 0) or for the device window
 * (mmio = 1): 0 on a standard RISC-V core; the C906's memory attributes
 * when its MAEE mode is on. */
uint64_t board_pte_bits(int mmio);

#endif
