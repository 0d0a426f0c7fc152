/* SPDX-License-Identifier: MIT */
/* QEMU's riscv64 `virt` machine as OpenSBI hands it to an S-mode payload:
 * the memory map, the console, the timebase and how to end the run. */
#ifndef WEFT_BOARD_H
#define WEFT_BOARD_H

/* RAM starts here; OpenSBI owns the first 2 MiB, the image is loaded at
 * BOARD_LOAD_ADDR. The size comes from the device tree's /memory node;
 * BOARD_RAM_END_MAX caps it, BOARD_RAM_SIZE_DEFAULT is used without one. */
#define BOARD_RAM_BASE 0x80000000UL
#define BOARD_LOAD_ADDR 0x80200000UL
#define BOARD_RAM_SIZE_DEFAULT (128UL << 20)
#define BOARD_RAM_END_MAX 0xc0000000UL /* one identity gigapage of RAM */

/* Device memory: identity-mapped as one gigapage, 0 .. 1 GiB. */
#define BOARD_MMIO_BASE 0x00000000UL
#define BOARD_MMIO_SIZE (1UL << 30)

/* NS16550A UART, byte-wide registers. QEMU needs no divisor set-up. */
#define BOARD_UART_BASE 0x10000000UL
#define BOARD_UART_SHIFT 0
#define BOARD_UART_CLOCK 0 /* 0: leave the line settings as firmware set them */
#define BOARD_UART_BAUD 115200
/* The UART's PLIC source, for console input by interrupt: QEMU's virt.h: UART0_IRQ 10; its device tree's interrupts = <0x0a>. */
#define BOARD_CONSOLE_IRQ 10

#define BOARD_HARTS_MAX 8 /* -smp: the harts QEMU gives, up to this */

/* rdtime ticks per second. */
#define BOARD_TIMEBASE_HZ 10000000UL

/* The PLIC (SiFive's, as the RISC-V PLIC spec describes it): sources
 * 1..BOARD_PLIC_NDEV; hart h's M-mode context is 2h, its S-mode one 2h + 1. */
#define BOARD_PLIC_BASE 0x0c000000UL
#define BOARD_PLIC_NDEV 95
#define BOARD_PLIC_CONTEXT(hart) (2 * (hart) + 1)

/* virtio-mmio transports: 8 slots 0x1000 apart; slot i interrupts on PLIC
 * source 1 + i. An empty slot reads device ID 0. QEMU fills the slots from
 * the top: the first -device lands in slot 7 (0x10008000). */
#define BOARD_VIRTIO_MMIO_BASE 0x10001000UL
#define BOARD_VIRTIO_MMIO_STRIDE 0x1000UL
#define BOARD_VIRTIO_MMIO_SLOTS 8
#define BOARD_VIRTIO_MMIO_IRQ(slot) (1 + (slot))

/* SiFive test finisher: 0x5555 passes, (code << 16) | 0x3333 fails with code. */
#define BOARD_FINISHER 0x100000UL

#endif
