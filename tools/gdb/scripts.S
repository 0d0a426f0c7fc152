/* SPDX-License-Identifier: MIT */
/* weft's gdb extension (tools/gdb/weft-gdb.py), inlined in the library's
 * .debug_gdb_scripts section: gdb runs it when it loads a program linked
 * with libweft, if its auto-load safe-path allows that program. The
 * section's format is gdb's ("The .debug_gdb_scripts section" in its
 * manual): a byte 4 (an inlined Python script), the script's name on the
 * first line, its text, a NUL. Not loaded into memory: it costs the file
 * its size and nothing at run time. */
	.pushsection .debug_gdb_scripts, "MS", @progbits, 1
/* Named so that a link from an archive can ask for it (-u): bare-metal
 * images link libweft.a as an archive, whose members come in only when
 * something refers to them. */
	.globl	weft__gdb_scripts
weft__gdb_scripts:
	.byte	4
	.ascii	"weft-gdb.py\n"
	.incbin	"tools/gdb/weft-gdb.py"
	.byte	0
	.popsection

	.section .note.GNU-stack, "", @progbits
