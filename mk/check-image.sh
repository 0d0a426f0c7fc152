#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Check a bare-metal image against its board's memory map (board.h): entered
# at BOARD_LOAD_ADDR, every loaded or allocated segment inside
# [BOARD_LOAD_ADDR, BOARD_RAM_END_MAX), and room left above it for the heap
# and the stacks. Prints one line; exit 1 on a mismatch.
# Usage: mk/check-image.sh IMAGE.elf board/<target>/board.h READELF CC
set -eu
elf=$1 header=$2 readelf=$3 cc=$4
macro() {
	local v
	v=$(printf '#include "%s"\n%s\n' "$header" "$1" | "$cc" -E -P -x c - | tr -d 'UL ' | tail -n 1)
	printf '%d\n' "$((v))"
}
load=$(macro BOARD_LOAD_ADDR)
ram_end=$(macro BOARD_RAM_END_MAX)
entry=$(( $("$readelf" -h "$elf" | awk '/Entry point address/ { print $4 }') ))
fail=0
[ "$entry" -eq "$load" ] || { printf 'entry 0x%x is not BOARD_LOAD_ADDR 0x%x\n' "$entry" "$load"; fail=1; }
lo=-1 hi=0
while read -r vaddr memsz; do
	v=$((vaddr)) m=$((memsz))
	[ "$m" -eq 0 ] && continue
	[ "$lo" -lt 0 ] || [ "$v" -lt "$lo" ] && lo=$v
	[ $((v + m)) -gt "$hi" ] && hi=$((v + m))
done < <("$readelf" -lW "$elf" | awk '$1 == "LOAD" { print $3, $6 }')
[ "$lo" -ge "$load" ] || { printf 'a segment starts at 0x%x, below 0x%x\n' "$lo" "$load"; fail=1; }
[ "$hi" -le "$ram_end" ] || { printf 'the image ends at 0x%x, past 0x%x\n' "$hi" "$ram_end"; fail=1; }
free=$(( (ram_end - hi) / 1024 ))
[ "$free" -ge 4096 ] || { printf 'only %d KiB of RAM left above the image\n' "$free"; fail=1; }
printf '%s: entry 0x%x, image 0x%x..0x%x (%d KiB), %d KiB free below 0x%x: %s\n' \
	"$(basename "$elf")" "$entry" "$lo" "$hi" $(( (hi - lo) / 1024 )) "$free" "$ram_end" \
	"$([ $fail = 0 ] && echo ok || echo MISMATCH)"
exit $fail
