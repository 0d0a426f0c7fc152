/* SPDX-License-Identifier: MIT */
/* Diagnostics on bare metal: there is no signal to ask for a dump (a program
 * calls weft_dump itself) and the image carries no symbol table, so
 * backtraces are addresses for addr2line on the ELF file. */
#include <errno.h>

#include "shim.h"

int shim_on_quit(void (*fn)(void)) { return fn ? -ENOSYS : 0; }

size_t shim_symbolize(uintptr_t pc, char *buf, size_t cap)
{
	(void)pc;
	(void)buf;
	(void)cap;
	return 0;
}
