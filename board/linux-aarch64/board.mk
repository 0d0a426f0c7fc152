# SPDX-License-Identifier: MIT
# Linux on aarch64: static musl binaries, run here under qemu-aarch64.
ARCH := aarch64
SHIM := linux
DEFAULT_TOOLCHAIN := aarch64-linux-gnu
