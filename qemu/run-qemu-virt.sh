#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Boot a weft image on QEMU's riscv64 virt machine (S-mode, under OpenSBI) and
# exit with the status the image ended with (the test finisher's code).
#
# Usage: qemu/run-qemu-virt.sh IMAGE.elf [NAME=value ...]
#   NAME=value words go on the kernel command line; weft makes them the
#   environment (WEFT_WORKERS=2, WEFT_STACK_KB=128).
# Environment: QEMU_MEM (default 256M), QEMU_TIMEOUT in seconds (default 900),
#   QEMU_EXTRA (more qemu-system-riscv64 options), WEFT_BOOTARGS (NAME=value
#   words put before the arguments).
# The console is this script's stdout, with CR LF turned into LF. Exit 124
# means the image did not finish in time.
set -u
[ $# -ge 1 ] || { echo "usage: $0 IMAGE.elf [NAME=value ...]" >&2; exit 2; }
img=$1
shift
[ -f "$img" ] || { echo "$0: no such image: $img" >&2; exit 2; }
command -v qemu-system-riscv64 >/dev/null ||
	{ echo "$0: qemu-system-riscv64 missing (mk/deps.sh bare installs it)" >&2; exit 2; }
# No Sstc, as on the Duo's C906: the timer goes through OpenSBI.
# shellcheck disable=SC2086
timeout "${QEMU_TIMEOUT:-900}" qemu-system-riscv64 -M virt -cpu rv64,sstc=off -smp 1 \
	-m "${QEMU_MEM:-256M}" -bios default -display none -monitor none -serial stdio \
	-no-reboot -kernel "$img" -append "${WEFT_BOOTARGS:-} $*" ${QEMU_EXTRA:-} </dev/null | tr -d '\r'
exit "${PIPESTATUS[0]}"
