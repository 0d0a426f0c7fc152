#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Boot a weft image on qemu-virt halted at its first instruction, with QEMU's
# gdbstub, and debug it with gdb-multiarch: the image's symbols, weft's gdb
# extension (info fibers, fiber N bt: loaded from the image's
# .debug_gdb_scripts section) and `target remote` already done. `make debug`
# runs it. QEMU runs in a session of its own (gdb's Ctrl-C interrupts the
# guest, not QEMU) and is stopped when gdb exits.
#
# Usage: qemu/debug-qemu-virt.sh IMAGE.elf [NAME=value ...] [-- GDB-ARGUMENT ...]
#   NAME=value words go on the kernel command line, as with run-qemu-virt.sh;
#   the words after -- are gdb-multiarch's (-batch -ex 'break main' ...).
# Environment: GDB_PORT (default 1234) for the gdbstub, on 127.0.0.1;
#   QEMU_CONSOLE, a file for the guest's console (default: this terminal,
#   between gdb's lines); run-qemu-virt.sh's own (QEMU_MEM, QEMU_NETDEV ...).
set -u
[ $# -ge 1 ] || { echo "usage: $0 IMAGE.elf [NAME=value ...] [-- GDB-ARGUMENT ...]" >&2; exit 2; }
img=$1
shift
[ -f "$img" ] || { echo "$0: no such image: $img" >&2; exit 2; }
command -v gdb-multiarch >/dev/null ||
	{ echo "$0: gdb-multiarch missing (mk/deps.sh bare installs it)" >&2; exit 2; }
args=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do
	args+=("$1")
	shift
done
[ $# -gt 0 ] && shift
port=${GDB_PORT:-1234}
# shellcheck disable=SC2016 # $0 is the inner shell's
if timeout 2 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$0"' "$port" 2>/dev/null; then
	echo "$0: port $port on 127.0.0.1 is already in use (another make debug?):" \
		"stop that, or choose another (GDB_PORT=1235)" >&2
	exit 2
fi
dir=$(cd "$(dirname "$0")/.." && pwd)
QEMU_TIMEOUT=0 QEMU_EXTRA="${QEMU_EXTRA:-} -gdb tcp:127.0.0.1:$port -S" \
	setsid "$dir/qemu/run-qemu-virt.sh" "$img" ${args[@]+"${args[@]}"} \
	</dev/null >"${QEMU_CONSOLE:-/dev/stdout}" 2>&1 &
qemu=$!
# The run script passes a SIGTERM on to QEMU.
trap 'kill -TERM "$qemu" 2>/dev/null; wait "$qemu" 2>/dev/null' EXIT
trap 'exit 143' TERM HUP
# gdb retries the connection until QEMU listens (tcp auto-retry, 15 s).
# (No INT trap: a Ctrl-C is gdb's, and this script waits on.)
gdb-multiarch -q -iex "add-auto-load-safe-path $(cd "$(dirname "$img")" && pwd)" -ex "target remote 127.0.0.1:$port" "$@" "$img"
