#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_demand on bare metal boots with 64 MiB of RAM, the Milk-V Duo's, so
# that 5,000 fibers alive at once must fit there.
# Usage: tests/test_demand.bare.sh RUNNER IMAGE
set -u
runner=$1 img=$2
# shellcheck disable=SC2086 # RUNNER may be a command with its own words
QEMU_MEM=64M exec $runner "$img"
