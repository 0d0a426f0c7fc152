/* SPDX-License-Identifier: MIT */
/* The console's input: the board's UART interrupts when it has received
 * bytes (BOARD_CONSOLE_IRQ), its handler moves them into a ring here and
 * reports I/O source 0, STDIN_FILENO, so a fiber waits for input as on
 * Linux: weft_fd_wait(0, WEFT_IO_IN, deadline), then read(0, ...), which
 * never waits (-1 with EAGAIN when the ring is empty).
 *
 * While the ring is full the receive interrupt is off and bytes stay in the
 * UART's FIFO (past that the UART drops them); a read turns it on again.
 * Polling is the fallback: on a board without BOARD_CONSOLE_IRQ, or with
 * WEFT_POLL=1 on the command line, the source is polled (io.c asks it at
 * every poll, and a waiting poll wakes every millisecond to ask).
 *
 * The shim lock guards it; the interrupt handler runs under it too
 * (trap.c). */
#include <errno.h>
#include <string.h>

#include "bare.h"
#include "shim.h"

#define RING 256

static struct {
	unsigned char buf[RING];
	unsigned head, len; /* bytes at buf[head ..], wrapping */
	int src;
	int by_irq; /* the receive interrupt is ours */
	int masked; /* off because the ring is full */
	struct shim_tty_stats st;
} tty = {.src = -1};

/* Under the shim lock. Move what the UART holds into the ring; 1 if any came. */
static int drain(void)
{
	int got = 0, c;
	while (tty.len < RING && (c = board_console_getc()) >= 0) {
		tty.buf[(tty.head + tty.len++) % RING] = (unsigned char)c;
		tty.st.bytes++;
		got = 1;
	}
	if (tty.len == RING && tty.by_irq && !tty.masked) {
		board_console_rx_irq(0);
		tty.masked = 1;
	}
	return got;
}

/* io.c asks when the source is armed (and, polled, at every poll). */
static unsigned tty_ready(void *arg)
{
	(void)arg;
	if (drain() && !tty.by_irq)
		tty.st.polled++;
	return tty.len ? SHIM_IO_IN : 0;
}

static void tty_irq(void *arg)
{
	(void)arg;
	tty.st.irqs++;
	drain();
	if (tty.len)
		shim_io_report(tty.src, SHIM_IO_IN);
}

void shim_tty_irq_take(int on)
{
#ifdef BOARD_CONSOLE_IRQ
	int s = shim_big_lock();
	if (on && !tty.by_irq && tty.src >= 0 &&
	    shim_irq_register(BOARD_CONSOLE_IRQ, tty_irq, NULL) == 0) {
		tty.by_irq = 1;
		tty.masked = 0;
		board_console_rx_irq(tty.len < RING);
		tty.masked = tty.len == RING;
	} else if (!on && tty.by_irq) {
		board_console_rx_irq(0);
		shim_irq_unregister(BOARD_CONSOLE_IRQ);
		tty.by_irq = 0;
	}
	shim_io_source_irq(tty.src, tty.by_irq);
	shim_big_unlock(s);
#else
	(void)on;
#endif
}

void shim_tty_init(void)
{
	tty.src = shim_io_source_add(tty_ready, NULL);
	if (tty.src != 0) {
		shim_puts("weft: console input is not I/O source 0\n");
		return;
	}
	const char *poll = shim_getenv("WEFT_POLL");
	if (!poll || strcmp(poll, "1") != 0)
		shim_tty_irq_take(1);
}

long shim_tty_read(void *buf, size_t n)
{
	int s = shim_big_lock();
	if (!tty.by_irq || !tty.len)
		drain(); /* polled, or bytes the interrupt has not brought yet */
	size_t k = n < tty.len ? n : tty.len;
	for (size_t i = 0; i < k; i++)
		((unsigned char *)buf)[i] = tty.buf[(tty.head + i) % RING];
	tty.head = (tty.head + (unsigned)k) % RING;
	tty.len -= (unsigned)k;
	if (tty.masked && tty.len < RING) {
		tty.masked = 0;
		board_console_rx_irq(1);
	}
	shim_big_unlock(s);
	return k ? (long)k : (n ? -EAGAIN : 0);
}

void shim_tty_stats(struct shim_tty_stats *out)
{
	int s = shim_big_lock();
	*out = tty.st;
	shim_big_unlock(s);
}
