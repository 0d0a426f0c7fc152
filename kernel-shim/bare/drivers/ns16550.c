/* SPDX-License-Identifier: MIT */
/* An NS16550-compatible UART (QEMU's ns16550a, the Duo's DesignWare 8250),
 * polled. Registers are 1 << BOARD_UART_SHIFT bytes apart. */
#include <stdint.h>

#include "board.h"

#define REG(n) ((volatile uint32_t *)(BOARD_UART_BASE + ((uintptr_t)(n) << BOARD_UART_SHIFT)))
#define RBR_THR_DLL 0
#define IER_DLM 1
#define FCR 2
#define LCR 3
#define LSR 5
#define LCR_DLAB 0x80
#define LCR_8N1 0x03
#define LSR_THRE 0x20

/* Byte-wide registers are read and written as bytes, wider ones as words. */
static void wr(int n, uint8_t v)
{
	if (BOARD_UART_SHIFT == 0)
		*(volatile uint8_t *)REG(n) = v;
	else
		*REG(n) = v;
}

static uint8_t rd(int n)
{
	return BOARD_UART_SHIFT == 0 ? *(volatile uint8_t *)REG(n) : (uint8_t)*REG(n);
}

void board_console_init(void)
{
	if (BOARD_UART_CLOCK == 0)
		return; /* firmware set the line up */
	unsigned div = (BOARD_UART_CLOCK + 8u * BOARD_UART_BAUD) / (16u * BOARD_UART_BAUD);
	while (!(rd(LSR) & LSR_THRE))
		;
	wr(IER_DLM, 0);
	wr(LCR, LCR_DLAB);
	wr(RBR_THR_DLL, div & 0xff);
	wr(IER_DLM, (div >> 8) & 0xff);
	wr(LCR, LCR_8N1);
	wr(FCR, 0x07); /* FIFOs on and cleared */
}

void board_console_putc(char c)
{
	while (!(rd(LSR) & LSR_THRE))
		;
	wr(RBR_THR_DLL, (uint8_t)c);
}
