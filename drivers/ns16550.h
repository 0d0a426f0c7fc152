/* SPDX-License-Identifier: MIT */
/* An NS16550-compatible UART (QEMU's ns16550a, the DesignWare 8250 of the
 * Duo) as a board's console (board_console_init, putc, getc, rx_irq):
 * transmit polled, receive by interrupt or polled. Interrupts off around
 * getc and rx_irq when a handler also uses them. */
#ifndef WEFT_NS16550_H
#define WEFT_NS16550_H

#include <stdint.h>

struct ns16550 {
	uintptr_t base; /* the registers */
	unsigned shift; /* registers are 1 << shift bytes apart; 0: byte-wide,
			 * otherwise read and written as 32-bit words */
	unsigned clock; /* input clock in Hz; 0: keep the line settings the
			 * firmware left */
	unsigned baud;  /* with clock: the divisor is set for this, 8N1 */
};

/* Set the line up (unless u->clock is 0), FIFOs on. */
void ns16550_init(const struct ns16550 *u);

/* Write one byte, waiting until the transmitter has room. */
void ns16550_putc(const struct ns16550 *u, char c);

/* A received byte (0..255), or -1 when none waits. Never waits. */
int ns16550_getc(const struct ns16550 *u);

/* Let the UART interrupt when received data waits (IER's ERBFI, and MCR's
 * OUT2, which gates the interrupt line on some 16550s), or (on = 0) turn
 * every UART interrupt off. The handler takes the bytes with getc until it
 * says -1, which ends the interrupt. */
void ns16550_rx_irq(const struct ns16550 *u, int on);

/* Loopback (MCR's LOOP): every byte sent is received by the UART itself
 * and nothing reaches the line. For tests that need a device to raise its
 * receive interrupt at a known time; console output is lost meanwhile. */
void ns16550_loopback(const struct ns16550 *u, int on);

#endif
