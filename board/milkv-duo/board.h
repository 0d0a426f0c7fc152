/* SPDX-License-Identifier: MIT */
/* Milk-V Duo (CV1800B, 64 MB) as U-Boot hands it to an S-mode payload, with
 * OpenSBI below. Addresses from the vendor device tree (see ../shared/FACTS.md
 * and docs/boards/milkv-duo.md); `make TARGET=milkv-duo` checks the image
 * against them with readelf (mk/check-image.sh). */
#ifndef WEFT_BOARD_H
#define WEFT_BOARD_H

/* OpenSBI owns 0x80000000..0x80200000; the image is loaded at 0x80200000.
 * The small core's FreeRTOS owns the top 768 KiB (0x83f40000..0x84000000):
 * weft stops below it, whatever the device tree says. */
#define BOARD_RAM_BASE 0x80000000UL
#define BOARD_LOAD_ADDR 0x80200000UL
#define BOARD_RAM_SIZE_DEFAULT (0x83f40000UL - 0x80000000UL)
#define BOARD_RAM_END_MAX 0x83f40000UL

/* Devices: UART0 0x04140000, PLIC 0x70000000, CLINT 0x74000000, DWMAC
 * 0x04070000: identity-mapped as the two gigapages 0 .. 2 GiB. */
#define BOARD_MMIO_BASE 0x00000000UL
#define BOARD_MMIO_SIZE (2UL << 30)
#define BOARD_CLINT_BASE 0x74000000UL

/* The C906's PLIC ("thead,c900-plic"; OpenSBI lets S-mode program it):
 * sources 1..101; context 0 is the hart's M-mode, 1 its S-mode. */
#define BOARD_PLIC_BASE 0x70000000UL
#define BOARD_PLIC_NDEV 101
#define BOARD_PLIC_CONTEXT(hart) (2 * (hart) + 1)

/* UART0: DesignWare 8250, registers 4 bytes apart, 25 MHz, 115200 8N1.
 * U-Boot has set the line up; weft keeps it (clock 0). With 25000000 here
 * weft programs divisor 14 itself (3.1 % slow). */
#define BOARD_UART_BASE 0x04140000UL
#define BOARD_UART_SHIFT 2
#define BOARD_UART_CLOCK 0
#define BOARD_UART_BAUD 115200
/* The UART's PLIC source, for console input by interrupt: the CV1800B's device tree (Linux's cv18xx.dtsi): interrupts = <44 IRQ_TYPE_LEVEL_HIGH>, SOC_PERIPHERAL_IRQ(28). */
#define BOARD_CONSOLE_IRQ 44

/* Ethernet (docs/boards/cv1800b-ethernet.md): the DWMAC and its PLIC
 * source, the internal PHY's APB block, eFuse (its trims) and the LED
 * pads' pin mux. */
#define BOARD_DWMAC_BASE 0x04070000UL
#define BOARD_DWMAC_IRQ 31
#define BOARD_CV1800B_EPHY_BASE 0x03009000UL
#define BOARD_CV1800B_EFUSE_BASE 0x03050000UL
#define BOARD_CV1800B_PINMUX_BASE 0x03001000UL
#define BOARD_CV1800B_RTCIO_BASE 0x05027000UL

#define BOARD_HARTS_MAX 1 /* one hart: the C906 that OpenSBI and Linux run on */

/* rdtime ticks per second (the CLINT's timebase). */
#define BOARD_TIMEBASE_HZ 25000000UL

#endif
