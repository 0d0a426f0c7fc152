/* SPDX-License-Identifier: MIT */
/* The console: the board's UART, for the shim's own messages (trap context:
 * no locks, no stdio) and for picolibc's stdin/stdout/stderr. Newlines go out
 * as CR LF, as a serial terminal wants. */
#include <stdio.h>

#include "bare.h"
#include "shim.h"

static void put(char c)
{
	if (c == '\n')
		board_console_putc('\r');
	board_console_putc(c);
}

void shim_console_write(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		put(s[i]);
}

void bare_puts(const char *s)
{
	while (*s)
		put(*s++);
}

static void put_num(uint64_t v, unsigned base)
{
	char tmp[24];
	int n = 0;
	do {
		tmp[n++] = "0123456789abcdef"[v % base];
		v /= base;
	} while (v);
	while (n)
		put(tmp[--n]);
}

void bare_put_hex(uint64_t v)
{
	bare_puts("0x");
	put_num(v, 16);
}

void bare_put_dec(uint64_t v) { put_num(v, 10); }

static int stdio_put(char c, FILE *f)
{
	(void)f;
	put(c);
	return (unsigned char)c;
}

static int stdio_get(FILE *f)
{
	(void)f;
	return EOF; /* no console input */
}

static FILE console = FDEV_SETUP_STREAM(stdio_put, stdio_get, NULL, _FDEV_SETUP_RW);
FILE *const stdin = &console;
FILE *const stdout = &console;
FILE *const stderr = &console;
