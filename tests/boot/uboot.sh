#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The Duo's boot path, on qemu-virt: U-Boot (Debian's u-boot-qemu, under
# OpenSBI) boots weft's FIT images with the command the Duo's stock sdboot
# runs, `bootm 0x81400000#config-cv1800b_milkv_duo_sd`, and with the other
# two configuration names stock cards use (each prints weft's boot lines),
# with a plain `bootm` (the default configuration) and with the rescue form
# that hands over U-Boot's own tree; bootargs set in U-Boot reach the
# image, and so do words added to othbootargs before `run sdboot`, the way
# docs/boards/milkv-duo.md gives them (sdboot here is a stand-in of the
# stock one's shape: it sets bootargs from othbootargs, then bootm); a FIT
# whose configuration has no fdt is refused by mk/check-image.sh and stops
# U-Boot ("Device tree not found"), which the runner reports. Builds nothing.
# One line per check, then "uboot: N passed, M failed".
# Usage: tests/boot/uboot.sh [BUILD_DIR]   (default build/qemu-virt)
set -u
cd "$(dirname "$0")/../.." || exit 1
dir=${1:-build/qemu-virt}
addr=0x81400000
config='config-cv1800b_milkv_duo_sd'
configs="$config config-cv1800b_sophpi_duo_sd config-cv1800b_milkv_duo_musl_riscv64_sd"
passed=0 failed=0
tmp=$(mktemp -d /tmp/weft-uboot-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
ok() { passed=$((passed + 1)); echo "  ok    $1"; }
bad() { failed=$((failed + 1)); echo "  FAIL  $1"; }
check() { local what=$1; shift; if "$@"; then ok "$what"; else bad "$what"; fi; }
done_() { echo "uboot: $passed passed, $failed failed"; [ "$failed" -eq 0 ]; exit; }
# shellcheck disable=SC2317 # called through check
has() { grep -qF -- "$1" "$log"; }
# shellcheck disable=SC2317
has_in_order() {
	local p n last=0
	for p in "$@"; do
		n=$(grep -nF -m1 -- "$p" "$log" | cut -d: -f1)
		[ -n "$n" ] && [ "$n" -gt "$last" ] || return 1
		last=$n
	done
}
# shellcheck disable=SC2317
own_tree() { has '## Flattened Device Tree blob at' && ! has "Trying 'fdt-1'"; }

for f in hello demo; do
	[ -f "$dir/examples/$f.itb" ] || { bad "$dir/examples/$f.itb exists (make TARGET=qemu-virt all)"; done_; }
done

# boot LABEL IMAGE.itb COMMAND: run it through U-Boot; $log is the console,
# $st the exit status. The console is shown when a check of it failed.
boot()
{
	log=$tmp/$1.log
	QEMU_TIMEOUT=60 qemu/run-qemu-uboot.sh "$2" "$3" >"$log" 2>&1
	st=$?
}
shown=0
show() { [ "$failed" -gt "$shown" ] && tail -25 "$log" | sed 's/^/        /'; shown=$failed; }

sum='sum of squares 1..1000 = 333833500 (expected 333833500)'

boot duo "$dir/examples/hello.itb" "bootm $addr#$config"
check "bootm $addr#$config: hello ends with status 0" test "$st" = 0
check "bootm $addr#$config: U-Boot takes the FIT's fdt" has "Trying 'fdt-1' fdt subimage"
check "bootm $addr#$config: hello's result: $sum on 1 workers" has "$sum on 1 workers"
show

# The other names of stock card generations: the same image boots.
for other in config-cv1800b_sophpi_duo_sd config-cv1800b_milkv_duo_musl_riscv64_sd; do
	boot "$other" "$dir/examples/hello.itb" "bootm $addr#$other"
	check "bootm $addr#$other: hello ends with status 0" test "$st" = 0
	check "bootm $addr#$other: weft's boot lines, then hello's result" \
		has_in_order 'weft: boot: hart ' 'weft: mmu: satp ' "$sum on 1 workers"
	show
done

# The guide's way to pass words on a stock card, whose sdboot sets bootargs
# from othbootargs (and cannot save the environment).
sdboot="setenv bootargs console=ttyS0,115200 \$othbootargs; bootm $addr#$config"
boot othbootargs "$dir/examples/hello.itb" "setenv othbootargs earlycon=sbi; \
setenv sdboot '$sdboot'; setenv othbootargs \"\${othbootargs} WEFT_WORKERS=2\"; run sdboot"
check "othbootargs \"\${othbootargs} WEFT_WORKERS=2\", run sdboot: hello ends with status 0" \
	test "$st" = 0
check "othbootargs WEFT_WORKERS=2, run sdboot: hello runs on 2 workers" has "$sum on 2 workers"
show

boot bootargs "$dir/examples/hello.itb" "setenv bootargs WEFT_WORKERS=2; bootm $addr#$config"
check "bootargs WEFT_WORKERS=2 set in U-Boot: hello ends with status 0" test "$st" = 0
check "bootargs WEFT_WORKERS=2 set in U-Boot: hello runs on 2 workers" has "$sum on 2 workers"
show

boot default "$dir/examples/demo.itb" "bootm $addr"
check "bootm $addr (the default configuration): demo ends with status 0" test "$st" = 0
check "bootm $addr: demo's result: 7837 primes below 80000 (expected 7837)" \
	has '7837 primes below 80000 (expected 7837)'
show

boot rescue "$dir/examples/hello.itb" "bootm $addr - \${fdtcontroladdr}"
check "bootm $addr - \${fdtcontroladdr} (U-Boot's own tree): hello ends with status 0" test "$st" = 0
check "bootm $addr - \${fdtcontroladdr}: U-Boot hands over its own tree, not the FIT's" \
	own_tree
check "bootm $addr - \${fdtcontroladdr}: hello's result" has "$sum on 1 workers"
show

# The same FIT without one of the stock names: mk/check-image.sh names it.
cp "$dir/examples/hello.itb" "$tmp/twonames.itb"
if fdtput -r "$tmp/twonames.itb" /configurations/config-cv1800b_sophpi_duo_sd; then
	mk/check-image.sh "$dir/examples/hello" board/qemu-virt/board.h riscv64-unknown-elf-readelf \
		riscv64-unknown-elf-gcc "$tmp/twonames.itb" "$dir/board.dtb" "$configs" >"$tmp/check.log" 2>&1
	st=$?
	log=$tmp/check.log
	check "mk/check-image.sh refuses a FIT without configuration config-cv1800b_sophpi_duo_sd" \
		test "$st" = 1 -a "$(grep -c 'no configuration config-cv1800b_sophpi_duo_sd' "$log")" = 1
	show
else
	bad "fdtput -r takes a configuration out of a copy of hello.itb"
fi

# The same FIT with the fdt taken out of its configuration: what mk/fit.sh
# made before the Duo's image carried a tree.
cp "$dir/examples/hello.itb" "$tmp/nofdt.itb"
if fdtput -d "$tmp/nofdt.itb" "/configurations/$config" fdt; then
	mk/check-image.sh "$dir/examples/hello" board/qemu-virt/board.h riscv64-unknown-elf-readelf \
		riscv64-unknown-elf-gcc "$tmp/nofdt.itb" "$dir/board.dtb" "$configs" >"$tmp/check.log" 2>&1
	st=$?
	log=$tmp/check.log
	check "mk/check-image.sh refuses a FIT whose configuration has no fdt" \
		test "$st" = 1 -a "$(grep -c 'has no fdt' "$tmp/check.log")" = 1
	show
	boot nofdt "$tmp/nofdt.itb" "bootm $addr#$config"
	check "without the fdt, U-Boot stops: \"Device tree not found or missing FDT support\"" \
		has 'Device tree not found or missing FDT support'
	check "without the fdt, the runner says U-Boot did not start the image (exit 3)" test "$st" = 3
	show
else
	bad "fdtput -d takes the fdt out of a copy of hello.itb"
fi
done_
