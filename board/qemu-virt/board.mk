# SPDX-License-Identifier: MIT
# QEMU's riscv64 virt machine: an S-mode payload for OpenSBI
# (qemu-system-riscv64 -M virt -bios default), picolibc, the bare kernel-shim.
ARCH := riscv64
SHIM := bare
BOARD := qemu-virt
DEFAULT_TOOLCHAIN := riscv64-unknown-elf
RUN := qemu/run-qemu-virt.sh
BOARD_CONSOLE := ns16550
BOARD_DRIVERS := plic virtio_net
# Images for U-Boot too (.bin, .itb with board.dts, .checked), in the Duo's
# configuration names, so that tests/boot/uboot.sh boots them through U-Boot
# with the Duo's own bootm commands.
IMAGES := yes
FIT_CONFIG := config-cv1800b_milkv_duo_sd config-cv1800b_sophpi_duo_sd \
	config-cv1800b_milkv_duo_musl_riscv64_sd
