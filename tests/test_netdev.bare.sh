#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_netdev on bare metal: boot with a virtio-net device on QEMU's user
# network, and tell the suite it is there (WEFT_NETDEV_TEST=1).
# Usage: tests/test_netdev.bare.sh RUNNER IMAGE
set -u
runner=$1 img=$2
# shellcheck disable=SC2086 # RUNNER may be a command with its own words
QEMU_NETDEV=user exec $runner "$img" WEFT_NETDEV_TEST=1
