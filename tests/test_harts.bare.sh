#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_harts on bare metal boots 2 harts and lets weft start only one
# (WEFT_HARTS=1): the other stays stopped, for the suite to send into the
# image's entry as firmware that releases every hart would.
# Usage: tests/test_harts.bare.sh RUNNER IMAGE
set -u
runner=$1 img=$2
# shellcheck disable=SC2086 # RUNNER may be a command with its own words
QEMU_SMP=2 exec $runner "$img" WEFT_HARTS=1
