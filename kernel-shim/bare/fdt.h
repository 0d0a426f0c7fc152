/* SPDX-License-Identifier: MIT */
/* The boot-time reading of what the bootloader hands over: the flattened
 * device tree (fdt.c) and the command line's words (env.c).
 * Plain C over bytes, no board or CPU: tests/fuzz/boot.c builds them for the
 * host. */
#ifndef WEFT_BARE_FDT_H
#define WEFT_BARE_FDT_H

#include <stddef.h>
#include <stdint.h>

struct fdt_info {
	uint64_t ram_base, ram_size; /* the first /memory node; 0 if none */
	const char *bootargs;        /* /chosen bootargs, or NULL */
};
/* 0, or -EINVAL if dtb is not a flattened device tree (no magic, or a
 * header whose blocks lie outside its totalsize). Reads the magic and
 * totalsize (8 bytes), then nothing outside [dtb, dtb + totalsize); a
 * structure that runs off its end is read up to there. */
int shim_fdt_parse(const void *dtb, struct fdt_info *out);

/* One NAME=value word of the command line. */
struct bootarg {
	const char *name, *value;
};
#define BOOTARGS_MAX 16 /* words of each kind taken, the rest ignored */
/* The command line's words: NAME=value ones (the environment) and the
 * others (main's arguments after argv[0]), each in the line's order. */
struct bootwords {
	struct bootarg env[BOOTARGS_MAX];
	char *args[BOOTARGS_MAX];
	int nenv, nargs;
};
/* Split line (NUL-terminated, changed in place) into its words, separated
 * by spaces and tabs. A word with '=' after a non-empty NAME goes to env,
 * any other to args. A word "--" is not itself taken: every word after it
 * is an argument, NAME=value ones too, and the arguments before it are
 * dropped (a bootloader's words meant for Linux, such as "rootwait"; the
 * NAME=value words before it stay in env). */
void shim_bootargs_split(char *line, struct bootwords *out);

#endif
