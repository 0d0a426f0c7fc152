#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Boot a weft image on QEMU's riscv64 virt machine (S-mode, under OpenSBI) and
# exit with the status the image ended with (the test finisher's code).
#
# Usage: qemu/run-qemu-virt.sh IMAGE.elf [NAME=value ...] [WORD ...]
#   The words go on the kernel command line; weft makes NAME=value ones the
#   environment (WEFT_WORKERS=2, WEFT_STACK_KB=128), the others main's
#   arguments.
# Environment: QEMU_MEM (default 256M), QEMU_SMP (harts, default 1), QEMU_TIMEOUT in seconds (default 900),
#   QEMU_EXTRA (more qemu-system-riscv64 options), WEFT_BOOTARGS (NAME=value
#   words put before the arguments), QEMU_SERIAL_IN (a file or fifo the
#   guest's console reads: what is written there arrives on its UART, as
#   tests/test_irq.bare.sh feeds it).
# Networking (off unless QEMU_NETDEV is set):
#   QEMU_NETDEV  a -netdev backend and its options, without id: the guest
#                gets one virtio-net device on it (-netdev $QEMU_NETDEV,id=n0
#                -device virtio-net-device,netdev=n0). E.g. `user` (QEMU's
#                slirp: the guest is 10.0.2.15, the gateway 10.0.2.2), or
#                `user,hostfwd=tcp:127.0.0.1:8080-:80` to reach the guest's
#                port 80 at the host's 8080.
#   QEMU_VIRTIO_MODERN=1  virtio-mmio version 2 (virtio 1.x) instead of
#                QEMU's default legacy version 1
#                (-global virtio-mmio.force-legacy=false).
# The console is this script's stdout, with CR LF turned into LF, a line
# at a time (a script watching it sees each line as it comes). Exit 124
# means the image did not finish in time.
set -u
[ $# -ge 1 ] || { echo "usage: $0 IMAGE.elf [NAME=value ...] [WORD ...]" >&2; exit 2; }
img=$1
shift
[ -f "$img" ] || { echo "$0: no such image: $img" >&2; exit 2; }
command -v qemu-system-riscv64 >/dev/null ||
	{ echo "$0: qemu-system-riscv64 missing (mk/deps.sh bare installs it)" >&2; exit 2; }
net=()
if [ -n "${QEMU_NETDEV:-}" ]; then
	# shellcheck disable=SC2054 # the commas are inside option values
	net=(-netdev "$QEMU_NETDEV,id=n0" -device virtio-net-device,netdev=n0)
	[ "${QEMU_VIRTIO_MODERN:-0}" = 1 ] && net+=(-global virtio-mmio.force-legacy=false)
fi
# A port forwarded by QEMU_NETDEV's hostfwd=tcp:ADDR:PORT-... that something
# already listens on: say so, instead of QEMU's one line about a rule.
fwd=${QEMU_NETDEV:-}
while [[ $fwd =~ hostfwd=tcp:([0-9.]*):([0-9]+)- ]]; do
	addr=${BASH_REMATCH[1]:-127.0.0.1} port=${BASH_REMATCH[2]}
	fwd=${fwd#*"${BASH_REMATCH[0]}"}
	# shellcheck disable=SC2016 # $0 and $1 are the inner shell's
	if timeout 2 bash -c 'exec 3<>"/dev/tcp/$0/$1"' "$addr" "$port" 2>/dev/null; then
		echo "$0: port $port on $addr is already in use (another make run?):" \
			"stop that, or choose another (make run HTTP_PORT=8081)" >&2
		exit 2
	fi
done
# With QEMU_SERIAL_IN, QEMU reads that. On a terminal, QEMU reads it: the console is the guest's, Ctrl-A x quits
# QEMU (Ctrl-A h lists the other escapes) and Ctrl-C stops it. Otherwise the
# guest reads nothing.
# (mon:stdio would pass Ctrl-C to the guest: the multiplexer, which holds
# the escapes, is asked for by name, with the terminal's signals on.)
if [ -n "${QEMU_SERIAL_IN:-}" ]; then
	console=(-serial stdio)
	exec 3<"$QEMU_SERIAL_IN" || exit 2
elif [ -t 0 ]; then
	# shellcheck disable=SC2054 # the commas are inside option values
	console=(-chardev stdio,id=con,mux=on,signal=on -serial chardev:con)
	exec 3<&0
else
	console=(-serial stdio)
	exec 3</dev/null
fi
# QEMU runs in this shell's process group (timeout --foreground), so a
# terminal's Ctrl-C reaches it; a signal to this script (make's SIGTERM, a
# hang-up) is passed on to timeout, which passes it to QEMU. QEMU_TIMEOUT=0
# is no limit.
# No Sstc, as on the Duo's C906: the timer goes through OpenSBI.
# shellcheck disable=SC2086
timeout --foreground "${QEMU_TIMEOUT:-900}" qemu-system-riscv64 -M virt -cpu rv64,sstc=off -smp "${QEMU_SMP:-1}" \
	-m "${QEMU_MEM:-256M}" -bios default -display none -monitor none "${console[@]}" \
	-no-reboot ${net[@]+"${net[@]}"} -kernel "$img" -append "${WEFT_BOOTARGS:-} $*" ${QEMU_EXTRA:-} \
	<&3 > >(stdbuf -oL tr -d '\r') &
qemu=$!
exec 3<&-
trap 'kill -TERM "$qemu" 2>/dev/null' INT TERM HUP
# wait returns early when a trapped signal arrives: wait again for the
# status QEMU (or timeout) ends with.
while :; do
	wait "$qemu"
	rc=$?
	kill -0 "$qemu" 2>/dev/null || break
done
# The console's last lines (tr ends when QEMU's output closes).
wait
exit "$rc"
