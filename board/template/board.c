/* SPDX-License-Identifier: MIT */
/* The template board's hooks (board/board_contract.h): the console on a
 * 16550-compatible UART, the end of a run through the firmware's system
 * reset, and no extra page attributes. A port keeps what fits its board
 * and replaces the rest (qemu-virt's board.c ends through QEMU's test
 * device, the Duo's sets the C906's page attributes). */
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

/* SBI SRST: firmware without a reset device returns, and the hart waits. */
_Noreturn void board_exit(int status)
{
	sbi_system_reset(SBI_SRST_SHUTDOWN,
			 status ? SBI_SRST_REASON_FAILURE : SBI_SRST_REASON_NONE);
	for (;;)
		wfi();
}

/* A standard RISC-V core needs no bits beyond the Sv39 ones. */
uint64_t board_pte_bits(int mmio)
{
	(void)mmio;
	return 0;
}
