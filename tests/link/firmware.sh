#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Your own firmware, outside the tree (docs/first-firmware.md): make install
# for qemu-virt and milkv-duo into one staging tree, then the program of
# tests/link/firmware/ (the page's main.c, CMakeLists.txt and Makefile,
# which it must show as they are) built against the installed tree with
# CMake's toolchain file and with pkg-config and make, for each board: an
# ELF, its .bin and its FIT .itb. The qemu-virt images boot on
# qemu-system-riscv64 with a command line whose plain words must arrive as
# argv and whose NAME=value word as the environment (and, after "--", every
# word as argv), the ELF under OpenSBI and the FIT through U-Boot as the Duo
# boots it; the Duo's images must pass mk/check-image.sh. Then make
# uninstall of one board keeps the other's headers, and of both leaves no
# file behind.
# Last line: "firmware: N passed, M failed".
# Usage: tests/link/firmware.sh
set -u
cd "$(dirname "$0")/../.." || exit 1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0
ok() { echo "  ok: $1"; passed=$((passed + 1)); }
bad() { echo "  FAIL: $1"; failed=$((failed + 1)); }
tally() { echo "firmware: $passed passed, $failed failed"; [ "$failed" -eq 0 ]; exit; }
boards=(qemu-virt milkv-duo)
src=tests/link/firmware
page=docs/first-firmware.md

# The page shows the three files as they are (their SPDX line aside).
for f in main.c CMakeLists.txt Makefile; do
	if python3 - "$src/$f" "$page" <<'PY'; then
import sys
body = "".join(l for l in open(sys.argv[1]) if "SPDX-License-Identifier" not in l)
sys.exit(0 if body in open(sys.argv[2]).read() else 1)
PY
		ok "$page shows $src/$f as it is"
	else
		bad "$page does not show $src/$f as it is"
	fi
done

root=$tmp/stage prefix=/opt/weft
for b in "${boards[@]}"; do
	if make --no-print-directory -j"$(nproc)" TARGET="$b" install DESTDIR="$root" PREFIX="$prefix" \
		>"$tmp/install-$b.log" 2>&1; then
		ok "make install TARGET=$b DESTDIR=... PREFIX=$prefix"
	else
		bad "make install TARGET=$b failed:"; tail -20 "$tmp/install-$b.log"; tally
	fi
	for f in include/weft.h include/weft_net.h lib/weft/$b/libweft.a lib/weft/$b/link.ld \
		lib/weft/$b/payload.ld lib/pkgconfig/weft-$b.pc share/weft/$b.dtb share/weft/$b.cmake \
		share/weft/$b-image share/weft/fit.sh; do
		[ -f "$root$prefix/$f" ] || bad "not installed: $prefix/$f"
	done
done

# What the build of each board uses: its compiler, readelf and FIT configuration.
var() { make --no-print-directory -s TARGET="$1" -p -n lib 2>/dev/null | sed -n "s/^$2 := //p" | tail -1; }

# build HOW BOARD DIR: the outside program built with CMake or with
# pkg-config and make, in DIR; it must leave hello, hello.bin and hello.itb.
build()
{
	local how=$1 b=$2 dir=$3
	mkdir -p "$dir"
	if [ "$how" = cmake ]; then
		cmake -S "$src" -B "$dir" -DCMAKE_TOOLCHAIN_FILE="$root$prefix/share/weft/$b.cmake" \
			>"$dir.log" 2>&1 && cmake --build "$dir" >>"$dir.log" 2>&1
	else
		cp "$src/main.c" "$src/Makefile" "$dir/" &&
			PKG_CONFIG_SYSROOT_DIR=$root PKG_CONFIG_LIBDIR=$root$prefix/lib/pkgconfig \
				make --no-print-directory -C "$dir" BOARD="$b" >"$dir.log" 2>&1
	fi || { bad "$b, $how: the build failed:"; tail -15 "$dir.log"; return 1; }
	if [ -s "$dir/hello" ] && [ -s "$dir/hello.bin" ] && [ -s "$dir/hello.itb" ]; then
		ok "$b, $how: hello, hello.bin and hello.itb built"
	else
		bad "$b, $how: missing among hello, hello.bin, hello.itb: $(cd "$dir" && echo *)"
		return 1
	fi
}

