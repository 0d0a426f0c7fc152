/* SPDX-License-Identifier: MIT */
/* libFuzzer: what a bootloader hands the bare-metal shim (kernel-shim/bare):
 * the flattened device tree (shim_fdt_parse) and the command line split into
 * NAME=value words and arguments (shim_bootargs_split), both built for the
 * host. The input is a device tree; the tree is given exactly the bytes its
 * header's totalsize claims, so ASan sees a read outside it. The whole input as a
 * command line is split too. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fdt.h"
#include "fuzz.h"

static char bootargs[512]; /* as boot.c's */

static void check_split(char *line, size_t cap)
{
	struct bootwords b;
	shim_bootargs_split(line, &b);
	FUZZ_CHECK(b.nenv >= 0 && b.nenv <= BOOTARGS_MAX);
	FUZZ_CHECK(b.nargs >= 0 && b.nargs <= BOOTARGS_MAX);
	for (int i = 0; i < b.nenv; i++) {
		FUZZ_CHECK(b.env[i].name >= line && b.env[i].name < line + cap);
		FUZZ_CHECK(b.env[i].value > b.env[i].name && b.env[i].value <= line + cap);
		size_t nl = strlen(b.env[i].name);
		FUZZ_CHECK(nl > 0 && b.env[i].name + nl + 1 == b.env[i].value);
		FUZZ_CHECK(!strpbrk(b.env[i].name, "= \t") && !strpbrk(b.env[i].value, " \t"));
	}
	for (int i = 0; i < b.nargs; i++) {
		FUZZ_CHECK(b.args[i] >= line && b.args[i] < line + cap);
		FUZZ_CHECK(*b.args[i] && !strpbrk(b.args[i], " \t"));
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* The command line alone. */
	char *line = malloc(size + 1);
	memcpy(line, data, size);
	line[size] = 0;
	check_split(line, size + 1);
	free(line);

	/* The device tree: the magic and totalsize are where the parser
	 * learns how far it may read. */
	if (size < 8)
		return 0;
	uint32_t total = (uint32_t)data[4] << 24 | (uint32_t)data[5] << 16 |
			 (uint32_t)data[6] << 8 | data[7];
	if (total > size)
		return 0;
	size_t cap = total < 8 ? 8 : total;
	uint8_t *dtb = malloc(cap); /* 16-byte aligned, as a tree must be (4) */
	memcpy(dtb, data, cap);
	struct fdt_info info;
	int e = shim_fdt_parse(dtb, &info);
	FUZZ_CHECK(e == 0 || e == -EINVAL);
	if (e == 0 && info.bootargs) {
		const char *a = info.bootargs;
		FUZZ_CHECK(a >= (const char *)dtb && a < (const char *)dtb + cap);
		FUZZ_CHECK(memchr(a, 0, (size_t)((const char *)dtb + cap - a)) != NULL);
		/* As shim_boot: copied into 512 bytes, then split. */
		memset(bootargs, 0, sizeof bootargs);
		strncpy(bootargs, a, sizeof bootargs - 1);
		check_split(bootargs, sizeof bootargs);
	}
	free(dtb);
	return 0;
}
