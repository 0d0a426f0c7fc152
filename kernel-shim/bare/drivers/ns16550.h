/* SPDX-License-Identifier: MIT */
/* An NS16550-compatible UART (QEMU's ns16550a, the DesignWare 8250 of the
 * Duo), polled, as a board's console (board_console_init/putc). */
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

#endif
