/* SPDX-License-Identifier: MIT */
/* qemu-virt: the console on the NS16550A, ending the run through the SiFive
 * test finisher, whose status QEMU exits with; plain RISC-V page
 * attributes. */
#include <stdint.h>

#include "arch_bare.h"
#include "board_contract.h"
#include "ns16550.h"

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

_Noreturn void board_exit(int status)
{
	volatile uint32_t *finisher = (volatile uint32_t *)BOARD_FINISHER;
	if (status == 0)
		*finisher = 0x5555;
	else
		*finisher = ((uint32_t)(status & 0xffff) << 16) | 0x3333;
	for (;;)
		wfi();
}

uint64_t board_pte_bits(int mmio)
{
	(void)mmio;
	return 0;
}
