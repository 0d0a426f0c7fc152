#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_irq on bare metal: boot with a virtio-net device on QEMU's user
# network (the suite asks its gateway's ARP address and sends frames) and
# the console's input read from a fifo; when the suite says it waits for
# console input, write a line there (within 60 s), which the UART's receive
# interrupt hands to the waiting fiber. The WEFT_IRQ_* words tell the suite
# both are there.
# Usage: tests/test_irq.bare.sh RUNNER IMAGE
set -u
runner=$1 img=$2
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
mkfifo "$dir/in" || exit 1
# Held open read-write: QEMU's open for reading does not wait for a writer,
# and QEMU never sees the end of its input.
exec 4<>"$dir/in"
: >"$dir/out"
(
	for ((i = 0; i < 600; i++)); do
		if grep -q 'test_irq: waiting for console input' "$dir/out"; then
			printf 'weft-irq-input\n' >&4
			exit 0
		fi
		sleep 0.1
	done
	echo "test_irq.bare.sh: the suite never asked for input" >&2
) &
feeder=$!
# shellcheck disable=SC2086 # RUNNER may be a command with its own words
QEMU_NETDEV=user QEMU_SERIAL_IN=$dir/in $runner "$img" WEFT_IRQ_INPUT=1 WEFT_IRQ_NET=1 |
	tee "$dir/out"
rc=${PIPESTATUS[0]}
kill "$feeder" 2>/dev/null
wait "$feeder" 2>/dev/null
exit "$rc"
