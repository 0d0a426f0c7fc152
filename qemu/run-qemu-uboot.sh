#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Boot a weft FIT image the way the Milk-V Duo boots boot.sd, on QEMU's
# riscv64 virt machine: OpenSBI starts Debian's U-Boot for QEMU
# (qemu-riscv64_smode, package u-boot-qemu) in S-mode, the FIT lies in RAM at
# FIT_ADDR, and this script stops U-Boot's autoboot and types COMMAND at its
# prompt. Exits with the status the image ended with (the test finisher's
# code), as qemu/run-qemu-virt.sh does.
#
# Usage: qemu/run-qemu-uboot.sh IMAGE.itb [COMMAND]
#   COMMAND: one U-Boot command line; default the Duo's own,
#   `bootm 0x81400000#config-cv1800b_milkv_duo_sd`. NAME=value words for the
#   image go in first with `setenv bootargs NAME=value; bootm ...`.
# Environment: FIT_ADDR (default 0x81400000, where the Duo's sdboot loads
#   boot.sd), QEMU_MEM (default 128M, the RAM the qemu-virt FIT's device
#   tree describes), QEMU_TIMEOUT in seconds (default 120), UBOOT (default
#   /usr/lib/u-boot/qemu-riscv64_smode/uboot.elf).
# The console is this script's stdout, with CR LF turned into LF. Exit 124
# means the image did not finish in time; 3 that U-Boot did not start it
# (it printed "### ERROR ###" and hangs, or came back to its prompt).
set -u
if [ $# -lt 1 ] || [ $# -gt 2 ]; then
	echo "usage: $0 IMAGE.itb [COMMAND]" >&2
	exit 2
fi
itb=$1
addr=${FIT_ADDR:-0x81400000}
cmd=${2:-bootm $addr#config-cv1800b_milkv_duo_sd}
uboot=${UBOOT:-/usr/lib/u-boot/qemu-riscv64_smode/uboot.elf}
[ -f "$itb" ] || { echo "$0: no such image: $itb" >&2; exit 2; }
[ -f "$uboot" ] || { echo "$0: no U-Boot at $uboot (mk/deps.sh bare installs u-boot-qemu)" >&2; exit 2; }
command -v qemu-system-riscv64 >/dev/null ||
	{ echo "$0: qemu-system-riscv64 missing (mk/deps.sh bare installs it)" >&2; exit 2; }
tmp=$(mktemp -d /tmp/weft-uboot.XXXXXX)
qemu='' console=''
# shellcheck disable=SC2317 # run by the EXIT trap
cleanup()
{
	[ -n "$qemu" ] && kill "$qemu" 2>/dev/null
	[ -n "$console" ] && wait "$console" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
# Typing into a QEMU that has gone gives EPIPE, not a signal.
trap '' PIPE
mkfifo "$tmp/in"
: >"$tmp/out"
# The FIT goes in as raw bytes at FIT_ADDR before the machine starts, as
# fatload would leave it. No Sstc, as on the Duo's C906.
timeout "${QEMU_TIMEOUT:-120}" qemu-system-riscv64 -M virt -cpu rv64,sstc=off -smp 1 \
	-m "${QEMU_MEM:-128M}" -bios default -display none -monitor none -serial stdio \
	-no-reboot -kernel "$uboot" -device "loader,file=$itb,addr=$addr,force-raw=on" \
	<"$tmp/in" >"$tmp/out" 2>&1 &
qemu=$!
exec 3>"$tmp/in"
tail -n +1 -f --pid="$qemu" "$tmp/out" | tr -d '\r' &
console=$!

# Lines of the console so far that begin with U-Boot's prompt.
prompts() { grep -c '^=> ' "$tmp/out"; }
running() { kill -0 "$qemu" 2>/dev/null; }

# At the prompt: stop the autoboot countdown with a key (again every half
# second while it counts); if the countdown ran out first, U-Boot's own boot
# finds nothing to boot and comes back to the prompt by itself.
while running && [ "$(prompts)" -eq 0 ]; do
	grep -q 'Hit any key to stop autoboot' "$tmp/out" && printf ' ' >&3
	sleep 0.5
done
n=$(prompts)
printf '%s\n' "$cmd" >&3
# Until the image runs: U-Boot's refusals end the run at once rather than
# at the timeout.
failed=0
while running && ! grep -q '^Starting kernel' "$tmp/out"; do
	if grep -q '### ERROR ###' "$tmp/out" || [ "$(prompts)" -gt "$n" ]; then
		failed=1
		break
	fi
	sleep 0.2
done
if [ "$failed" = 1 ]; then
	sleep 0.5 # the rest of U-Boot's message
	kill "$qemu" 2>/dev/null
fi
wait "$qemu"
rc=$?
qemu=
wait "$console"
console=
[ "$failed" = 1 ] && { echo "$0: U-Boot did not start the image" >&2; exit 3; }
exit "$rc"
