# SPDX-License-Identifier: MIT
# Linux on riscv64: static musl binaries, run here under qemu-riscv64 and on
# the Milk-V Duo's own Linux (buildroot, musl).
ARCH := riscv64
SHIM := linux
DEFAULT_TOOLCHAIN := riscv64-linux-gnu
