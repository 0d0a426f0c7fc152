#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Wrap a raw payload and the board's device tree in a FIT image that U-Boot's
# bootm boots like a Linux kernel: loaded and entered at the ELF's entry
# address, a0 = hart id, a1 = the FIT's device tree after U-Boot's fix-ups
# (/chosen bootargs). U-Boot's RISC-V bootm stops without a device tree.
# Needs mkimage (u-boot-tools), which needs dtc (device-tree-compiler).
# Usage: mk/fit.sh IMAGE.elf IMAGE.bin BOARD.dtb CONFIGS OUT.itb READELF
#   CONFIGS: the configurations' names, one word (board.mk's FIT_CONFIG)
#   or several separated by spaces, each holding the same kernel and fdt;
#   the first is also the default. A bootloader's `bootm ADDR#NAME` finds
#   any of them.
set -eu
elf=$1 bin=$2 dtb=$3 out=$5 readelf=$6
read -ra configs <<<"$4"
[ "${#configs[@]}" -gt 0 ] || { echo "fit.sh: no configuration name" >&2; exit 1; }
entry=$("$readelf" -h "$elf" | awk '/Entry point address/ { print $4 }')
[ -n "$entry" ] || { echo "fit.sh: no entry address in $elf" >&2; exit 1; }
[ -s "$dtb" ] || { echo "fit.sh: no device tree $dtb" >&2; exit 1; }
# mkimage runs in OUT's directory: the files are named from there.
abs() { echo "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; }
bin=$(abs "$bin") dtb=$(abs "$dtb")
its=$out.its
cat >"$its" <<ITS
/dts-v1/;
/ {
	description = "weft $(basename "$elf")";
	#address-cells = <1>;
	images {
		kernel-1 {
			description = "weft payload";
			data = /incbin/("$bin");
			type = "kernel";
			arch = "riscv";
			os = "linux";
			compression = "none";
			load = <$entry>;
			entry = <$entry>;
			hash-1 { algo = "crc32"; };
		};
		fdt-1 {
			description = "weft's device tree ($(basename "$dtb"))";
			data = /incbin/("$dtb");
			type = "flat_dt";
			arch = "riscv";
			compression = "none";
			hash-1 { algo = "crc32"; };
		};
	};
	configurations {
		default = "${configs[0]}";
$(for c in "${configs[@]}"; do
	printf '\t\t%s {\n\t\t\tdescription = "weft";\n' "$c"
	printf '\t\t\tkernel = "kernel-1";\n\t\t\tfdt = "fdt-1";\n\t\t};\n'
done)
	};
};
ITS
(cd "$(dirname "$out")" && mkimage -f "$(basename "$its")" "$(basename "$out")" >/dev/null)
rm -f "$its"
