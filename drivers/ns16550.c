/* SPDX-License-Identifier: MIT */
/* An NS16550-compatible UART (QEMU's ns16550a, the Duo's DesignWare 8250):
 * transmit polled, receive polled or by its received-data interrupt.
 * Registers are 1 << shift bytes apart. The receive interrupt (IER bit 0,
 * ERBFI) is raised while received bytes wait in the FIFO at or above its
 * trigger level (1 byte: FCR's trigger bits are 0) or, below it, after the
 * line was quiet for four characters' time; reading RBR until LSR says
 * empty ends both. */
#include "ns16550.h"

#define RBR_THR_DLL 0
#define IER_DLM 1
#define FCR 2
#define LCR 3
#define MCR 4
#define LSR 5
#define LCR_DLAB 0x80
#define LCR_8N1 0x03
#define LSR_DR 0x01
#define LSR_THRE 0x20
#define IER_ERBFI 0x01
#define MCR_OUT2 0x08 /* gates the interrupt line on PC-style 16550s */
#define MCR_LOOP 0x10

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

int ns16550_getc(const struct ns16550 *u)
{
	if (!(rd(u, LSR) & LSR_DR))
		return -1;
	return rd(u, RBR_THR_DLL);
}

void ns16550_rx_irq(const struct ns16550 *u, int on)
{
	wr(u, IER_DLM, on ? IER_ERBFI : 0);
	if (on)
		wr(u, MCR, (uint8_t)(rd(u, MCR) | MCR_OUT2));
}

void ns16550_loopback(const struct ns16550 *u, int on)
{
	uint8_t m = rd(u, MCR);
	wr(u, MCR, (uint8_t)(on ? m | MCR_LOOP : m & ~MCR_LOOP));
}
