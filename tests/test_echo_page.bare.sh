#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_echo_page on bare metal: 64 MiB of RAM, as mk/footprint.sh's echo,
# and a virtio-net device on QEMU's user network, so that the reactor has a
# source to poll (lwIP's receive fiber waits on it) as it does there; the
# suite's connections use lwIP's loopback. The memory line every 100 ms
# (WEFT_MEMSTAT_MS), as there too: it is printed from the poll.
# Usage: tests/test_echo_page.bare.sh RUNNER IMAGE
set -u
runner=$1 img=$2
# shellcheck disable=SC2086 # RUNNER may be a command with its own words
QEMU_MEM=64M QEMU_NETDEV=user exec $runner "$img" WEFT_ECHO_PAGE_DEV=1 WEFT_MEMSTAT_MS=100
