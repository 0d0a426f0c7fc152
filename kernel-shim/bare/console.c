/* SPDX-License-Identifier: MIT */
/* The console: the board's UART, for the shim's own messages (trap context:
 * no shim lock, no stdio) and for picolibc's stdin/stdout/stderr. Newlines go
 * out as CR LF, as a serial terminal wants.
 *
 * Several harts print at once: each write (shim_console_write, shim_puts)
 * goes out whole under the console's own lock, and stdio's output, which
 * picolibc hands over a byte at a time, is gathered per thread into lines
 * (its TLS), each written whole, so two threads' lines never mix (the test
 * runner reads CMocka's lines). The lock is held only while bytes go out
 * and is given up on after CONSOLE_WAIT_S: a hart that died holding it (a
 * fault while printing) cannot silence the others' reports. */
#include <stdatomic.h>
#include <stdio.h>

#include "arch.h"
#include "bare.h"
#include "shim.h"

#define LINE 160
#define CONSOLE_WAIT_S 1

static _Atomic int holder = -1; /* the hart index that prints, or -1 */
static _Thread_local char line[LINE];
static _Thread_local unsigned len;

/* Interrupts off and the console to this hart (nested: already its own);
 * returns what console_unlock needs. */
static int console_lock(void)
{
	int on = irq_save();
	int me = (int)shim_hart_self()->index;
	if (atomic_load_explicit(&holder, memory_order_relaxed) == me)
		return on | 2; /* nested: the outer call lets go */
	uint64_t until = 0;
	for (unsigned n = 1;; n++) {
		int want = -1;
		if (atomic_compare_exchange_weak_explicit(&holder, &want, me, memory_order_acquire,
							  memory_order_relaxed))
			return on;
		arch_relax();
		if (n % 1024)
			continue;
		uint64_t now = rdtime();
		if (!until)
			until = now + (uint64_t)CONSOLE_WAIT_S * BOARD_TIMEBASE_HZ;
		else if (now > until)
			return on | 2; /* print anyway */
	}
}

static void console_unlock(int state)
{
	if (!(state & 2))
		atomic_store_explicit(&holder, -1, memory_order_release);
	irq_restore(state & 1);
}

static void put(char c)
{
	if (c == '\n')
		board_console_putc('\r');
	board_console_putc(c);
}

void shim_console_write(const char *s, size_t n)
{
	int st = console_lock();
	for (size_t i = 0; i < n; i++)
		put(s[i]);
	console_unlock(st);
}

void shim_puts(const char *s)
{
	int st = console_lock();
	while (*s)
		put(*s++);
	console_unlock(st);
}

static void put_num(uint64_t v, unsigned base)
{
	char tmp[24], out[24];
	int n = 0, k = 0;
	do {
		tmp[n++] = "0123456789abcdef"[v % base];
		v /= base;
	} while (v);
	while (n)
		out[k++] = tmp[--n];
	shim_console_write(out, (size_t)k);
}

void shim_put_hex(uint64_t v)
{
	shim_puts("0x");
	put_num(v, 16);
}

void shim_put_dec(uint64_t v) { put_num(v, 10); }

void shim_console_flush(void)
{
	if (len)
		shim_console_write(line, len);
	len = 0;
}

static int stdio_put(char c, FILE *f)
{
	(void)f;
	line[len++] = c;
	if (c == '\n' || len == LINE)
		shim_console_flush();
	return (unsigned char)c;
}

static int stdio_flush(FILE *f)
{
	(void)f;
	shim_console_flush();
	return 0;
}

static int stdio_get(FILE *f)
{
	(void)f;
	return EOF; /* no console input */
}

static FILE console = FDEV_SETUP_STREAM(stdio_put, stdio_get, stdio_flush, _FDEV_SETUP_RW);
/* picolibc's names: they leave libweft.a (default visibility, the Makefile). */
#pragma GCC visibility push(default)
FILE *const stdin = &console;
FILE *const stdout = &console;
FILE *const stderr = &console;
#pragma GCC visibility pop
