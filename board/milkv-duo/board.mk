# SPDX-License-Identifier: MIT
# Milk-V Duo (CV1800B, C906, 64 MB): an S-mode payload that U-Boot on the
# stock SD card boots in place of Linux. Built and checked here, not run:
# every image also gets a raw .bin and a FIT .itb with board.dts in it
# (docs/boards/milkv-duo.md).
ARCH := riscv64
SHIM := bare
BOARD := milkv-duo
DEFAULT_TOOLCHAIN := riscv64-unknown-elf
BOARD_CONSOLE := ns16550
BOARD_DRIVERS := plic dwmac dwmac_selftest cv1800b_ephy
BOARD_DMA_CACHE := thead
RUN :=
IMAGES := yes
# The configurations stock cards' sdboot boots, `bootm ${uImage_addr}#NAME`,
# by image generation: v1 SDK images, early 2023 ones, and (inferred from the
# v2 SDK's board folder) v2 ones; the same kernel and fdt in each, the first
# the default (mk/fit.sh; docs/boards/milkv-duo.md).
FIT_CONFIG := config-cv1800b_milkv_duo_sd config-cv1800b_sophpi_duo_sd \
	config-cv1800b_milkv_duo_musl_riscv64_sd
