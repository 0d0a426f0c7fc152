/* SPDX-License-Identifier: MIT */
/* An NS16550-compatible UART (QEMU's ns16550a, the Duo's DesignWare 8250),
 * polled. Registers are 1 << shift bytes apart. */
#include "ns16550.h"

#define RBR_THR_DLL 0
#define IER_DLM 1
#define FCR 2
#define LCR 3
#define LSR 5
#define LCR_DLAB 0x80
#define LCR_8N1 0x03
#define LSR_THRE 0x20

static volatile uint32_t *reg(const struct ns16550 *u, int n)
{
	return (volatile uint32_t *)(u->base + ((uintptr_t)n << u->shift));
}

/* Byte-wide registers are read and written as bytes, wider ones as words. */
static void wr(const struct ns16550 *u, int n, uint8_t v)
{
	if (u->shift == 0)
		*(volatile uint8_t *)reg(u, n) = v;
	else
		*reg(u, n) = v;
}

static uint8_t rd(const struct ns16550 *u, int n)
{
	return u->shift == 0 ? *(volatile uint8_t *)reg(u, n) : (uint8_t)*reg(u, n);
}

void ns16550_init(const struct ns16550 *u)
{
	if (u->clock == 0)
		return; /* firmware set the line up */
	unsigned div = (u->clock + 8u * u->baud) / (16u * u->baud);
	while (!(rd(u, LSR) & LSR_THRE))
		;
	wr(u, IER_DLM, 0);
	wr(u, LCR, LCR_DLAB);
	wr(u, RBR_THR_DLL, div & 0xff);
	wr(u, IER_DLM, (div >> 8) & 0xff);
	wr(u, LCR, LCR_8N1);
	wr(u, FCR, 0x07); /* FIFOs on and cleared */
}

void ns16550_putc(const struct ns16550 *u, char c)
{
	while (!(rd(u, LSR) & LSR_THRE))
		;
	wr(u, RBR_THR_DLL, (uint8_t)c);
}
