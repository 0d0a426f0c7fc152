/* SPDX-License-Identifier: MIT */
/* The console hooks of board_contract.h on an NS16550-compatible UART
 * (drivers/ns16550.c), for a board whose board.mk says BOARD_CONSOLE :=
 * ns16550: the UART is board data (BOARD_UART_* in its board.h), so a board
 * with such a console writes no console code and includes no driver. */
#include "board_contract.h"
#include "ns16550.h"

#if !defined(BOARD_UART_BASE) || !defined(BOARD_UART_SHIFT) || !defined(BOARD_UART_CLOCK) || \
	!defined(BOARD_UART_BAUD)
#error "board.h: BOARD_CONSOLE := ns16550 needs BOARD_UART_BASE, _SHIFT, _CLOCK and _BAUD"
#endif

static const struct ns16550 uart = {
	.base = BOARD_UART_BASE,
	.shift = BOARD_UART_SHIFT,
	.clock = BOARD_UART_CLOCK,
	.baud = BOARD_UART_BAUD,
};

void board_console_init(void) { ns16550_init(&uart); }

void board_console_putc(char c) { ns16550_putc(&uart, c); }

int board_console_getc(void) { return ns16550_getc(&uart); }

void board_console_rx_irq(int on) { ns16550_rx_irq(&uart, on); }
