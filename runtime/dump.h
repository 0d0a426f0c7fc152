/* SPDX-License-Identifier: MIT */
/* Diagnostics (dump.c). */
#ifndef WEFT_DUMP_H
#define WEFT_DUMP_H

/* SIGQUIT's action (shim_on_quit, installed by weft_init): weft_dump. */
void weft__dump_on_quit(void);
/* weft_init: a reference point (shim_now, arch_cycles) for converting the
 * park stamps to nanoseconds. */
void weft__dump_init(void);

#endif
