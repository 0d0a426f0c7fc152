/* SPDX-License-Identifier: MIT */
/* Just enough of a flattened-device-tree reader for boot: the first /memory
 * node's reg and /chosen's bootargs. Everything in a DTB is big-endian. */
#define _DEFAULT_SOURCE /* strnlen */
#include <errno.h>
#include <string.h>

#include "fdt.h"

#define FDT_MAGIC 0xd00dfeed
#define FDT_BEGIN_NODE 1
#define FDT_END_NODE 2
#define FDT_PROP 3
#define FDT_NOP 4
#define FDT_END 9

static uint32_t be32(const void *p)
{
	const uint8_t *b = p;
	return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

static uint64_t cells(const uint8_t *p, uint32_t n)
{
	uint64_t v = 0;
	for (uint32_t i = 0; i < n; i++)
		v = v << 32 | be32(p + 4 * i);
	return v;
}

/* The header's fields (version 17): magic, totalsize, off_dt_struct,
 * off_dt_strings, off_mem_rsvmap, version, last_comp_version,
 * boot_cpuid_phys, size_dt_strings, size_dt_struct. */
#define FDT_HEADER_SIZE 40

/* Every offset is checked against totalsize before it is used: the tree
 * comes from a bootloader (or whoever wrote a1), and a wrong one must not
 * send the reader through the rest of RAM. */
int shim_fdt_parse(const void *dtb, struct fdt_info *out)
{
	memset(out, 0, sizeof *out);
	if (!dtb || ((uintptr_t)dtb & 3) || be32(dtb) != FDT_MAGIC)
		return -EINVAL;
	const uint8_t *base = dtb;
	uint32_t total = be32(base + 4);
	if (total < FDT_HEADER_SIZE)
		return -EINVAL;
	size_t off = be32(base + 8);
	uint32_t soff = be32(base + 12), ssize = be32(base + 32);
	if (off > total || soff > total || ssize > total - soff)
		return -EINVAL;
	const char *strings = (const char *)base + soff;
	uint32_t addr_cells = 2, size_cells = 2;
	int depth = 0, in_memory = 0, in_chosen = 0;

	/* off is where the next token is; after a node name or a property
	 * value it may be up to 3 past total (the padding), which ends the
	 * loop. */
	while (off <= total && total - off >= 4) {
		uint32_t tok = be32(base + off);
		off += 4;
		if (tok == FDT_BEGIN_NODE) {
			const char *name = (const char *)base + off;
			size_t n = strnlen(name, total - off);
			if (n == total - off)
				break; /* a name that runs off the end */
			off += (n + 4) & ~(size_t)3;
			depth++;
			in_memory = depth == 2 && strncmp(name, "memory", 6) == 0 &&
				    (name[6] == 0 || name[6] == '@') && out->ram_size == 0;
			in_chosen = depth == 2 && strcmp(name, "chosen") == 0;
		} else if (tok == FDT_END_NODE) {
			depth--;
			in_memory = in_chosen = 0;
		} else if (tok == FDT_PROP) {
			if (total - off < 8)
				break;
			uint32_t len = be32(base + off), nameoff = be32(base + off + 4);
			off += 8;
			if (len > total - off)
				break; /* a value that runs off the end */
			const uint8_t *val = base + off;
			off += len;
			off += (4 - (off & 3)) & 3;
			if (nameoff >= ssize || !memchr(strings + nameoff, 0, ssize - nameoff))
				continue; /* a name outside the strings block */
			const char *pname = strings + nameoff;
			if (depth == 1 && strcmp(pname, "#address-cells") == 0 && len == 4)
				addr_cells = be32(val);
			else if (depth == 1 && strcmp(pname, "#size-cells") == 0 && len == 4)
				size_cells = be32(val);
			else if (in_memory && strcmp(pname, "reg") == 0 && addr_cells <= 2 &&
				 size_cells <= 2 && len >= 4 * (addr_cells + size_cells)) {
				out->ram_base = cells(val, addr_cells);
				out->ram_size = cells(val + 4 * addr_cells, size_cells);
			} else if (in_chosen && strcmp(pname, "bootargs") == 0 && len > 0 &&
				   val[len - 1] == 0) {
				out->bootargs = (const char *)val;
			}
		} else if (tok == FDT_NOP) {
			continue;
		} else {
			break; /* FDT_END or garbage */
		}
	}
	return 0;
}