# boot LABEL EXPECTED COMMAND...: COMMAND boots an image; it must exit 0
# having printed EXPECTED's lines, in order.
boot()
{
	local label=$1 expect=$2 out got rc
	shift 2
	out=$("$@" 2>&1)
	rc=$?
	got=$(printf '%s\n' "$out" | grep -E '^weft: [0-9]+ argument|^[a-z]+, ' | sed 's/ (fiber [0-9]*)$//')
	if [ $rc -eq 0 ] && [ "$got" = "$expect" ]; then
		ok "$label: $(printf '%s' "$got" | tr '\n' ';')"
	else
		bad "$label: exit $rc, printed '$(printf '%s' "$got" | tr '\n' ';')', not '$(printf '%s' "$expect" | tr '\n' ';')'"
		printf '%s\n' "$out" | tail -8
	fi
}
# qemu IMAGE WORDS...: IMAGE booted by OpenSBI, WORDS on its command line.
# shellcheck disable=SC2317 # called through boot
qemu() { QEMU_TIMEOUT=120 qemu/run-qemu-virt.sh "$@"; }

qconfig=$(var qemu-virt FIT_CONFIG)
qconfig=${qconfig%% *} # the default, the one the Duo's v1 cards ask for
for how in cmake pkg-config; do
	d=$tmp/$how-qemu-virt
	build "$how" qemu-virt "$d" || continue
	boot "$how: booted with 'GREETING=howdy alpha beta'" \
		$'weft: 2 argument(s)\nhowdy, alpha\nhowdy, beta' qemu "$d/hello" GREETING=howdy alpha beta
	boot "$how: booted with 'rootwait -- one X=y'" \
		$'weft: 2 argument(s)\nhello, one\nhello, X=y' qemu "$d/hello" rootwait -- one X=y
	boot "$how: booted with 'WEFT_WORKERS=2'" 'weft: 0 argument(s)' qemu "$d/hello" WEFT_WORKERS=2
	# The FIT the image step made, through U-Boot as the Duo boots it
	# (qemu/run-qemu-uboot.sh), with the page's words for a stock card:
	# added to othbootargs, which a stand-in sdboot of the stock shape puts
	# after Linux's own words (rootwait among them) in bootargs.
	sdboot="setenv bootargs root=/dev/mmcblk0p2 rootwait console=ttyS0,115200 \$othbootargs; bootm 0x81400000#$qconfig"
	boot "$how: hello.itb through U-Boot, othbootargs \"\${othbootargs} GREETING=howdy -- alpha beta\"; run sdboot" \
		$'weft: 2 argument(s)\nhowdy, alpha\nhowdy, beta' env QEMU_TIMEOUT=120 qemu/run-qemu-uboot.sh "$d/hello.itb" \
		"setenv othbootargs earlycon=sbi; setenv sdboot '$sdboot'; setenv othbootargs \"\${othbootargs} GREETING=howdy -- alpha beta\"; run sdboot"
done
readelf=$(var milkv-duo READELF) cc=$(var milkv-duo CC) config=$(var milkv-duo FIT_CONFIG)
for how in cmake pkg-config; do
	d=$tmp/$how-milkv-duo
	build "$how" milkv-duo "$d" || continue
	if out=$(mk/check-image.sh "$d/hello" board/milkv-duo/board.h "$readelf" "$cc" "$d/hello.itb" \
		"$root$prefix/share/weft/milkv-duo.dtb" "$config" 2>&1); then
		ok "milkv-duo, $how: mk/check-image.sh: $out"
	else
		bad "milkv-duo, $how: mk/check-image.sh: $out"
	fi
done

# One board's uninstall keeps what the other still uses; both leave nothing.
make --no-print-directory TARGET=qemu-virt uninstall DESTDIR="$root" PREFIX="$prefix" >/dev/null 2>&1
left=$(cd "$root$prefix" && find . ! -type d | sort | tr '\n' ' ')
if [ "$left" = "./include/weft.h ./include/weft_net.h ./lib/pkgconfig/weft-milkv-duo.pc ./lib/weft/milkv-duo/libweft.a ./lib/weft/milkv-duo/link.ld ./lib/weft/milkv-duo/payload.ld ./share/weft/fit.sh ./share/weft/milkv-duo-image ./share/weft/milkv-duo.cmake ./share/weft/milkv-duo.dtb ./share/weft/weft-gdb.py " ]; then
	ok "make uninstall TARGET=qemu-virt keeps milkv-duo's files and the shared ones"
else
	bad "after make uninstall TARGET=qemu-virt: $left"
fi
make --no-print-directory TARGET=milkv-duo uninstall DESTDIR="$root" PREFIX="$prefix" >/dev/null 2>&1
if [ -z "$(find "$root" ! -type d)" ]; then
	ok "make uninstall of both boards removes every file installed"
else
	bad "files left after make uninstall: $(find "$root" ! -type d | head -5)"
fi
tally
