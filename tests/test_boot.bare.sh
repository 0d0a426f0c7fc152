#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_boot on bare metal: each case is a boot of its own (WT_CASE=<case>,
# see tests/test_boot.c). Checks the console and the exit status, and
# prints CMocka's lines (group header, one result per case, summary) so
# mk/run-tests.sh counts the cases.
# Usage: tests/test_boot.bare.sh RUNNER IMAGE
set -u
runner=$1 img=$2
passed=0 failed=() out=''

# boot NAME [QEMU options]: boot WT_CASE=NAME; $out is the console, $st
# the exit status.
boot() {
	local name=$1
	shift
	# shellcheck disable=SC2086
	out=$(QEMU_EXTRA="${QEMU_EXTRA:-} $*" $runner "$img" WT_CASE="$name" 2>&1)
	st=$?
	printf '%s\n' "$out" | sed -n '/^weft:/,$p'
}
ok=1
bad() { echo "$1"; ok=0; }
status() { [ "$st" -eq "$1" ] || bad "exit status $st, expected $1"; }
# has PATTERN...: every fixed string is in the console (a leading ! : absent).
has() {
	local p
	for p in "$@"; do
		if [ "${p#!}" != "$p" ]; then
			if printf '%s' "$out" | grep -qF -- "${p#!}"; then bad "unexpected: ${p#!}"; fi
		elif ! printf '%s' "$out" | grep -qF -- "$p"; then
			bad "missing: $p"
		fi
	done
}
# line PATTERN: the number of the console's first line that has it (0: none).
line() { printf '%s\n' "$out" | grep -nF -m1 -- "$1" | cut -d: -f1 | grep . || echo 0; }
result() {
	if [ $ok = 1 ]; then
		echo "[       OK ] boot_$1"
		passed=$((passed + 1))
	else
		echo "[  FAILED  ] boot_$1"
		failed+=("boot_$1")
	fi
	ok=1
}

echo "[==========] Running 3 test(s)."

# The two lines, in order, before main; what they say agrees with what
# OpenSBI printed before them (its boot hart, SBI version, and the device
# tree it passed: "Next Arg1").
echo "[ RUN      ] boot_lines"
boot lines
status 0
has 'weft: boot: hart ' 'weft: mmu: satp 0x8' '(Sv39 on), RAM 0x80000000..' '(device tree)' \
	'test_boot: main reached'
b=$(line 'weft: boot: ') m=$(line 'weft: mmu: ') r=$(line 'test_boot: main reached')
if ! { [ "$b" -gt 0 ] && [ "$b" -lt "$m" ] && [ "$m" -lt "$r" ]; }; then
	bad "out of order: boot line $b, mmu line $m, main $r"
fi
hart=$(printf '%s' "$out" | sed -n 's/^Boot HART ID *: *\([0-9]*\)$/\1/p')
sbi=$(printf '%s' "$out" | sed -n 's/^Runtime SBI Version *: *\([0-9.]*\)$/\1/p')
arg1=$(printf '%s' "$out" | sed -n 's/^Domain0 Next Arg1 *: *\(0x[0-9a-f]*\)$/\1/p')
if [ -n "$hart" ] && [ -n "$sbi" ] && [ -n "$arg1" ]; then
	has "weft: boot: hart $hart, SBI $sbi (OpenSBI " "device tree $(printf '0x%x' "$arg1")," \
		'mvendorid 0x0: no th.sxstatus'
else
	bad "OpenSBI's banner lacks its boot hart, SBI version or Next Arg1"
fi
result lines

# A trap on the early vector (put back by the case, as it is before
# shim_trap_init): its cause and address, then exit status 135.
echo "[ RUN      ] boot_early_trap"
boot early
status 135
has "weft: early trap (before the shim's trap handler): cause 13 (load page fault)" \
	'stval 0x40000123' 'sepc 0x8' '!the load did not trap'
result early_trap

# A vector instruction on a CPU with V, whose firmware (OpenSBI) hands
# sstatus.VS over on: weft turned it off, so it traps, named.
echo "[ RUN      ] boot_vector"
boot vector -cpu rv64,sstc=off,v=true
status 135
has 'weft: vector instruction 0xc0072d7 at sepc 0x8' 'docs/decisions/vector-state.md' \
	'weft: unexpected trap: cause 2 (illegal instruction)' '!test_boot: vector instruction ran'
vs=$(printf '%s' "$out" | sed -n 's/^weft: boot: .*, sstatus \(0x[0-9a-f]*\),.*/\1/p')
if [ -z "$vs" ] || [ $((vs & 0x600)) -eq 0 ]; then
	bad "the firmware handed sstatus ${vs:-?} over with VS off: this case shows nothing"
fi
result vector

echo "[==========] $((passed + ${#failed[@]})) test(s) run."
echo "[  PASSED  ] $passed test(s)."
if [ ${#failed[@]} -gt 0 ]; then
	echo "[  FAILED  ] ${#failed[@]} test(s), listed below:"
	for f in "${failed[@]}"; do echo "[  FAILED  ] $f"; done
	exit 1
fi
