/* SPDX-License-Identifier: MIT */
/* weft's gdb extension (tools/gdb/weft-gdb.py), inlined in the library's
 * .debug_gdb_scripts section: gdb runs it when it loads a program linked
 * with libweft, if its auto-load safe-path allows that program. The
 * section's format is gdb's ("The .debug_gdb_scripts section" in its
 * manual): a byte 4 (an inlined Python script), the script's name on the
 * first line, its text, a NUL. Not loaded into memory: it costs the file
 * its size and nothing at run time.
 *
 * A C file, not assembly, so that the compiler gives the object the same
 * property notes (IBT, BTI) as the rest of the library. The symbol lets a
 * link from an archive ask for it (-u): bare-metal images link libweft.a as
 * an archive, whose members come in only when something refers to them. */
__asm__(".pushsection .debug_gdb_scripts, \"MS\", @progbits, 1\n"
	".globl weft__gdb_scripts\n"
	".hidden weft__gdb_scripts\n"
	"weft__gdb_scripts:\n"
	".byte 4\n"
	".ascii \"weft-gdb.py\\n\"\n"
	".incbin \"tools/gdb/weft-gdb.py\"\n"
	".byte 0\n"
	".popsection\n");
