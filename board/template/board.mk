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
# The console the shim drives (ns16550: a 16550-compatible UART at board.h's
# BOARD_UART_*; leave it out to write the console hooks in board.c), and the
# drivers the shim uses, from drivers/: the PLIC always; virtio_net where
# board.h names virtio-mmio transports.
BOARD_CONSOLE := ns16550
BOARD_DRIVERS := plic
# The command make check puts before each test image (IMAGE [NAME=value...]:
# boot it, print its console, exit with its status), e.g. qemu/run-<t>.sh.
# Empty: the images are built and checked, not run.
RUN :=
# For a board booted by U-Boot: per example a raw .bin and a FIT .itb with
# board.dts in configuration FIT_CONFIG, checked against board.h.
IMAGES := yes
FIT_CONFIG := config-1
