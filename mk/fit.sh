#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Wrap a raw payload in a FIT image that U-Boot's bootm boots like a Linux
# kernel: loaded and entered at the ELF's entry address, a0 = hart id,
# a1 = U-Boot's device tree. Needs mkimage (u-boot-tools).
# Usage: mk/fit.sh IMAGE.elf IMAGE.bin OUT.itb READELF
set -eu
elf=$1 bin=$2 out=$3 readelf=$4
entry=$("$readelf" -h "$elf" | awk '/Entry point address/ { print $4 }')
[ -n "$entry" ] || { echo "fit.sh: no entry address in $elf" >&2; exit 1; }
its=$out.its
# The stock U-Boot of the Duo boots configuration config-cv1800b_milkv_duo_sd
# of boot.sd; the default configuration is the same one, for a plain bootm.
cat >"$its" <<ITS
/dts-v1/;
/ {
	description = "weft $(basename "$elf")";
	#address-cells = <1>;
	images {
		kernel-1 {
			description = "weft payload";
			data = /incbin/("$(basename "$bin")");
			type = "kernel";
			arch = "riscv";
			os = "linux";
			compression = "none";
			load = <$entry>;
			entry = <$entry>;
			hash-1 { algo = "crc32"; };
		};
	};
	configurations {
		default = "config-cv1800b_milkv_duo_sd";
		config-cv1800b_milkv_duo_sd {
			description = "weft on the Milk-V Duo";
			kernel = "kernel-1";
		};
	};
};
ITS
(cd "$(dirname "$out")" && mkimage -f "$(basename "$its")" "$(basename "$out")" >/dev/null)
rm -f "$its"
