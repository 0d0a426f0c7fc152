/* SPDX-License-Identifier: MIT */
/* The template board's facts: every constant of the board contract
 * (board/board_contract.h says what each means), with qemu-virt's values
 * as the example (RAM capped at the 128 MiB its board.dts says). A port
 * replaces each with its own board's, from the vendor's device tree and
 * manual. */
#ifndef WEFT_BOARD_H
#define WEFT_BOARD_H

/* RAM: where it starts, where firmware loads the image (link.ld's
 * LOAD_ADDR; OpenSBI keeps the 2 MiB below), its size without a device
 * tree, and the highest end weft may use (leave out RAM that other cores or
 * firmware own). */
#define BOARD_RAM_BASE 0x80000000UL
#define BOARD_LOAD_ADDR 0x80200000UL
#define BOARD_RAM_SIZE_DEFAULT (128UL << 20)
#define BOARD_RAM_END_MAX 0x88000000UL

/* The devices' address window, identity-mapped with 1 GiB pages: a
 * gigapage-aligned range that holds every device weft touches. */
#define BOARD_MMIO_BASE 0x00000000UL
#define BOARD_MMIO_SIZE (1UL << 30)

#define BOARD_HARTS_MAX 1 /* raise it for a board with more cores */

/* rdtime ticks per second: the device tree's /cpus timebase-frequency. */
#define BOARD_TIMEBASE_HZ 10000000UL

/* The PLIC: its address, its highest source (riscv,ndev), and the context
 * of hart h's S-mode (2h + 1 where each hart has an M and an S context). */
#define BOARD_PLIC_BASE 0x0c000000UL
#define BOARD_PLIC_NDEV 95
#define BOARD_PLIC_CONTEXT(hart) (2 * (hart) + 1)

/* The board's own, for board.c: the console UART (16550-compatible,
 * registers 1 << SHIFT bytes apart; CLOCK 0 keeps the line as firmware set
 * it up, otherwise the divisor is set from CLOCK and BAUD). */
#define BOARD_UART_BASE 0x10000000UL
#define BOARD_UART_SHIFT 0
#define BOARD_UART_CLOCK 0
#define BOARD_UART_BAUD 115200
/* The UART's PLIC source, for console input by interrupt: (this is qemu-virt's: take it from the board's device tree). */
#define BOARD_CONSOLE_IRQ 10

#endif
