# SPDX-License-Identifier: MIT
# A bare-metal riscv64 board to copy: an S-mode payload that OpenSBI (or
# U-Boot above it) enters, picolibc, the bare kernel-shim. Copy this folder
# to board/<target>/, set BOARD to that name and fill in the four files
# (docs/porting.md). As it stands it carries qemu-virt's numbers, so that
# `make TARGET=template` builds and checks it (make test does).
ARCH := riscv64
SHIM := bare
BOARD := template
DEFAULT_TOOLCHAIN := riscv64-unknown-elf
# The drivers board.c and the shim use, from kernel-shim/bare/drivers/: the
# PLIC always; ns16550 for a 16550-compatible console; virtio_net where
# board.h names virtio-mmio transports.
BOARD_DRIVERS := ns16550 plic
# The command make check puts before each test image (IMAGE [NAME=value...]:
# boot it, print its console, exit with its status), e.g. qemu/run-<t>.sh.
# Empty: the images are built and checked, not run.
RUN :=
# For a board booted by U-Boot: per example a raw .bin and a FIT .itb with
# board.dts in configuration FIT_CONFIG, checked against board.h.
IMAGES := yes
FIT_CONFIG := config-1
