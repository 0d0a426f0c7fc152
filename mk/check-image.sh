#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Check a bare-metal image against its board's memory map (board.h): entered
# at BOARD_LOAD_ADDR, every loaded or allocated segment inside
# [BOARD_LOAD_ADDR, BOARD_RAM_END_MAX), and room left above it for the heap
# and the stacks. Then its FIT (mk/fit.sh): the first of CONFIGS is the
# default, and each of them is a configuration that names the same kernel,
# loaded and entered at BOARD_LOAD_ADDR, and the same fdt (without one
# U-Boot's RISC-V bootm stops) that is the board's device tree byte for
# byte, whose /memory starts at BOARD_RAM_BASE, ends at most at
# BOARD_RAM_END_MAX, and holds the image with the room above it.
# Prints one line; exit 1 on a mismatch. Needs fdtget (device-tree-compiler).
# Usage: mk/check-image.sh IMAGE.elf board/<target>/board.h READELF CC IMAGE.itb BOARD.dtb CONFIGS
#   CONFIGS: one word, or several separated by spaces (board.mk's FIT_CONFIG).
set -eu
elf=$1 header=$2 readelf=$3 cc=$4 itb=$5 dtb=$6
read -ra configs <<<"$7"
config=${configs[0]:-}
macro() {
	local v
	v=$(printf '#include "%s"\n%s\n' "$header" "$1" | "$cc" -E -P -x c - | tr -d 'UL ' | tail -n 1)
	printf '%d\n' "$((v))"
}
# get FILE NODE PROPERTY [TYPE]: the property, or nothing (fdtget's error kept quiet).
get() { fdtget -t "${4:-s}" "$1" "$2" "$3" 2>/dev/null || true; }
ram_base=$(macro BOARD_RAM_BASE)
load=$(macro BOARD_LOAD_ADDR)
ram_end=$(macro BOARD_RAM_END_MAX)
entry=$(( $("$readelf" -h "$elf" | awk '/Entry point address/ { print $4 }') ))
fail=0
mismatch() { printf '%s: %s\n' "$(basename "$elf")" "$1"; fail=1; }
hex() { printf '0x%x' "$1"; }
[ "$entry" -eq "$load" ] || mismatch "entry $(hex "$entry") is not BOARD_LOAD_ADDR $(hex "$load")"
lo=-1 hi=0
while read -r vaddr memsz; do
	v=$((vaddr)) m=$((memsz))
	[ "$m" -eq 0 ] && continue
	[ "$lo" -lt 0 ] || [ "$v" -lt "$lo" ] && lo=$v
	[ $((v + m)) -gt "$hi" ] && hi=$((v + m))
done < <("$readelf" -lW "$elf" | awk '$1 == "LOAD" { print $3, $6 }')
[ "$lo" -ge "$load" ] || mismatch "a segment starts at $(hex "$lo"), below $(hex "$load")"
[ "$hi" -le "$ram_end" ] || mismatch "the image ends at $(hex "$hi"), past $(hex "$ram_end")"

# The FIT's configurations: the default, then each names the same kernel
# and fdt as the first.
[ -n "$config" ] || mismatch "no configuration name given"
[ "$(get "$itb" /configurations default)" = "$config" ] ||
	mismatch "$itb: the default configuration is not $config"
kernel=$(get "$itb" "/configurations/$config" kernel)
fdt=$(get "$itb" "/configurations/$config" fdt)
for c in "${configs[@]:1}"; do
	if ! fdtget -l "$itb" /configurations 2>/dev/null | grep -qxF -- "$c"; then
		mismatch "$itb: no configuration $c"
		continue
	fi
	[ "$(get "$itb" "/configurations/$c" kernel)" = "$kernel" ] ||
		mismatch "$itb: configuration $c's kernel is not $config's ($kernel)"
	[ "$(get "$itb" "/configurations/$c" fdt)" = "$fdt" ] ||
		mismatch "$itb: configuration $c's fdt is not $config's (${fdt:-none})"
done
[ -n "$kernel" ] || mismatch "$itb: configuration $config has no kernel"
if [ -n "$kernel" ]; then
	for p in load entry; do
		a=$(get "$itb" "/images/$kernel" $p x)
		if [ -z "$a" ] || [ $((0x$a)) -ne "$load" ]; then
			mismatch "$itb: kernel $kernel's $p is 0x$a, not BOARD_LOAD_ADDR"
		fi
	done
fi
if [ -z "$fdt" ]; then
	mismatch "$itb: configuration $config has no fdt (U-Boot's bootm would stop)"
else
	[ "$(get "$itb" "/images/$fdt" type)" = flat_dt ] ||
		mismatch "$itb: image $fdt is not of type flat_dt"
	# fdtget prints bytes as "d0 d fe ed"; od as "d0 0d fe ed".
	[ "$(get "$itb" "/images/$fdt" data bx | tr -s ' ' '\n')" = \
		"$(od -An -v -tx1 "$dtb" | tr -s ' \n' '\n' | sed '/^$/d; s/^0//')" ] ||
		mismatch "$itb: image $fdt is not $dtb"
fi

# The tree's RAM: the first /memory node's reg, in the root's cells.
mem=$(fdtget -l "$dtb" / 2>/dev/null | grep -E '^memory(@|$)' | head -n 1 || true)
ac=$(get "$dtb" / '#address-cells' u) sc=$(get "$dtb" / '#size-cells' u)
read -ra reg <<<"$([ -n "$mem" ] && get "$dtb" "/$mem" reg x)"
tree_end=0
if [ "${#reg[@]}" -lt $((${ac:-2} + ${sc:-1})) ]; then
	mismatch "$dtb: no /memory reg"
else
	base=0 size=0
	for ((i = 0; i < ${ac:-2}; i++)); do base=$((base << 32 | 0x${reg[i]})); done
	for ((; i < ${ac:-2} + ${sc:-1}; i++)); do size=$((size << 32 | 0x${reg[i]})); done
	tree_end=$((base + size))
	[ "$base" -eq "$ram_base" ] || mismatch "$dtb: /memory starts at $(hex "$base"), not BOARD_RAM_BASE"
	[ "$tree_end" -le "$ram_end" ] || mismatch "$dtb: /memory ends at $(hex "$tree_end"), past $(hex "$ram_end")"
fi
# Room above the image, below the lower of the two ends.
end=$ram_end
[ "$tree_end" -gt 0 ] && [ "$tree_end" -lt "$end" ] && end=$tree_end
free=$(((end - hi) / 1024))
[ "$free" -ge 4096 ] || mismatch "only $free KiB of RAM left above the image"
printf '%s: entry 0x%x, image 0x%x..0x%x (%d KiB), %d KiB free below 0x%x; %s: %s + %s in %d configuration(s): %s\n' \
	"$(basename "$elf")" "$entry" "$lo" "$hi" $(((hi - lo) / 1024)) "$free" "$end" \
	"$(basename "$itb")" "${kernel:-no kernel}" "${fdt:-no fdt}" "${#configs[@]}" \
	"$([ $fail = 0 ] && echo ok || echo MISMATCH)"
exit $fail
