# SPDX-License-Identifier: MIT
# Debian's riscv64-unknown-elf-gcc with picolibc (picolibc-riscv64-unknown-elf),
# for the bare-metal boards: rv64gc, lp64d, code anywhere in RAM (medany).
# (CFLAGS_ARCH also goes on every link line.) gcc 12 emits no stack-clash
# probes on riscv64: the 64 KiB guard (ARCH_STACK_GUARD) stands in for them. CMocka for it is built from Debian's source package into $(WEFT_CACHE).
LIBC := picolibc
CROSS_ARCH := riscv64
CC := riscv64-unknown-elf-gcc
AR := riscv64-unknown-elf-ar
OBJCOPY := riscv64-unknown-elf-objcopy
READELF := riscv64-unknown-elf-readelf
CFLAGS_ARCH := --specs=picolibc.specs -march=rv64imafdc -mabi=lp64d -mcmodel=medany \
	-fstack-clash-protection -ffunction-sections -fdata-sections
LDFLAGS_ARCH := -nostartfiles \
	-Lboard/common -T board/$(BOARD)/link.ld -Wl,--gc-sections -Wl,--no-warn-rwx-segments
DEPS := bare
